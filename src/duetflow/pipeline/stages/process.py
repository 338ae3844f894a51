"""The process stage: each corpus's intake dialogues, shard by shard, → rendered work directory.

The work is :func:`duetflow.pipeline.process.process_dialogues` (the stage's entry module: per
source dialogue acoustic timing, selection, rendering); a shard is cached by the fingerprint of
its dialogues and their audio. Shards merge in intake order into ``<workdir>/rendered/<corpus>``
after the corpus's intake rejections.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duetflow.config import RunConfig
from duetflow.pipeline.cache import StepOutcome, build_cached, cache_dir, record_counts
from duetflow.pipeline.executors import Batch
from duetflow.pipeline.keys import dialogues_fingerprint
from duetflow.pipeline.merge import merge_workdirs, rendered_dir
from duetflow.pipeline.shards import stable_chunks
from duetflow.pipeline.stage import RunState, StageSpec, StepHints, Work, found
from duetflow.pipeline.stages.ingest import CorpusJob, corpus_jobs, find_intakes
from duetflow.records import manifest
from duetflow.records.dialogue import Dialogue
from duetflow.turntaking.stats import micros

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ProcessShard:
    """A slice of one corpus's intake dialogues, in intake order; ``index`` orders the merge."""

    label: str
    index: int
    key: str
    dialogues: tuple[Dialogue, ...]


def _dialogue_key(d: Dialogue) -> str:
    return d.id


def plan_process_shards(
    label: str, intake_dir: str | Path | Sequence[str | Path], config: RunConfig
) -> Iterator[ProcessShard]:
    """Stream intake work directories (one, or several read one after the other) as shards of
    about ``runner.shard_size`` dialogues."""
    dirs = [intake_dir] if isinstance(intake_dir, str | Path) else list(intake_dir)
    dialogues = itertools.chain.from_iterable(manifest.iter_dialogues(d) for d in dirs)
    for i, batch in enumerate(stable_chunks(dialogues, config.runner.shard_size, _dialogue_key)):
        key = STAGE.key(config, dialogues_fingerprint(batch))
        yield ProcessShard(label=label, index=i, key=key, dialogues=tuple(batch))


def run_process_shard(shard: ProcessShard, config: RunConfig) -> StepOutcome:
    """Window, filter and render one shard into its cache directory (or reuse it)."""

    def build(out: Path) -> StepOutcome:
        from duetflow.pipeline.process import process_dialogues  # the render stack: only to build

        res = process_dialogues(list(shard.dialogues), STAGE.scoped(config), out)
        kept, rejected, by_reason = record_counts(len(res.dialogues), res.rejections)
        totals = {
            "windows": res.windows,
            "windowless": res.windowless,
            "audio_us": sum(micros(r.duration_s) for r in res.dialogues),
        }
        return StepOutcome(
            "process", shard.label, shard.key, str(out), len(shard.dialogues), kept, rejected,
            by_reason, shard.index, totals=totals,
        )  # fmt: skip

    return build_cached(cache_dir(config, "process", shard.key), build)


def process_window(config: RunConfig) -> int:
    """Shards in flight at once: two per worker, so memory follows the shard size."""
    r = config.runner
    workers = r.max_workers if r.kind == "threads" else r.dask_workers * max(1, r.max_workers)
    return 2 * workers


def merge_process(
    job: CorpusJob, intake: StepOutcome, shards: Sequence[StepOutcome], config: RunConfig
) -> StepOutcome:
    """The corpus's rendered work directory: intake rejections + every shard, in order."""
    merged = merge_workdirs(
        job.label,
        shards,
        rendered_dir(config, job.label),
        leading_rejections=[Path(intake.path) / manifest.REJECTIONS],
        stage="process",
    )
    return dataclasses.replace(merged, found=intake.found)


def plan(state: RunState) -> Iterable[Work]:
    """One unit per corpus: its intake's shards."""
    config = state.config
    by_label = {i.label: i for i in state.output("ingest", [])}
    for job in corpus_jobs(config, state.corpora):
        intake = by_label[job.label]
        shards = plan_process_shards(job.label, intake.path, config)
        batch = Batch("process", job.label, intake.kept, window=process_window(config))
        yield Work(shards, (config,), batch, context=(job, intake))


def merge(state: RunState, work: Work, done: list[Any]) -> list[StepOutcome]:
    job, intake = work.context
    m = merge_process(job, intake, done, state.config)
    state.steps.extend(done)
    state.workdirs.append(m)
    log.info(
        "process %s: %d shards (%d reused), %d kept, %d rejected -> %s", job.label, len(done),
        sum(s.reused for s in done), m.kept, m.rejected, m.path,
    )  # fmt: skip
    return [m]


def resume(state: RunState, ex: Any) -> None:
    """On its own: the finished ingests of the current corpus files and config."""
    if "ingest" not in state.outputs:
        state.outputs["ingest"] = find_intakes(state.config, state.corpora)


STAGE = StageSpec(
    "process",
    ("seed", "sample_rate", "segment", "turns", "window", "filters", "render", "studio", "quality"),
    ("duetflow.pipeline.process",),
    inputs="a shard of intake dialogues and their audio",
    outputs="rendered tables + audio of the shard; merged per corpus into rendered/<corpus>",
    step=run_process_shard,
    plan=plan,
    merge=merge,
    resume=resume,
    hints=StepHints("process-shard", "process-{shard.label}-{shard.index}", retries=1, delay_s=1),
    flow="process",
    size=found,
)
