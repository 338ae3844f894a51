"""The ingest stage: one step per configured corpus, corpus root → intake tables.

The work is :func:`duetflow.pipeline.ingest.ingest` (the stage's entry module, hashed in its
key with the corpus adapter named by the config); a step is cached by the adapter, its options,
licence and the corpus tree's fingerprint.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duetflow.config import CorpusSpec, RunConfig
from duetflow.errors import ConfigError
from duetflow.pipeline.cache import StepOutcome, build_cached, cache_dir, load_outcome, table_counts
from duetflow.pipeline.executors import Batch
from duetflow.pipeline.keys import tree_fingerprint
from duetflow.pipeline.stage import IO_TAG, RunState, StageSpec, StepHints, Work
from duetflow.records import convert
from duetflow.records.dialogue import safe_id

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CorpusJob:
    """One configured corpus with the label that names its folders (unique within a run)."""

    label: str
    spec: CorpusSpec


def corpus_jobs(config: RunConfig, only: Sequence[str] | None = None) -> list[CorpusJob]:
    """The configured corpora with unique folder labels, optionally only those named."""
    counts = Counter(spec.name for spec in config.corpora)
    jobs: list[CorpusJob] = []
    seen: Counter[str] = Counter()
    for spec in config.corpora:
        label = safe_id(spec.name)
        if counts[spec.name] > 1:
            label = f"{label}-{seen[spec.name]}"
        seen[spec.name] += 1
        jobs.append(CorpusJob(label=label, spec=spec))
    if only:
        wanted = set(only)
        unknown = wanted - {j.label for j in jobs} - {j.spec.name for j in jobs}
        if unknown:
            raise ConfigError(f"corpus {sorted(unknown)} is not configured; have {sorted(counts)}")
        jobs = [j for j in jobs if j.label in wanted or j.spec.name in wanted]
    return jobs


def ingest_key(job: CorpusJob, config: RunConfig) -> str:
    """Key of one corpus's ingest: adapter, options, licence and the tree's fingerprint, plus the
    resolved root as a locator (the intake tables point at its audio by absolute path, so an
    intake is valid only where it was read; no release records the root,
    :mod:`duetflow.records.locations`)."""
    from duetflow.corpora import get_adapter

    spec = job.spec
    options = convert.dumps(dict(sorted(spec.options.items())))
    return STAGE.key(
        config, spec.name, str(Path(spec.root).resolve()), options,
        tree_fingerprint(spec.root), spec.licence or "",
        plugins=(get_adapter(spec.name).__module__,),
    )  # fmt: skip


def run_ingest(job: CorpusJob, config: RunConfig, key: str | None = None) -> StepOutcome:
    """Ingest one corpus into its cache directory (or find it already ingested)."""
    key = key or ingest_key(job, config)

    def build(out: Path) -> StepOutcome:
        from duetflow.pipeline.ingest import ingest  # not imported when the step is reused

        spec = job.spec
        report = ingest(
            spec.name, spec.root, out, STAGE.scoped(config), dict(spec.options) or None,
            licence=spec.licence,
        )  # fmt: skip
        kept, rejected, by_reason = table_counts(out)
        found = int(getattr(report, "found", kept + rejected))
        log.info("ingest %s: %d found, %d kept, %d rejected", job.label, found, kept, rejected)
        return StepOutcome("ingest", job.label, key, str(out), found, kept, rejected, by_reason)

    return build_cached(cache_dir(config, "ingest", key), build)


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


def plan(state: RunState) -> Iterable[Work]:
    jobs = corpus_jobs(state.config, state.corpora)
    yield Work(jobs, (state.config,), Batch("ingest", total=len(jobs)))


def merge(state: RunState, work: Work, done: list[Any]) -> list[StepOutcome]:
    for r in done:
        log.info(
            "ingest %s: %d found, %d kept, %d rejected (%s)", r.label, r.found, r.kept,
            r.rejected, "reused" if r.reused else "computed",
        )  # fmt: skip
    state.steps.extend(done)
    return done


STAGE = StageSpec(
    "ingest",
    ("seed", "sample_rate", "segment", "studio", "topics", "design", "asr"),
    ("duetflow.pipeline.ingest",),
    inputs="a corpus root (adapter, options, licence)",
    outputs="intake tables (dialogues, turns, rejections) of one corpus",
    step=run_ingest,
    plan=plan,
    merge=merge,
    hints=StepHints(
        "ingest-corpus",
        "ingest-{job.label}",
        (IO_TAG,),
        retries=2,
        delay_s=2,
        backoff=True,
        jitter=0.5,
    ),
    flow="ingest",
)
