"""The stage flows: ingest, process, synthesize, publish, each on its own.

For deployments and the UI: each takes a config path (or a :class:`~duetflow.config.RunConfig`)
plus a few explicit overrides, and runs one stage function of :mod:`duetflow.pipeline` (the
same ones :func:`~duetflow.pipeline.run.run_pipeline` runs) with the Prefect executor on this
flow's task runner. What a stage needs from earlier stages is found in the work directory.
"""

from __future__ import annotations

from typing import Any

from prefect import flow

from duetflow.config import RunConfig
from duetflow.flows.executor import PrefectExecutor
from duetflow.flows.runner import default_task_runner, resolve_config
from duetflow.pipeline import run, steps
from duetflow.pipeline.cache import PH_LABEL, StepOutcome
from duetflow.pipeline.publishing import ReleaseSummary


@flow(name="ingest", task_runner=default_task_runner(), log_prints=False)
def ingest(
    config: str | RunConfig | None = None,
    corpora: list[str] | None = None,
    workdir: str | None = None,
    overrides: dict[str, Any] | None = None,
) -> list[StepOutcome]:
    """Ingest the configured corpora (or only ``corpora``) into intake work directories."""
    cfg = resolve_config(config, workdir=workdir, overrides=overrides)
    return run.ingest_stage(cfg, PrefectExecutor(), corpora)


@flow(name="process", task_runner=default_task_runner())
def process(
    config: str | RunConfig | None = None,
    corpora: list[str] | None = None,
    intakes: list[StepOutcome] | None = None,
    workdir: str | None = None,
    overrides: dict[str, Any] | None = None,
) -> tuple[list[StepOutcome], list[StepOutcome]]:
    """Window, filter and render every corpus shard by shard; merge into ``rendered/<corpus>``.

    Returns (shard outcomes, merged outcome per corpus). Without ``intakes`` the finished
    ingests of the current files and config are looked up in the work directory.
    """
    cfg = resolve_config(config, workdir=workdir, overrides=overrides)
    found = intakes if intakes is not None else run.find_intakes(cfg, corpora)
    return run.process_stage(cfg, PrefectExecutor(), found, corpora)


def _matched_dirs(cfg: RunConfig, ex: PrefectExecutor, with_ph: bool) -> list[str]:
    """The corpora's rendered work directories after HH ↔ HM matching (+ PH when asked)."""
    found = run.rendered_outcomes(cfg, with_ph=with_ph)
    corpora = [o for o in found if o.label != PH_LABEL]
    ph = [o for o in found if o.label == PH_LABEL]
    return [o.path for o in [*run.match_stage(cfg, ex, corpora), *ph]]


@flow(name="synthesize", task_runner=default_task_runner())
def synthesize(
    config: str | RunConfig | None = None,
    voices: list[str] | None = None,
    workdir: str | None = None,
    overrides: dict[str, Any] | None = None,
) -> tuple[list[StepOutcome], StepOutcome | None]:
    """Synthesize the configured scripts (PH) with voices from rendered work directories.

    When an LLM is configured (``llm``, ``scripts``), scripts are first generated and the kept
    HH transcripts rewritten (resumable: only missing scripts are requested).

    Synthesis tasks carry the ``duetflow-tts`` tag and at most ``synth.concurrency`` of them run
    at once in this flow; a tag concurrency limit on the server bounds them across flows.
    """
    cfg = resolve_config(config, workdir=workdir, overrides=overrides)
    ex = PrefectExecutor()
    if not steps.synth_wanted(cfg):
        return run.synth_stage(cfg, ex, [])
    dirs = voices if voices is not None else _matched_dirs(cfg, ex, with_ph=False)
    return run.synth_stage(cfg, ex, dirs)


@flow(name="publish", task_runner=default_task_runner())
def publish(
    config: str | RunConfig | None = None,
    workdirs: list[str] | None = None,
    store: str | None = None,
    release_id: str | None = None,
    overrides: dict[str, Any] | None = None,
) -> ReleaseSummary:
    """Validate, split and publish rendered work directories as one release (with its report).

    Runs in the flow's process: store credentials live here, not on Dask workers.
    """
    cfg = resolve_config(config, store=store, overrides=overrides)
    ex = PrefectExecutor()
    dirs = workdirs if workdirs is not None else _matched_dirs(cfg, ex, with_ph=True)
    return run.publish_stage(cfg, ex, dirs, release_id)
