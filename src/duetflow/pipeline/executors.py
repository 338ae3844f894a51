"""How a run executes its steps: in this process (:class:`PlainExecutor`) or as Prefect tasks.

The pipeline (:func:`duetflow.pipeline.driver.run_stage`, looped by ``run_pipeline``) is written
once against the :class:`Executor` protocol; an executor decides only *where* a stage's step
function (``spec.step``) runs. :class:`PlainExecutor` calls it here, one after the other; the
Prefect executor (``duetflow.flows.executor.PrefectExecutor``) submits the same function as the
stage's task (``duetflow.tasks.task_of(spec)``) and groups a stage's steps in a subflow. Step
functions are content-addressed and write their outputs by key, so both give byte-identical
work directories and releases.

No Prefect here: this module is part of the library core.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from duetflow.progress import Progress

if TYPE_CHECKING:
    from duetflow.pipeline.stage import StageSpec

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Batch:
    """What :meth:`Executor.map` reports about a list of steps: stage, label, total items.

    ``total`` counts items (dialogues, scripts), not steps; None when unknown in advance.
    ``window`` bounds the steps in flight at once (0: the executor's own bound).
    """

    stage: str
    label: str = ""
    total: int | None = None
    window: int = 0


class Executor(Protocol):
    """Where the pipeline's step functions run (see the module docstring)."""

    def stage(self, name: str, body: Callable[[], R]) -> R:
        """Run ``body`` (the steps of one stage) as one unit; returns what it returns."""
        ...

    def call(self, spec: StageSpec, *args: Any) -> Any:
        """Run one step ``spec.step(*args)`` in the caller's process and return its result."""
        ...

    def map(
        self,
        spec: StageSpec,
        items: Iterable[T],
        *args: Any,
        batch: Batch,
        size: Callable[[Any], int] | None = None,
    ) -> list[Any]:
        """``[spec.step(item, *args) for item in items]``, results in item order.

        ``items`` may be a stream: it is consumed as steps are started, never materialised by
        the executor. ``size`` gives the items one result accounts for (progress).
        """
        ...


class PlainExecutor:
    """Every step in this process, one after the other (the reference and the bench baseline)."""

    def stage(self, name: str, body: Callable[[], R]) -> R:
        return body()

    def call(self, spec: StageSpec, *args: Any) -> Any:
        return _step(spec)(*args)

    def map(
        self,
        spec: StageSpec,
        items: Iterable[T],
        *args: Any,
        batch: Batch,
        size: Callable[[Any], int] | None = None,
    ) -> list[Any]:
        fn = _step(spec)
        bar = Progress(batch.stage, batch.label, batch.total)
        out: list[Any] = []
        for item in items:
            out.append(fn(item, *args))
            bar.advance(size(out[-1]) if size is not None else 1)
        return out


def _step(spec: StageSpec) -> Callable[..., Any]:
    if spec.step is None:
        raise TypeError(f"stage {spec.name!r} has no step function")
    return spec.step
