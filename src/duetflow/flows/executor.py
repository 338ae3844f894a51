"""The Prefect executor: the pipeline's steps as Prefect tasks, its stages as subflows.

:func:`duetflow.pipeline.driver.run_stage` is written against
:class:`duetflow.pipeline.executors.Executor`; this one submits a stage's step function as its
task (:func:`duetflow.tasks.task_of`: name, tags, retries from the stage's hints) on the task
runner the config names, and runs each stage as a subflow, so the UI shows ingest / process /
synthesize / publish with their task runs. Nothing here decides what a run does.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from prefect import flow, get_run_logger
from prefect.futures import PrefectFuture
from prefect.task_runners import TaskRunner

from duetflow.flows.lean import no_heartbeat
from duetflow.pipeline.executors import Batch
from duetflow.progress import Progress
from duetflow.tasks import task_of

if TYPE_CHECKING:
    from duetflow.pipeline.stage import StageSpec

T = TypeVar("T")
R = TypeVar("R")

#: steps in flight when a batch names no window
DEFAULT_WINDOW = 8


def submit_windowed(
    submit: Callable[[T], PrefectFuture[R]],
    items: Iterable[T],
    window: int,
    on_result: Callable[[int, R], None] | None = None,
) -> list[R]:
    """Submit ``items`` keeping at most ``window`` futures pending; results in item order.

    Waiting on the oldest future (not the first to finish) keeps the code simple and the order
    deterministic; with shards of similar size the pipeline stays full. The flow's memory
    follows the window, not the corpus size.
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


class PrefectExecutor:
    """Steps as Prefect tasks; stages as subflows on ``task_runner()`` (none: same flow).

    ``task_runner`` builds a fresh runner per stage subflow (Prefect fixes a flow's runner
    when it is created); without it the steps run on the calling flow's own runner.
    """

    def __init__(self, task_runner: Callable[[], TaskRunner[Any]] | None = None) -> None:
        self.task_runner = task_runner

    def stage(self, name: str, body: Callable[[], R]) -> R:
        if self.task_runner is None:
            return body()

        def run_stage() -> R:
            return body()

        sub = flow(name=name, task_runner=self.task_runner(), validate_parameters=False)
        # The parent flow's heartbeat covers its stages (a crash of one is the parent's); a
        # subflow's own heartbeat thread sleeps in whole seconds and is joined at the end,
        # ~0.5 s of idle wall per stage (docs/performance.md, *Prefect start-up*).
        with no_heartbeat():
            return sub(run_stage)()

    def call(self, spec: StageSpec, *args: Any) -> Any:
        return task_of(spec)(*args)

    def map(
        self,
        spec: StageSpec,
        items: Iterable[T],
        *args: Any,
        batch: Batch,
        size: Callable[[Any], int] | None = None,
    ) -> list[Any]:
        task = task_of(spec)
        logger = get_run_logger()
        bar = Progress(batch.stage, batch.label, batch.total)

        def report(done: int, result: Any) -> None:
            bar.advance(size(result) if size is not None else 1)
            if done % 10 == 0:
                logger.info(
                    "%s %s: %d steps, %d/%s items done", batch.stage, batch.label, done,
                    bar.done, batch.total if batch.total is not None else "?",
                )  # fmt: skip

        return submit_windowed(
            lambda item: task.submit(item, *args), items, batch.window or DEFAULT_WINDOW, report
        )
