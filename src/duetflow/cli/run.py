"""``duetflow run -c CONFIG``: run the configured pipeline (the ``build_dataset`` flow).

Prefect is imported only when a command runs, after the environment defaults below are set,
so ``duetflow --help`` stays fast and the settings take effect.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from duetflow.cli.options import (
    config_option,
    invocation,
    progress_enabled,
    progress_option,
    release_option,
    seed_option,
    seed_override,
    store_option,
    workdir_option,
)
from duetflow.cli.progress import progress_bars
from duetflow.errors import DuetflowError
from duetflow.flows.home import PREFECT_HOME_ENV, prefect_home
from duetflow.flows.run_host import hand_off, refresh_prefect_settings

__all__ = ["PREFECT_HOME_ENV", "command", "prefect_api", "prefect_env", "prefect_home"]

if TYPE_CHECKING:
    from duetflow.config import RunConfig


def prefect_env(home: Path | None = None) -> str:
    """Where a command-line run's flows are recorded; anything already set in the environment
    wins. Returns ``"server"`` (a given API), or the Prefect home the temporary API will use.

    * ``PREFECT_API_URL`` set: that server records the run, nothing is started (no home is
      chosen: the server has its own);
    * else the temporary local API Prefect starts for the run keeps its database in a home that
      outlives the run, so it is created and migrated once, not every run: ``PREFECT_HOME`` if
      set, ``home`` (the demo's folder), ``$DUETFLOW_PREFECT_HOME``, Prefect's own ``~/.prefect``
      when the user has Prefect profiles there (an API configured in a profile is then used),
      else ``prefect`` in the user cache folder (:func:`duetflow.user_cache.user_cache_dir`:
      ``$XDG_CACHE_HOME/duetflow/prefect``, ``~/.cache/...``);
    * unless a server started there by ``duetflow server start`` answers: then that server
      records the run (``PREFECT_API_URL`` is set to it) and no temporary API is started.

    The temporary API needs more than Prefect's 20 s to migrate a fresh database on a small
    machine, and must not phone home. Measured fixed cost per run: docs/performance.md,
    *Prefect start-up*.
    """
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    if os.environ.get("PREFECT_API_URL"):
        return "server"
    chosen = prefect_home(home)
    chosen.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PREFECT_HOME", str(chosen))
    from duetflow.flows.local_server import running

    server = running(chosen)
    if server is not None:  # `duetflow server start` left one running: no temporary API
        os.environ["PREFECT_API_URL"] = server.url
        refresh_prefect_settings()
        return "server"
    refresh_prefect_settings()
    return os.environ["PREFECT_HOME"]


@contextmanager
def prefect_api(home: Path | None = None) -> Iterator[str]:
    """:func:`prefect_env`, and when no server is given or answers, the run's own temporary
    API for the duration of the block (``PREFECT_API_URL`` points at it).

    That API is a child process that dies with this one, SIGKILL included
    (:mod:`duetflow.flows.run_api`); Prefect's own temporary API would outlive a killed run.
    Yields what :func:`prefect_env` returned.
    """
    quiet_known_errors()
    where = prefect_env(home)
    if where == "server":
        yield where
        return
    from duetflow.flows.run_api import temporary_api

    with temporary_api() as url:
        os.environ["PREFECT_API_URL"] = url
        refresh_prefect_settings()
        try:
            yield where
        finally:
            _drain_prefect()  # queued run logs and events reach the API before it stops
            os.environ.pop("PREFECT_API_URL", None)
            refresh_prefect_settings()


#: Prefect's loggers that report a failed task or flow run with the exception's traceback
RUN_LOGGERS = ("prefect.task_runs", "prefect.flow_runs")


class _NoTracebackForKnownErrors(logging.Filter):
    """duetflow's own errors name their file and cause in one line: Prefect's run loggers show
    that line without the traceback (any other exception, a bug, keeps its traceback)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, DuetflowError):
            record.exc_info = None
            record.exc_text = None
        return True


def quiet_known_errors() -> None:
    """Install :class:`_NoTracebackForKnownErrors` on Prefect's run loggers (once)."""
    for name in RUN_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _NoTracebackForKnownErrors) for f in logger.filters):
            logger.addFilter(_NoTracebackForKnownErrors())


def _drain_prefect(timeout: float = 5.0) -> None:
    import sys

    if "prefect" not in sys.modules:
        return
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    APILogWorker.drain_all(timeout=timeout)
    EventsWorker.drain_all(timeout=timeout)


