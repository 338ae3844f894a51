"""Task runners from configuration: a bounded thread pool by default, Dask for a cluster.

Prefect fixes a flow's task runner when the flow is decorated, so the parent flows
(``build_dataset``, the deployments) build the runner from the run's config and start each stage
as a subflow ``with_options(task_runner=...)``. One local Dask cluster is shared by all stages
of a run instead of one per subflow.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from prefect.futures import PrefectFuture
from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

from duetflow.config import RunConfig, RunnerConfig, build_config, load_config
from duetflow.config.loading import deep_merge
from duetflow.errors import ConfigError

log = logging.getLogger(__name__)

DEFAULT_MAX_WORKERS = 4


def default_task_runner() -> TaskRunner[PrefectFuture[Any]]:
    """The runner of a stage flow started on its own: bounded (Prefect's default is not)."""
    raw = os.environ.get("DUETFLOW__RUNNER__MAX_WORKERS", "")
    workers = int(raw) if raw.isdigit() else DEFAULT_MAX_WORKERS
    return cast("TaskRunner[PrefectFuture[Any]]", ThreadPoolTaskRunner(max_workers=workers))


def build_task_runner(runner: RunnerConfig, dask_address: str | None = None) -> TaskRunner[Any]:
    """``ThreadPoolTaskRunner(max_workers)`` or a ``DaskTaskRunner`` on a scheduler address."""
    if runner.kind == "threads":
        return ThreadPoolTaskRunner(max_workers=runner.max_workers)
    address = dask_address or runner.dask_address
    if not address:
        raise ConfigError(
            "runner.kind=dask needs a scheduler address (start one with dask_cluster)"
        )
    from prefect_dask.task_runners import DaskTaskRunner

    return DaskTaskRunner(address=address)


def _api_url() -> str | None:
    from prefect.settings import PREFECT_API_URL

    value = PREFECT_API_URL.value()
    return str(value) if value else None


@contextmanager
def dask_cluster(runner: RunnerConfig) -> Iterator[str | None]:
    """Yield the scheduler address of the run's Dask cluster (None for threads).

    With ``runner.dask_address`` the existing scheduler is used as is; otherwise a local cluster
    of ``runner.dask_workers`` worker processes lives for the duration of the block. Dask workers
    report task runs to the Prefect API themselves, so a real server is required: Prefect's
    temporary in-process API cannot be reached from another process.
    """
    if runner.kind != "dask":
        yield None
        return
    url = _api_url()
    if not url:
        raise ConfigError(
            "runner.kind=dask needs a Prefect API server that Dask workers can reach: start "
            "`prefect server start` and set PREFECT_API_URL (see docs/scaling.md)"
        )
    if runner.dask_address:
        yield runner.dask_address
        return
    from distributed import LocalCluster

    threads = max(1, runner.max_workers // runner.dask_workers)
    env = {"PREFECT_API_URL": url, "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    with LocalCluster(  # type: ignore[no-untyped-call]
        n_workers=runner.dask_workers,
        threads_per_worker=threads,
        processes=True,
        dashboard_address=None,
        env=env,
    ) as cluster:
        log.info(
            "local Dask cluster %s: %d workers", cluster.scheduler_address, runner.dask_workers
        )
        yield str(cluster.scheduler_address)


def resolve_config(
    config: str | Path | RunConfig | None,
    *,
    workdir: str | None = None,
    store: str | None = None,
    runner: str | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> RunConfig:
    """The run's config from a YAML path (or a model) plus the flow's explicit overrides.

    The explicit parameters are what a deployment or the UI changes most: where to work, where
    to publish, which runner. Anything else goes through ``overrides`` (a nested mapping).
    """
    extra: dict[str, Any] = deep_merge({}, overrides or {})
    if workdir:
        extra["workdir"] = workdir
    if store:
        extra = deep_merge(extra, {"release": {"store": store}})
    if runner:
        extra = deep_merge(extra, {"runner": {"kind": runner}})
    if isinstance(config, RunConfig):
        if not extra:
            return config
        return build_config(deep_merge(config.model_dump(mode="json"), extra), environ={})
    return load_config(config, overrides=extra or None)
