"""The whole configured pipeline as plain Python: a loop over the stages, run on an executor.

The one definition of a run: :func:`run_pipeline` runs :func:`run_stage` for each stage of
:data:`duetflow.pipeline.stages.STAGES` in order, on an executor
(:mod:`duetflow.pipeline.executors`): in this process by default, or as Prefect tasks and
subflows (``duetflow.flows.executor.PrefectExecutor``, what ``build_dataset`` passes). Both give
byte-identical work directories and releases, which is what makes the Prefect overhead
measurable (``bench/flows.py``) and the flows thin.

:func:`run_stage` runs any stage from its spec: the units its plan yields, its step mapped over
each unit's items (or called in this process, ``StepHints.in_caller``), each unit merged; every
step is cached by key (:mod:`duetflow.pipeline.cache`)::

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
from duetflow.pipeline.cache import StepOutcome
from duetflow.pipeline.executors import Executor, PlainExecutor
from duetflow.pipeline.stage import RunState, StageSpec
from duetflow.pipeline.stages import STAGES
from duetflow.pipeline.stages.publish import ReleaseSummary
from duetflow.pipeline.workdir_lock import locks_workdir, workdir_lock

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PipelineResult:
    """Everything a run did, per stage; ``computed``/``reused`` count steps."""

    steps: tuple[StepOutcome, ...]
    merged: tuple[StepOutcome, ...]  # what was published: corpora after matching, then PH
    release: ReleaseSummary | None
    processed: tuple[StepOutcome, ...] = ()  # each corpus as processed, before matching
    #: each stage's output in this run, by stage name (plug-in stages included)
    outputs: dict[str, Any] | None = None

    def computed(self, stage: str) -> int:
        return sum(1 for s in self.steps if s.stage == stage and not s.reused)

    def reused(self, stage: str) -> int:
        return sum(1 for s in self.steps if s.stage == stage and s.reused)


def run_stage(spec: StageSpec, state: RunState, ex: Executor) -> list[Any]:
    """Run one stage on ``ex``: plan → step per item → merge per unit; its output, also kept in
    ``state.outputs[spec.name]`` (a list: what each unit's merge returned, concatenated).

    A stage the config does not ask for (``spec.wanted``) or the caller skips runs nothing and
    outputs nothing. Holds the work directory's lock (re-entrant within a process).
    """
    if spec.name in state.skip or not spec.wanted(state):
        log.info("%s: not asked for by the config or the caller: nothing to do", spec.name)
        return []
    step = spec.step
    in_caller = spec.hints is not None and spec.hints.in_caller

    def body() -> list[Any]:
        output: list[Any] = []
        for work in spec.plan(state):
            if step is None:
                done: list[Any] = []
            elif in_caller:
                done = [ex.call(spec, item, *work.args) for item in work.items]
            else:
                done = ex.map(spec, work.items, *work.args, batch=work.batch, size=spec.size)
            output.extend(spec.merge(state, work, done))
        state.outputs[spec.name] = output
        return output

    with workdir_lock(state.config.workdir):
        return ex.stage(spec.flow, body) if spec.flow else body()


def given_workdirs(paths: Sequence[str | Path]) -> list[StepOutcome]:
    """Work directories a caller names (a stage run on its own) as outcomes later stages read."""
    return [StepOutcome("given", Path(p).name, "", str(p)) for p in paths]


def run_alone(
    spec: StageSpec,
    config: RunConfig,
    ex: Executor,
    *,
    corpora: Sequence[str] | None = None,
    workdirs: Sequence[str | Path] | None = None,
    release_id: str | None = None,
) -> RunState:
    """Run one stage on its own (a stage flow, ``duetflow stage``): what it needs of earlier
    stages is ``workdirs`` when given, else found in the work directory (``spec.resume``).
    Returns the run's state: its steps, its output (``state.outputs[spec.name]``), the work
    directories a later stage would read."""
    state = RunState(config, corpora, release_id)
    state.workdirs.extend(given_workdirs(workdirs or ()))
    if spec.name not in state.skip and spec.wanted(state):
        spec.resume(state, ex)
    run_stage(spec, state, ex)
    return state


def preflight(config: RunConfig) -> None:
    """Check what a run needs before anything starts: raise ConfigError naming every problem.

    Every configured corpus must be a registered adapter that accepts its options, have a root
    that is a directory and a licence (the adapter's or ``corpora[].licence``); configured
    scripts must exist. Cheap: nothing is scanned or imported beyond the adapters.
    """
    from duetflow.corpora import get_adapter

    problems: list[str] = []
    for i, spec in enumerate(config.corpora):
        where = f"corpora[{i}] ({spec.name})"
        try:
            adapter = get_adapter(spec.name)(Path(spec.root), spec.options, config=config)
            adapter.resolve_licence(spec.licence)
        except ConfigError as e:
            problems.append(f"{where}: {e}")
            continue
        if not Path(spec.root).is_dir():
            problems.append(f"{where}: root {spec.root} is not a directory")
    scripts = config.synth.scripts
    if config.synth.enabled and scripts is not None and not Path(scripts).exists():
        problems.append(f"synth.scripts: {scripts} not found")
    if problems:
        raise ConfigError("\n".join(problems))


@locks_workdir
def run_pipeline(
    config: RunConfig,
    *,
    executor: Executor | None = None,
    corpora: Sequence[str] | None = None,
    synthesize: bool = True,
    publish: bool = True,
    release_id: str | None = None,
    stages: Sequence[StageSpec] = STAGES,
) -> PipelineResult:
    """Run the configured pipeline: ingest → process → match → (scripts →) synth → publish.

    The one definition of a run: each stage of ``stages`` (default
    :data:`~duetflow.pipeline.stages.STAGES`; a plug-in stage is added with
    :func:`~duetflow.pipeline.stages.with_stage`) in order, through :func:`run_stage`.
    ``executor`` decides where steps run: in this process (default,
    :class:`~duetflow.pipeline.executors.PlainExecutor`) or as Prefect tasks
    (``duetflow.flows.executor.PrefectExecutor``, what ``build_dataset`` passes); both give
    byte-identical work directories and releases. ``synthesize=False`` skips the scripts and
    synth stages, ``publish=False`` the publish stage.
    """
    ex: Executor = executor or PlainExecutor()
    skip = set() if synthesize else {"scripts", "synth"}
    if not publish:
        skip.add("publish")
    state = RunState(config, corpora, release_id, frozenset(skip))
    for spec in stages:
        run_stage(spec, state, ex)
    published = state.output("publish", [])
    return PipelineResult(
        tuple(state.steps),
        tuple(state.workdirs),
        published[0] if published else None,
        tuple(state.output("process", [])),
        dict(state.outputs),
    )
