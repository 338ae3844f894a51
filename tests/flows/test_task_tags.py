"""A step's tags on its task runs (``duetflow.flows.executor``): a tag the server holds an
active concurrency limit for is kept and its limit honoured (a slot is held while the step
runs); a tag nobody limits is left off the task run, so Prefect's engine asks no slot of it
(a server write per task run that, on SQLite, can lose a race and cost a 2 s retry:
docs/performance.md, *Prefect start-up*). Through the test session's real server."""

from __future__ import annotations

from typing import Any

import pytest
from prefect import flow
from prefect.task_runners import ThreadPoolTaskRunner

from duetflow.flows.executor import PrefectExecutor, tag_limited
from duetflow.pipeline.executors import Batch
from duetflow.pipeline.stage import StageSpec, StepHints
from duetflow.tasks import task_of

pytestmark = [pytest.mark.prefect]

LIMITED = "duetflow-test-limited"
FREE = "duetflow-test-free"
PAUSED = "duetflow-test-paused"
SEEN: list[dict[str, Any]] = []


def _step(item: int) -> int:
    """Record, while the step runs, its task run's tags and the slots its limits hold."""
    from prefect.client.orchestration import get_client
    from prefect.context import TaskRunContext

    ctx = TaskRunContext.get()
    assert ctx is not None
    with get_client(sync_client=True) as client:
        held = {
            name: client.read_global_concurrency_limit_by_name(f"tag:{name}").active_slots
            for name in (LIMITED, PAUSED)
        }
    SEEN.append({"tags": set(ctx.task_run.tags), "held": held})
    return item * 2


SPEC = StageSpec(
    "tagged",
    ("seed",),
    (__name__,),
    inputs="numbers",
    outputs="doubles",
    step=_step,
    hints=StepHints("tagged-step", tags=(LIMITED, FREE, PAUSED)),
)


def test_task_runs_carry_the_limited_tags_only_and_their_limits_hold_a_slot(
    prefect_server: dict[str, str],
) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import (
        GlobalConcurrencyLimitCreate,
        GlobalConcurrencyLimitUpdate,
    )

    with get_client(sync_client=True) as client:
        for name in (LIMITED, PAUSED):
            client.create_global_concurrency_limit(
                GlobalConcurrencyLimitCreate(name=f"tag:{name}", limit=1)
            )
        client.update_global_concurrency_limit(
            f"tag:{PAUSED}", GlobalConcurrencyLimitUpdate(active=False)
        )
    # the task of the spec keeps every tag of its hints (outside a run nothing is asked)
    assert task_of(SPEC).tags == {LIMITED, FREE, PAUSED}
    assert tag_limited(FREE) is True

    @flow(name="tagged-parent", task_runner=ThreadPoolTaskRunner(max_workers=2))
    def parent() -> tuple[list[int], int, dict[str, bool]]:
        ex = PrefectExecutor()
        doubled = ex.map(SPEC, [1, 2, 3], batch=Batch("tagged"))
        one = ex.call(SPEC, 5)
        return doubled, one, dict(ex._limited)

    SEEN.clear()
    doubled, one, asked = parent()
    assert doubled == [2, 4, 6] and one == 10
    # each tag asked of the server once per executor; only the active limit counts
    assert asked == {LIMITED: True, FREE: False, PAUSED: False}
    assert len(SEEN) == 4
    for seen in SEEN:
        assert seen["tags"] == {LIMITED}
        # the limited tag's slot is held while the step runs (limit 1: the steps took turns)
        assert seen["held"] == {LIMITED: 1, PAUSED: 0}
    with get_client(sync_client=True) as client:
        assert client.read_global_concurrency_limit_by_name(f"tag:{LIMITED}").active_slots == 0
