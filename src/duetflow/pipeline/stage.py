"""What a stage is: :class:`StageSpec`, the data one module of :mod:`duetflow.pipeline.stages`
declares, and :class:`RunState`, what the stages of one run hand each other.

A stage declares, as data:

* what it reads of the config (:attr:`StageSpec.sections`; its work receives only those,
  :meth:`StageSpec.scoped`) and which modules are its work (:attr:`StageSpec.entries`: their
  import closure inside ``duetflow`` is its code), so its cache key (:meth:`StageSpec.key`)
  hashes exactly those sections, that code and the fingerprints of its inputs;
* :attr:`~StageSpec.plan`: the units of steps it runs (:class:`Work`: the step's items and
  extra arguments, one unit per merge, e.g. one corpus's shards);
* :attr:`~StageSpec.step`: the step function an executor runs on one item (one corpus, one
  shard), content-addressed through :func:`duetflow.pipeline.cache.build_cached`;
* :attr:`~StageSpec.merge`: how a unit's step outcomes become the stage's output in the
  :class:`RunState` (merged work directories, the outcomes later stages read);
* :attr:`~StageSpec.resume`: what the stage needs from earlier stages, found in the work
  directory when it runs on its own (a stage flow, ``duetflow.flows.stages``);
* :attr:`~StageSpec.hints`: how a step may be retried and what it holds (:class:`StepHints`),
  which the Prefect shell turns into a task; nothing here imports Prefect.

:func:`duetflow.pipeline.driver.run_stage` is the one function that runs any stage on an
executor, :func:`duetflow.pipeline.driver.run_pipeline` a loop over
:data:`duetflow.pipeline.stages.STAGES`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from duetflow.config import RUN_ONLY_FIELDS, RunConfig
from duetflow.hashing import code_hash
from duetflow.pipeline.cache import StepOutcome
from duetflow.pipeline.executors import Batch
from duetflow.pipeline.keys import scoped_config, stage_key

#: every section that can change what a release holds (all but where a run happens)
CONTENT_SECTIONS: tuple[str, ...] = tuple(
    name for name in RunConfig.model_fields if name not in RUN_ONLY_FIELDS
)

#: tag of synthesis steps; ``duetflow deploy`` creates a tag concurrency limit (1 per GPU)
TTS_TAG = "duetflow-tts"
#: tag of steps that read or write storage (retried with backoff)
IO_TAG = "duetflow-io"


@dataclass(frozen=True)
class StepHints:
    """How an executor may run a stage's step: retries and what it holds (tags).

    Plain data: the Prefect shell (``duetflow.tasks.task_of``) turns it into a task's name,
    run name, tags and retry policy; failures a retry cannot fix are never retried whatever
    ``retries`` says (``duetflow.tasks.transient_only``).
    """

    #: the task's name (``ingest-corpus``, ``process-shard``)
    task: str
    #: the task run's name, a template over the step function's parameters
    run_name: str | None = None
    #: tags (``IO_TAG`` for storage, ``TTS_TAG`` for a synthesis slot)
    tags: tuple[str, ...] = ()
    retries: int = 0
    #: seconds between tries; with ``backoff`` the factor of an exponential backoff instead
    delay_s: float = 0.0
    backoff: bool = False
    jitter: float | None = None
    #: run the step in the caller's own process (the flow's), never on a worker: it needs the
    #: whole run's view (match) or credentials only the caller holds (publish)
    in_caller: bool = False


@dataclass
class RunState:
    """What the stages of one run hand each other (built by the driver or a stage flow)."""

    config: RunConfig
    #: only these corpora (labels or adapter names), None for all
    corpora: Sequence[str] | None = None
    release_id: str | None = None
    #: stages not to run (``run_pipeline(synthesize=False)`` skips scripts and synth)
    skip: frozenset[str] = frozenset()
    #: every step outcome of the run, in order (cache use is counted from these)
    steps: list[StepOutcome] = field(default_factory=list)
    #: the work directories the next stage reads: per corpus, matched, then PH
    workdirs: list[StepOutcome] = field(default_factory=list)
    #: each stage's own output, by stage name (what its merge returned)
    outputs: dict[str, Any] = field(default_factory=dict)

    def output(self, stage: str, default: Any = None) -> Any:
        """What stage ``stage`` produced in this run (``default`` when it did not run)."""
        return self.outputs.get(stage, default)


@dataclass(frozen=True)
class Work:
    """One unit a stage's plan yields: the items to map its step over, the step's extra
    arguments after the item, the progress batch, and what the merge needs besides."""

    items: Iterable[Any]
    args: tuple[Any, ...] = ()
    batch: Batch = field(default_factory=lambda: Batch(""))
    context: Any = None


def _always(state: RunState) -> bool:
    return True


def _nothing(state: RunState, ex: Any) -> None:
    return None


def _no_plan(state: RunState) -> Iterable[Work]:
    return ()


def _outcomes(state: RunState, work: Work, done: list[Any]) -> Any:
    state.steps.extend(o for o in done if isinstance(o, StepOutcome))
    return done


def found(outcome: StepOutcome) -> int:
    """Items one step outcome accounts for (progress)."""
    return outcome.found


@dataclass(frozen=True)
class StageSpec:
    """One stage of the pipeline (see the module docstring)."""

    name: str
    #: config sections the stage reads; its work receives a config with only these readable
    sections: tuple[str, ...]
    #: modules whose import closure (inside duetflow) is the stage's code
    entries: tuple[str, ...]
    inputs: str
    outputs: str
    #: the step function: ``step(item, *work.args) -> result`` (None: no steps of its own)
    step: Callable[..., Any] | None = None
    #: the units of steps to run, from what earlier stages left in the state
    plan: Callable[[RunState], Iterable[Work]] = _no_plan
    #: one unit's results → the stage's output (also updates ``state.steps``/``workdirs``)
    merge: Callable[[RunState, Work, list[Any]], Any] = _outcomes
    #: whether the stage runs in this run (its config asks for it, the caller did not skip it)
    wanted: Callable[[RunState], bool] = _always
    #: what a stage run on its own needs of earlier stages, from the work directory
    resume: Callable[[RunState, Any], None] = _nothing
    hints: StepHints | None = None
    #: the name of the stage's subflow (None: its steps run in the calling flow)
    flow: str | None = None
    #: items one step result accounts for (progress); None counts steps
    size: Callable[[Any], int] | None = None

    def code(self, *plugins: str) -> str:
        """Hash of the stage's code, plus plugin modules named by the config (an adapter)."""
        return code_hash(tuple(sorted({*self.entries, *plugins})))

    def key(self, config: RunConfig, *fingerprints: str, plugins: tuple[str, ...] = ()) -> str:
        """Cache key of one step: the stage's sections, its code and its inputs' fingerprints."""
        return stage_key(self.name, config, self.sections, self.code(*plugins), *fingerprints)

    def scoped(self, config: RunConfig) -> RunConfig:
        """``config`` as the stage's work sees it: undeclared sections raise on access."""
        return scoped_config(config, self.name, self.sections)
