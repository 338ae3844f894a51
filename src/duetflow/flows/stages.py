"""The stage flows: ingest, process, synthesize, publish.

Each takes a config path (or a :class:`~duetflow.config.RunConfig`) plus a few explicit
overrides, so the UI and ``prefect.yaml`` can set them, and submits one task per corpus or per
shard. Submission is windowed: at most a few shards per worker are in flight, so the flow's
memory follows the shard size, not the corpus size.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from prefect import flow, get_run_logger
from prefect.futures import PrefectFuture

from duetflow import pipeline, tasks
from duetflow.config import RunConfig
from duetflow.errors import ConfigError
from duetflow.flows.runner import default_task_runner, resolve_config
from duetflow.pipeline import CorpusJob, ReleaseSummary, StepOutcome
from duetflow.progress import Progress

T = TypeVar("T")
R = TypeVar("R")


def submit_windowed(
    submit: Callable[[T], PrefectFuture[R]],
    items: Iterable[T],
    window: int,
    on_result: Callable[[int, R], None] | None = None,
) -> list[R]:
    """Submit ``items`` keeping at most ``window`` futures pending; results in item order.

    Waiting on the oldest future (not the first to finish) keeps the code simple and the order
    deterministic; with shards of similar size the pipeline stays full.
    """
    pending: deque[PrefectFuture[R]] = deque()
    results: list[R] = []

    def take() -> None:
        results.append(pending.popleft().result())
        if on_result is not None:
            on_result(len(results), results[-1])

    for item in items:
        while len(pending) >= max(1, window):
            take()
        pending.append(submit(item))
    while pending:
        take()
    return results


def _window(config: RunConfig) -> int:
    r = config.runner
    workers = r.max_workers if r.kind == "threads" else r.dask_workers * max(1, r.max_workers)
    return 2 * workers


def _progress(stage: str, label: str, total: int | None) -> Callable[[int, StepOutcome], None]:
    """Per finished shard: a progress record in items (``total`` items, e.g. the intake's
    dialogues) for the CLI's bar, and every tenth shard a line in the run's log."""
    logger = get_run_logger()
    bar = Progress(stage, label, total)

    def report(done: int, outcome: StepOutcome) -> None:
        bar.advance(outcome.found)
        if done % 10 == 0:
            logger.info(
                "%s %s: %d shards, %d/%s items done (shard %d %s)", stage, label, done, bar.done,
                total if total is not None else "?", outcome.index,
                "reused" if outcome.reused else "computed",
            )  # fmt: skip

    return report


@flow(name="ingest", task_runner=default_task_runner(), log_prints=False)
def ingest(
    config: str | RunConfig | None = None,
    corpora: list[str] | None = None,
    workdir: str | None = None,
    overrides: dict[str, Any] | None = None,
) -> list[StepOutcome]:
    """Ingest the configured corpora (or only ``corpora``) into intake work directories."""
    cfg = resolve_config(config, workdir=workdir, overrides=overrides)
    logger = get_run_logger()
    jobs = pipeline.corpus_jobs(cfg, corpora)
    futures = [tasks.ingest_corpus.submit(job, cfg, pipeline.ingest_key(job, cfg)) for job in jobs]
    results = [f.result() for f in futures]
    for r in results:
        logger.info(
            "ingest %s: %d found, %d kept, %d rejected (%s)", r.label, r.found, r.kept,
            r.rejected, "reused" if r.reused else "computed",
        )  # fmt: skip
    return results


def _find_intakes(cfg: RunConfig, jobs: Sequence[CorpusJob]) -> list[StepOutcome]:
    found = []
    for job in jobs:
        done = pipeline.load_outcome(
            pipeline.cache_dir(cfg, "ingest", pipeline.ingest_key(job, cfg))
        )
        if done is None:
            raise ConfigError(
                f"corpus {job.label!r} has no finished ingest for its current files and config "
                f"in {cfg.workdir}: run the ingest flow first"
            )
        found.append(done)
    return found


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
    logger = get_run_logger()
    jobs = pipeline.corpus_jobs(cfg, corpora)
    if intakes is None:
        intakes = _find_intakes(cfg, jobs)
    by_label = {i.label: i for i in intakes}
    shards: list[StepOutcome] = []
    merged: list[StepOutcome] = []
    for job in jobs:
        intake = by_label[job.label]
        done = submit_windowed(
            lambda s: tasks.process_shard.submit(s, cfg),
            pipeline.plan_process_shards(job.label, intake.path, cfg),
            _window(cfg),
            _progress("process", job.label, intake.kept),
        )
        shards.extend(done)
        m = pipeline.merge_process(job, intake, done, cfg)
        merged.append(m)
        logger.info(
            "process %s: %d shards (%d reused), %d kept, %d rejected -> %s", job.label, len(done),
            sum(s.reused for s in done), m.kept, m.rejected, m.path,
        )  # fmt: skip
    return shards, merged


def _rendered_dirs(cfg: RunConfig, with_ph: bool) -> list[str]:
    """The corpora's rendered work directories after HH ↔ HM matching (+ PH when asked)."""
    found = [
        o
        for j in pipeline.corpus_jobs(cfg)
        if (o := pipeline.load_outcome(pipeline.rendered_dir(cfg, j.label))) is not None
    ]
    dirs = [Path(m.path) for m in tasks.match_dialogues(found, cfg)]
    ph = pipeline.rendered_dir(cfg, pipeline.PH_LABEL)
    if with_ph and (ph / pipeline.RESULT).exists():
        dirs.append(ph)
    return [str(d) for d in dirs]


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
    logger = get_run_logger()
    if not pipeline.synth_wanted(cfg):
        logger.info("synthesis disabled or no scripts configured: nothing to do")
        return [], None
    voice_dirs = voices if voices is not None else _rendered_dirs(cfg, with_ph=False)
    rejected: list[Any] = []
    llm_dirs: list[Path] = []
    if pipeline.scripts_wanted(cfg):
        llm_dirs, rejected = tasks.write_scripts(cfg, voice_dirs)
        logger.info("LLM scripts in %s (%d rejected)", [str(d) for d in llm_dirs], len(rejected))
    pool = pipeline.build_voices(cfg, voice_dirs)
    logger.info(
        "voice pool: %d speakers from %d work directories", len(pool.voices), len(voice_dirs)
    )
    done = submit_windowed(
        lambda s: tasks.synthesize_shard.submit(s, pool, cfg),
        pipeline.plan_synth_shards(cfg, voice_dirs, pool, rejected, llm_dirs),
        cfg.synth.concurrency,
        _progress("synth", pipeline.PH_LABEL, None),
    )
    merged = pipeline.merge_synth(done, rejected, cfg)
    logger.info(
        "synthesize: %d shards (%d reused), %d kept, %d rejected -> %s", len(done),
        sum(s.reused for s in done), merged.kept, merged.rejected, merged.path,
    )  # fmt: skip
    return done, merged


@flow(name="publish", task_runner=default_task_runner())
def publish(
    config: str | RunConfig | None = None,
    workdirs: list[str] | None = None,
    store: str | None = None,
    release_id: str | None = None,
    overrides: dict[str, Any] | None = None,
) -> ReleaseSummary:
    """Validate, split and publish rendered work directories as one release."""
    cfg = resolve_config(config, store=store, overrides=overrides)
    dirs = workdirs if workdirs is not None else _rendered_dirs(cfg, with_ph=True)
    if not dirs:
        raise ConfigError(f"nothing to publish: no rendered work directories in {cfg.workdir}")
    logger = get_run_logger()
    paths = [str(Path(d)) for d in dirs]
    # runs in the flow's process: store credentials live here, not on Dask workers
    summary = tasks.publish_release(paths, cfg, release_id)
    if summary.report is not None:
        logger.info(
            "report %s: %s", "reused" if summary.report.reused else "built", summary.report.path
        )
    logger.info("published release %s to %s", summary.release_id, summary.store)
    return summary
