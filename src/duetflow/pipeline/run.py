"""The whole configured pipeline as plain Python: the stages, run on an executor.

The one definition of a run: :func:`run_pipeline` runs the stage functions (``ingest_stage``,
``process_stage``, ``match_stage``, ``synth_stage``, ``publish_stage``, in the order of
:data:`duetflow.pipeline.stages.STAGES`) on an executor (:mod:`duetflow.pipeline.executors`):
in this process by default, or as Prefect tasks and subflows
(``duetflow.flows.executor.PrefectExecutor``, what ``build_dataset`` passes). Both give
byte-identical work directories and releases, which is what makes the Prefect overhead
measurable (``bench/flows.py``) and the flows thin.

A stage maps its step functions (:mod:`duetflow.pipeline.steps`,
:mod:`duetflow.pipeline.publishing`) over its shards and merges them
(:mod:`duetflow.pipeline.merge`); every step is cached by key (:mod:`duetflow.pipeline.cache`)::

    <workdir>/cache/<stage>/<key>/     one finished step                     + result.json
    <workdir>/rendered/<label>/        merged work directory per corpus (audio hard-linked)
    <workdir>/matched/<label>/         the same without HH windows left out by HH ↔ HM matching
    <workdir>/scripts/{generated,rewritten}/   LLM scripts (one file each; resumable)
    <workdir>/rendered/ph/             merged PH work directory
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duetflow.config import RunConfig
from duetflow.errors import ConfigError
from duetflow.pipeline import publishing, steps
from duetflow.pipeline.cache import PH_LABEL, StepOutcome, cache_dir, load_outcome
from duetflow.pipeline.executors import Batch, Executor, PlainExecutor
from duetflow.pipeline.merge import merge_process, merge_synth, rendered_dir
from duetflow.pipeline.publishing import ReleaseSummary
from duetflow.pipeline.steps import corpus_jobs, ingest_key, synth_wanted
from duetflow.pipeline.workdir_lock import locks_workdir

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PipelineResult:
    """Everything a run did, per stage; ``computed``/``reused`` count steps."""

    steps: tuple[StepOutcome, ...]
    merged: tuple[StepOutcome, ...]  # what was published: corpora after matching, then PH
    release: ReleaseSummary | None
    processed: tuple[StepOutcome, ...] = ()  # each corpus as processed, before matching

    def computed(self, stage: str) -> int:
        return sum(1 for s in self.steps if s.stage == stage and not s.reused)

    def reused(self, stage: str) -> int:
        return sum(1 for s in self.steps if s.stage == stage and s.reused)


# --- the stages, run on an executor -----------------------------------------------------------


def _found(outcome: StepOutcome) -> int:
    return outcome.found


@locks_workdir
def ingest_stage(
    config: RunConfig, ex: Executor, corpora: Sequence[str] | None = None
) -> list[StepOutcome]:
    """Ingest every configured corpus (or only ``corpora``): one step per corpus."""
    jobs = corpus_jobs(config, corpora)
    done = ex.map(steps.run_ingest, jobs, config, batch=Batch("ingest", total=len(jobs)))
    for r in done:
        log.info(
            "ingest %s: %d found, %d kept, %d rejected (%s)", r.label, r.found, r.kept,
            r.rejected, "reused" if r.reused else "computed",
        )  # fmt: skip
    return done


def find_intakes(config: RunConfig, corpora: Sequence[str] | None = None) -> list[StepOutcome]:
    """The finished ingests of the current corpus files and config (ConfigError if missing)."""
    found = []
    for job in corpus_jobs(config, corpora):
        done = load_outcome(cache_dir(config, "ingest", ingest_key(job, config)))
        if done is None:
            raise ConfigError(
                f"corpus {job.label!r} has no finished ingest for its current files and config "
                f"in {config.workdir}: run the ingest stage first"
            )
        found.append(done)
    return found


@locks_workdir
def process_stage(
    config: RunConfig,
    ex: Executor,
    intakes: Sequence[StepOutcome],
    corpora: Sequence[str] | None = None,
) -> tuple[list[StepOutcome], list[StepOutcome]]:
    """Window, filter and render every corpus shard by shard; merge into ``rendered/<corpus>``.

    Returns (shard outcomes, merged outcome per corpus).
    """
    by_label = {i.label: i for i in intakes}
    shards: list[StepOutcome] = []
    merged: list[StepOutcome] = []
    for job in corpus_jobs(config, corpora):
        intake = by_label[job.label]
        done = ex.map(
            steps.run_process_shard,
            steps.plan_process_shards(job.label, intake.path, config),
            config,
            batch=Batch("process", job.label, intake.kept, window=process_window(config)),
            size=_found,
        )
        shards.extend(done)
        m = merge_process(job, intake, done, config)
        merged.append(m)
        log.info(
            "process %s: %d shards (%d reused), %d kept, %d rejected -> %s", job.label, len(done),
            sum(s.reused for s in done), m.kept, m.rejected, m.path,
        )  # fmt: skip
    return shards, merged


def process_window(config: RunConfig) -> int:
    """Shards in flight at once: two per worker, so memory follows the shard size."""
    r = config.runner
    workers = r.max_workers if r.kind == "threads" else r.dask_workers * max(1, r.max_workers)
    return 2 * workers


@locks_workdir
def match_stage(
    config: RunConfig, ex: Executor, merged: Sequence[StepOutcome]
) -> list[StepOutcome]:
    """HH ↔ HM matching over the rendered work directories (one step)."""
    return ex.call(steps.run_match, list(merged), config)


def rendered_outcomes(config: RunConfig, *, with_ph: bool) -> list[StepOutcome]:
    """The corpora's merged work directories found in the work directory (+ PH when asked)."""
    found = [
        o
        for j in corpus_jobs(config)
        if (o := load_outcome(rendered_dir(config, j.label))) is not None
    ]
    ph = load_outcome(rendered_dir(config, PH_LABEL)) if with_ph else None
    return found + ([ph] if ph is not None else [])


