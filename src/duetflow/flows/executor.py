"""The Prefect executor: the pipeline's steps as Prefect tasks, its stages as subflows.

:func:`duetflow.pipeline.driver.run_stage` is written against
:class:`duetflow.pipeline.executors.Executor`; this one submits a stage's step function as its
task (:func:`duetflow.tasks.task_of`: name, tags, retries from the stage's hints) on the task
runner the config names, and runs each stage as a subflow, so the UI shows ingest / process /
synthesize / publish with their task runs. Nothing here decides what a run does.

A step's tags (``duetflow-tts``, ``duetflow-io``) exist for tag concurrency limits. Prefect's
task engine asks the server for a slot of every tag a task run carries, limit or not: a write
transaction per task run, which on a SQLite server races the server's own event writes and,
when it loses ("database is locked", HTTP 503), costs the client's fixed 2 s retry
(docs/performance.md, *Prefect start-up*). So a task run carries the tags of its step that the
server holds an active limit for, read once per executor (one read per tag): a limit is
honoured as before, a tag nobody limits costs nothing.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable
from functools import cache
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

log = logging.getLogger(__name__)

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
        #: tag -> whether the server holds an active limit for it (read once per executor)
        self._limited: dict[str, bool] = {}

    def task(self, spec: StageSpec) -> Any:
        """The Prefect task of ``spec``'s step, with the tags the server limits (see above)."""
        task = task_of(spec)
        if not task.tags:
            return task
        keep = frozenset(t for t in task.tags if self._is_limited(t))
        return task if keep == task.tags else _with_tags(task, keep)

    def _is_limited(self, tag: str) -> bool:
        if tag not in self._limited:
            self._limited[tag] = tag_limited(tag)
        return self._limited[tag]

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
        return self.task(spec)(*args)

    def map(
        self,
        spec: StageSpec,
        items: Iterable[T],
        *args: Any,
        batch: Batch,
        size: Callable[[Any], int] | None = None,
    ) -> list[Any]:
        task = self.task(spec)
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


@cache
def _with_tags(task: Any, tags: frozenset[str]) -> Any:
    return task.with_options(tags=set(tags))


def tag_limited(tag: str) -> bool:
    """Whether the run's server holds an active concurrency limit for task tag ``tag`` (the
    limit Prefect's task engine would take a slot of, ``tag:<tag>``). An answer other than
    "no such limit" (a server error) counts as limited: the task keeps its tag, as in Prefect."""
    from prefect.client.orchestration import SyncPrefectClient
    from prefect.context import FlowRunContext
    from prefect.exceptions import ObjectNotFound

    ctx = FlowRunContext.get()
    client = ctx.client if ctx is not None else None
    if not isinstance(client, SyncPrefectClient):  # not in a (sync) flow run: as Prefect does
        return True
    try:
        limit = client.read_global_concurrency_limit_by_name(f"tag:{tag}")
    except ObjectNotFound:
        return False
    except Exception:
        log.debug("could not read the concurrency limit of tag %s", tag, exc_info=True)
        return True
    return bool(limit.active)