def echo_summary(summary: Any) -> None:
    """The closing lines of a run: release id, counts per corpus, cache reuse, report."""
    click.echo(f"release: {summary.release_id}  store: {summary.store}")
    kept: Mapping[str, int] = summary.kept
    released: Mapping[str, int] = getattr(summary, "released", {}) or {}
    for label in kept:
        line = f"  {label:<16} kept {kept[label]:>5}  rejected {summary.rejected[label]:>5}"
        if label in released and released[label] != kept[label]:
            line += f"  released {released[label]:>5} (HH matched to the HM topics)"
        click.echo(line)
    steps = ", ".join(
        f"{s} {summary.computed[s]} computed / {summary.reused[s]} reused" for s in summary.computed
    )
    click.echo(f"steps: {steps}")
    click.echo(f"work directory: {summary.workdir}")
    if summary.report:
        click.echo(f"report: {summary.report}")
    click.echo(f"wall time: {summary.seconds:.1f} s")


@click.command("run")
@config_option("Run config YAML.", required=True)
@workdir_option("Override the config's work directory.", required=False)
@store_option("Override release.store (path, file:// or s3://).")
@click.option(
    "--runner",
    type=click.Choice(["threads", "dask"]),
    default=None,
    help="Task runner (dask: runner.dask_address or a local cluster; needs a Prefect server).",
)
@release_option("Publish under this id (default: content hash).", old=("--release-id",))
@seed_option()
@click.option("--no-synth", is_flag=True, help="Skip PH synthesis.")
@click.option("--no-publish", is_flag=True, help="Stop after rendering; publish nothing.")
@progress_option()
def command(
    config_path: Path,
    workdir: Path | None,
    store: str | None,
    runner: str | None,
    release: str | None,
    seed: int | None,
    no_synth: bool,
    no_publish: bool,
    progress: bool | None,
) -> None:
    """Run the pipeline of CONFIG end to end as the Prefect flow build_dataset.

    The config is validated first (keys, values, corpora, roots, licences), before Prefect
    starts. Finished shards are reused from the work directory, so re-running after a failure
    or a config change computes only what is missing or affected.

    With a server kept by ``duetflow server start`` (and no ``PREFECT_API_URL``), the run is
    forked from the run host next to it, which has Prefect and the pipeline imported already
    (:mod:`duetflow.flows.run_host`; the same command, files and exit code).
    """
    called = invocation()
    if called is not None and not os.environ.get("PREFECT_API_URL"):
        code = hand_off("run", called.argv, prefect_home())
        if code is not None:
            raise SystemExit(code)
    overrides = seed_override(seed)
    cfg = check_runnable(config_path, workdir, store, runner, overrides, publish=not no_publish)
    from duetflow.pipeline.workdir_lock import workdir_lock

    # taken before the API starts: a second run on one work directory fails at once
    with workdir_lock(cfg.workdir), prefect_api():
        from duetflow.flows import build_dataset

        with progress_bars(progress_enabled(progress)):
            summary = build_dataset(
                config=str(config_path.resolve()),
                workdir=str(workdir) if workdir else None,
                store=store,
                runner=runner,
                release_id=release,
                synthesize=not no_synth,
                publish=not no_publish,
                overrides=overrides or None,
            )
    echo_summary(summary)


def check_runnable(
    config_path: Path,
    workdir: Path | None,
    store: str | None,
    runner: str | None,
    overrides: Mapping[str, Any],
    *,
    publish: bool = False,
) -> RunConfig:
    """Load and check the run's config without Prefect: a typo costs a second, not a flow run.
    With ``publish``, an S3 store's bucket must exist.

    Returns the config; raises click.UsageError (exit 2) naming the problem.
    """
    from duetflow.config import load_config
    from duetflow.errors import ConfigError
    from duetflow.pipeline.driver import preflight

    extra: dict[str, Any] = dict(overrides)
    if workdir:
        extra["workdir"] = str(workdir)
    if store:
        extra["release"] = {"store": store}
    if runner:
        extra["runner"] = {"kind": runner}
    try:
        config = load_config(config_path, overrides=extra or None)
        preflight(config)
    except ConfigError as e:
        raise click.UsageError(str(e)) from None
    if publish and config.release.store.startswith("s3://"):
        # a bucket that does not exist is named now, not after the run's work
        from duetflow.errors import StorageError
        from duetflow.storage import open_store

        try:
            open_store(config.release.store, config.release).check_ready()
        except StorageError as e:
            raise click.UsageError(f"release.store: {e}") from None
    return config
