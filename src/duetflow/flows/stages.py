"""The stage flows: each stage on its own, one generic flow over its spec (:func:`stage_flow`).

For deployments and the UI: a stage flow takes a config path (or a
:class:`~duetflow.config.RunConfig`) plus a few explicit overrides, finds what the stage needs
from earlier stages in the work directory (the spec's ``resume``) or takes the work
directories it is given, and runs the stage (:func:`duetflow.pipeline.driver.run_stage`, the
function :func:`~duetflow.pipeline.driver.run_pipeline` loops over) with the Prefect executor on
this flow's task runner. ``ingest``, ``process``, ``synthesize`` and ``publish`` are the
pipeline's stages as flows; :func:`stage_flow` makes one for any other spec.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from prefect import flow

from duetflow.config import RunConfig
from duetflow.flows.executor import PrefectExecutor
from duetflow.flows.runner import default_task_runner, resolve_config
from duetflow.pipeline.cache import StepOutcome
from duetflow.pipeline.driver import run_alone
from duetflow.pipeline.stage import StageSpec
from duetflow.pipeline.stages import INGEST, PROCESS, PUBLISH, SYNTH


@dataclass(frozen=True)
class StageResult:
    """What a stage flow did: its step outcomes, its output, the work directories it left."""

    stage: str
    steps: list[StepOutcome] = field(default_factory=list)
    #: the stage's output (what its merges returned: merged corpora, the PH directory, ...)
    output: list[Any] = field(default_factory=list)
    #: the work directories a later stage reads after this one
    workdirs: list[StepOutcome] = field(default_factory=list)


def stage_flow(spec: StageSpec) -> Any:
    """The Prefect flow that runs stage ``spec`` on its own (named ``spec.flow``, or its name)."""

    def run_one(
        config: str | RunConfig | None = None,
        corpora: list[str] | None = None,
        workdirs: list[str] | None = None,
        workdir: str | None = None,
        store: str | None = None,
        release_id: str | None = None,
        overrides: dict[str, Any] | None = None,
    ) -> StageResult:
        cfg = resolve_config(config, workdir=workdir, store=store, overrides=overrides)
        state = run_alone(
            spec, cfg, PrefectExecutor(), corpora=corpora, workdirs=workdirs, release_id=release_id
        )
        output = state.output(spec.name, [])
        return StageResult(spec.name, list(state.steps), output, list(state.workdirs))

    run_one.__doc__ = (
        f"The {spec.name} stage on its own: {spec.inputs} → {spec.outputs}.\n\n"
        "``corpora`` limits the corpora, ``workdirs`` names the work directories it reads "
        "(default: found in the work directory), ``workdir``/``store``/``release_id`` override "
        "the config's."
    )
    return flow(name=spec.flow or spec.name, task_runner=default_task_runner())(run_one)


ingest = stage_flow(INGEST)
process = stage_flow(PROCESS)
synthesize = stage_flow(SYNTH)
publish = stage_flow(PUBLISH)
