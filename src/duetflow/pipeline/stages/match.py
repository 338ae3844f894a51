"""The match stage: HH windows mirror the HM topics per language, over every rendered corpus.

The work is :mod:`duetflow.turntaking.matching` (the stage's entry module); one step in the
caller's process (it needs every corpus at once). A work directory that loses windows is
rewritten under ``<workdir>/matched/<label>``, keyed by its tables and what it loses.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from duetflow.config import RunConfig
from duetflow.hashing import files_fingerprint
from duetflow.pipeline.cache import PH_LABEL, RESULT, StepOutcome, load_outcome, table_counts
from duetflow.pipeline.executors import Batch
from duetflow.pipeline.merge import rendered_dir
from duetflow.pipeline.stage import RunState, StageSpec, StepHints, Work
from duetflow.pipeline.stages.ingest import corpus_jobs
from duetflow.records import convert, manifest

log = logging.getLogger(__name__)


def matched_dir(config: RunConfig, label: str) -> Path:
    return Path(config.workdir) / "matched" / label


def run_match(merged: Sequence[StepOutcome], config: RunConfig) -> list[StepOutcome]:
    """HH ↔ HM matching over the rendered work directories (``duetflow.turntaking.matching``).

    Returns the directories every later step reads, in the same order: a directory that loses
    no window is passed through as it is; one that does is rewritten (tables only, audio
    hard-linked) under ``<workdir>/matched/<label>``, reused while its inputs are unchanged.
    The plan's table goes to ``<workdir>/matched/match.json``.
    """
    from duetflow.turntaking.matching import apply_match, items_of, plan_match, write_plan

    dirs = [Path(m.path) for m in merged]
    plan = plan_match(items_of(dirs), config.match, config.seed)
    write_plan(plan, Path(config.workdir) / "matched" / "match.json")
    out: list[StepOutcome] = []
    for m, d in zip(merged, dirs, strict=True):
        ids = list(manifest.iter_column(d / manifest.DIALOGUES, "dialogue_id"))
        drop = {i: plan.dropped[i] for i in ids if i in plan.dropped}
        if not drop:
            out.append(m)
            continue
        key = STAGE.key(
            config, files_fingerprint([d / manifest.DIALOGUES, d / manifest.REJECTIONS]),
            convert.dumps(sorted(drop.items())),
        )  # fmt: skip
        target = matched_dir(config, m.label)
        done = load_outcome(target)
        if done is not None and done.key == key:
            out.append(done)
            continue
        apply_match(d, target, drop)
        kept, rejected, by_reason = table_counts(target)
        outcome = StepOutcome("match", m.label, key, str(target), m.found, kept, rejected,
                              by_reason, m.index)  # fmt: skip
        tmp = target / f".{RESULT}.tmp"
        tmp.write_text(json.dumps(outcome.to_json(), sort_keys=True), encoding="utf-8")
        os.replace(tmp, target / RESULT)
        out.append(outcome)
    log.info("match: %d HH window(s) left out to mirror the HM topics", len(plan.dropped))
    return out


def rendered_outcomes(config: RunConfig, *, with_ph: bool) -> list[StepOutcome]:
    """The corpora's merged work directories found in the work directory (+ PH when asked)."""
    found = [
        o
        for j in corpus_jobs(config)
        if (o := load_outcome(rendered_dir(config, j.label))) is not None
    ]
    ph = load_outcome(rendered_dir(config, PH_LABEL)) if with_ph else None
    return found + ([ph] if ph is not None else [])


def plan(state: RunState) -> Iterable[Work]:
    yield Work([list(state.workdirs)], (state.config,), Batch("match"))


def merge(state: RunState, work: Work, done: list[Any]) -> list[StepOutcome]:
    state.workdirs[:] = done[0]
    return list(done[0])


def resume(state: RunState, ex: Any) -> None:
    """On its own: the corpora's rendered work directories in the work directory."""
    if not state.workdirs:
        state.workdirs.extend(rendered_outcomes(state.config, with_ph=False))


def after_match(state: RunState, ex: Any) -> None:
    """What a later stage run on its own reads: the corpora's rendered work directories after
    HH ↔ HM matching (matching runs again: cheap, and keyed), unless some were given."""
    from duetflow.pipeline.driver import run_stage

    if not state.workdirs:
        resume(state, ex)
        run_stage(STAGE, state, ex)


STAGE = StageSpec(
    "match",
    ("seed", "match"),
    ("duetflow.turntaking.matching",),
    inputs="the rendered work directories of every corpus",
    outputs="matched/<corpus> for corpora that lose HH windows; matched/match.json",
    step=run_match,
    plan=plan,
    merge=merge,
    resume=resume,
    hints=StepHints("match-hh-hm", in_caller=True),
)