@locks_workdir
def synth_stage(
    config: RunConfig, ex: Executor, voices: Sequence[str]
) -> tuple[list[StepOutcome], StepOutcome | None]:
    """LLM scripts (when configured), then PH synthesis shard by shard, merged into ``ph``.

    ``voices``: the (matched) rendered work directories that lend voices and HH transcripts.
    Returns (shard outcomes, the merged PH outcome or None when synthesis is off).
    """
    if not synth_wanted(config):
        log.info("synthesis disabled or no scripts configured: nothing to do")
        return [], None
    rejected: list[Any] = []
    llm_dirs: list[Path] = []
    if steps.scripts_wanted(config):
        llm_dirs, rejected = ex.call(steps.run_scripts, config, list(voices))
        log.info("LLM scripts in %s (%d rejected)", [str(d) for d in llm_dirs], len(rejected))
    pool = steps.build_voices(config, voices)
    log.info("voice pool: %d speakers from %d work directories", len(pool.voices), len(voices))
    done = ex.map(
        steps.run_synth_shard,
        steps.plan_synth_shards(config, voices, pool, rejected, llm_dirs),
        pool,
        config,
        batch=Batch("synth", PH_LABEL, window=config.synth.concurrency),
        size=_found,
    )
    merged = merge_synth(done, rejected, config)
    log.info(
        "synthesize: %d shards (%d reused), %d kept, %d rejected -> %s", len(done),
        sum(s.reused for s in done), merged.kept, merged.rejected, merged.path,
    )  # fmt: skip
    return done, merged


@locks_workdir
def publish_stage(
    config: RunConfig, ex: Executor, workdirs: Sequence[str], release_id: str | None = None
) -> ReleaseSummary:
    """Validate, split, draw the report from the staged release and publish (one step)."""
    if not workdirs:
        raise ConfigError(f"nothing to publish: no rendered work directories in {config.workdir}")
    summary = ex.call(publishing.run_publish, list(workdirs), config, release_id)
    if summary.report is not None:
        state = "reused" if summary.report.reused else "built"
        log.info("report %s: %s", state, summary.report.path)
    log.info("published release %s to %s", summary.release_id, summary.store)
    return summary


# --- the whole run ------------------------------------------------------------------------------


@locks_workdir
def run_pipeline(
    config: RunConfig,
    *,
    executor: Executor | None = None,
    corpora: Sequence[str] | None = None,
    synthesize: bool = True,
    publish: bool = True,
    release_id: str | None = None,
) -> PipelineResult:
    """Run the configured pipeline: ingest → process → match → (scripts →) synth → publish.

    The one definition of a run. ``executor`` decides where steps run: in this process
    (default, :class:`~duetflow.pipeline.executors.PlainExecutor`) or as Prefect tasks
    (``duetflow.flows.executor.PrefectExecutor``, what ``build_dataset`` passes); both give
    byte-identical work directories and releases.
    """
    ex: Executor = executor or PlainExecutor()
    outcomes: list[StepOutcome] = []
    intakes = ex.stage("ingest", lambda: ingest_stage(config, ex, corpora))
    outcomes.extend(intakes)
    shard_steps, corpus_merged = ex.stage(
        "process", lambda: process_stage(config, ex, intakes, corpora)
    )
    outcomes.extend(shard_steps)
    merged = match_stage(config, ex, corpus_merged)
    if synthesize and synth_wanted(config):
        voices = steps.voice_dirs(config, merged)
        synth_steps, ph = ex.stage("synthesize", lambda: synth_stage(config, ex, voices))
        outcomes.extend(synth_steps)
        if ph is not None:
            merged.append(ph)
    release = None
    if publish:
        dirs = [m.path for m in merged]
        release = ex.stage("publish", lambda: publish_stage(config, ex, dirs, release_id))
        if release.report is not None:
            outcomes.append(release.report)
    return PipelineResult(tuple(outcomes), tuple(merged), release, tuple(corpus_merged))
