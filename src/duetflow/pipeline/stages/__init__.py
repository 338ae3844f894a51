"""The pipeline's stages, one module each, and their order, declared once (:data:`STAGES`).

Each module declares its stage as data (a :class:`~duetflow.pipeline.stage.StageSpec` named
``STAGE``): config sections, entry modules (its code, hashed in its key), plan, step, merge,
resume and retry hints. :func:`duetflow.pipeline.driver.run_pipeline` runs :data:`STAGES` in
this order; the Prefect task, the stage flow and the executor are each one function over a
spec, so adding a stage is one module here plus its line below (docs/ARCHITECTURE.md, *Adding a
stage*).

No stage module is an entry of any stage: a stage's key hashes its work (``entries``), not
how it is driven, so editing the driving of one stage re-renders nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from duetflow.pipeline.stage import CONTENT_SECTIONS, StageSpec
from duetflow.pipeline.stages import ingest, match, process, publish, report, scripts, synth

INGEST = ingest.STAGE
PROCESS = process.STAGE
MATCH = match.STAGE
SCRIPTS = scripts.STAGE
SYNTH = synth.STAGE
REPORT = report.STAGE
PUBLISH = publish.STAGE

#: every stage, in the order a run executes them
STAGES: tuple[StageSpec, ...] = (INGEST, PROCESS, MATCH, SCRIPTS, SYNTH, REPORT, PUBLISH)
BY_NAME = {s.name: s for s in STAGES}


def with_stage(
    spec: StageSpec, *, after: str, stages: Sequence[StageSpec] = STAGES
) -> tuple[StageSpec, ...]:
    """``stages`` with ``spec`` inserted after the stage named ``after`` (a plug-in stage)."""
    names = [s.name for s in stages]
    if after not in names:
        raise ValueError(f"no stage {after!r} to insert {spec.name!r} after; have {names}")
    if spec.name in names:
        raise ValueError(f"a stage named {spec.name!r} is already in {names}")
    i = names.index(after) + 1
    return (*stages[:i], spec, *stages[i:])


__all__ = [
    "BY_NAME",
    "CONTENT_SECTIONS",
    "INGEST",
    "MATCH",
    "PROCESS",
    "PUBLISH",
    "REPORT",
    "SCRIPTS",
    "STAGES",
    "SYNTH",
    "StageSpec",
    "with_stage",
]
