"""Flows behind the scheduled deployments in ``prefect.yaml``.

``nightly_studio_ingest`` picks up new studio sessions (ingest + process; unchanged sessions
are reused from the work directory's cache), ``weekly_release`` synthesizes PH dialogues and
publishes everything rendered so far as a release.
"""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger

from duetflow.config import RunConfig
from duetflow.flows import stages
from duetflow.flows.build import BuildSummary, build_dataset
from duetflow.flows.runner import build_task_runner, dask_cluster, resolve_config
from duetflow.pipeline.cache import StepOutcome
from duetflow.pipeline.stages.publish import ReleaseSummary


@flow(name="nightly-studio-ingest")
def nightly_studio_ingest(
    config: str | None = None,
    corpora: list[str] | None = None,
    workdir: str | None = None,
    overrides: dict[str, Any] | None = None,
) -> dict[str, int]:
    """Ingest and process the studio roots (``corpora``, default: every corpus named studio)."""
    cfg = resolve_config(config, workdir=workdir, overrides=overrides)
    logger = get_run_logger()
    names = corpora or [c.name for c in cfg.corpora if c.name == "studio"]
    if not names:
        logger.warning("no studio corpus configured: nothing to ingest")
        return {}
    with dask_cluster(cfg.runner) as address:
        runner = build_task_runner(cfg.runner, address)
        stages.ingest.with_options(task_runner=runner)(config=cfg, corpora=names)
        merged = stages.process.with_options(task_runner=runner)(config=cfg, corpora=names).output
    for m in merged:  # the flow's own record of what the night brought (not only subflow logs)
        logger.info(counts_line("nightly-studio-ingest", m))
    return {m.label: m.kept for m in merged}


def counts_line(flow: str, outcome: StepOutcome) -> str:
    """``flow: label found N, kept K, rejected R (reason=n, ...)`` for a run's own log."""
    reasons = ", ".join(f"{k}={v}" for k, v in sorted(outcome.by_reason.items()))
    return (
        f"{flow}: {outcome.label} found {outcome.found}, kept {outcome.kept}, "
        f"rejected {outcome.rejected}" + (f" ({reasons})" if reasons else "")
    )


@flow(name="weekly-release")
def weekly_release(
    config: str | None = None,
    store: str | None = None,
    release_id: str | None = None,
    overrides: dict[str, Any] | None = None,
) -> ReleaseSummary:
    """Synthesize PH dialogues from the rendered voices, then publish a release."""
    cfg = resolve_config(config, store=store, overrides=overrides)
    logger = get_run_logger()
    with dask_cluster(cfg.runner) as address:
        runner = build_task_runner(cfg.runner, address)
        synthesized = stages.synthesize.with_options(task_runner=runner)(config=cfg).output
    for ph in synthesized:
        logger.info(counts_line("weekly-release", ph))
    release: ReleaseSummary = stages.publish(config=cfg, release_id=release_id).output[0]
    counts = release.info.get("counts", {})
    logger.info(
        "weekly-release: published %s to %s: %s dialogues (train %s, val %s, test %s), "
        "%s rejections",
        release.release_id, release.store, counts.get("dialogues", "?"), counts.get("train", "?"),
        counts.get("val", "?"), counts.get("test", "?"), counts.get("rejections", "?"),
    )  # fmt: skip
    return release


__all__ = ["BuildSummary", "RunConfig", "build_dataset", "nightly_studio_ingest", "weekly_release"]
