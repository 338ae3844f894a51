"""``duetflow.flows.lean``: the flow run's stored parameters and settings are what Prefect's own
path gives, only cheaper to get (docs/performance.md, *Prefect start-up*)."""

from __future__ import annotations

import enum
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from prefect import Flow, flow
from prefect.settings import get_current_settings

from duetflow.flows.lean import LeanFlow, json_native, no_heartbeat


class Colour(enum.StrEnum):
    RED = "red"


def _params(**kw: Any) -> dict[str, Any]:
    return kw


NATIVE = [
    _params(config="/x/run.yaml", workdir=None, store="s3://b/p", runner=None, release_id=None,
            synthesize=True, publish=False, overrides=None),
    _params(overrides={"render": {"gap_ms_max": 240.0, "seeds": [1, 2, -3]}, "é": "ü ✓"}),
    _params(n=0, big=2**70, neg=-1.5e-300, empty_list=[], empty_dict={}, nested=[[{"a": None}]]),
    _params(),
]  # fmt: skip
OTHER = [
    _params(config=Path("/x/run.yaml")),
    _params(colour=Colour.RED, n=1),
    _params(pair=(1, 2)),
    _params(x=float("nan")),
    _params(d={1: "int key"}),
    _params(s={"a"}),
]


def _fn(**kw: Any) -> None:
    return None


def test_json_native_only_for_values_the_encoder_returns_unchanged() -> None:
    for p in NATIVE:
        assert all(json_native(v) for v in p.values())
    for p in OTHER:
        assert not all(json_native(v) for v in p.values())
    assert not json_native(math.inf) and not json_native(True.__class__)


@pytest.mark.parametrize("params", NATIVE + OTHER)
def test_stored_parameters_equal_prefects_own(params: dict[str, Any]) -> None:
    ours = LeanFlow(_fn, name="lean").serialize_parameters(dict(params))
    theirs = Flow(_fn, name="plain").serialize_parameters(dict(params))
    assert ours == theirs
    assert [type(v) for v in ours.values()] == [type(v) for v in theirs.values()]
    for k, v in params.items():  # a copy: later changes to the caller's dict do not leak in
        if isinstance(v, dict | list) and v:
            assert ours[k] is not v


def test_json_parameters_do_not_load_fastapi() -> None:
    code = (
        "import sys\n"
        "from duetflow.flows.lean import LeanFlow\n"
        "def f(config: str, overrides: dict | None = None) -> None: ...\n"
        "LeanFlow(f, name='x').serialize_parameters({'config': 'a', 'overrides': {'b': [1]}})\n"
        "assert 'fastapi' not in sys.modules, 'json parameters loaded fastapi'\n"
        "LeanFlow(f, name='x').serialize_parameters({'config': __import__('pathlib').Path('a')})\n"
        "assert 'fastapi.encoders' in sys.modules, 'a Path went around prefect'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_no_heartbeat_changes_that_setting_only() -> None:
    before = get_current_settings()
    assert before.flows.heartbeat_frequency is not None  # Prefect's default: 180 s
    with no_heartbeat():
        inside = get_current_settings()
        assert inside.flows.heartbeat_frequency is None
        a, b = before.model_dump(), inside.model_dump()
        a["flows"].pop("heartbeat_frequency")
        b["flows"].pop("heartbeat_frequency")
        assert a == b
        with no_heartbeat():  # nested and repeated: the same
            assert get_current_settings().flows.heartbeat_frequency is None
    assert get_current_settings() is before
    with no_heartbeat():
        assert get_current_settings().flows.heartbeat_frequency is None


def test_stage_subflows_run_without_heartbeat(
    prefect_server: dict[str, str],
) -> None:
    """Through a real server: the stage subflow's engine sends no heartbeat, and the parent's
    stored parameters are what a plain Prefect flow stores."""
    from prefect.client.orchestration import get_client
    from prefect.context import get_run_context
    from prefect.task_runners import ThreadPoolTaskRunner

    from duetflow.flows.executor import PrefectExecutor
    from duetflow.flows.lean import flow as lean_flow

    seen: dict[str, Any] = {}

    def body() -> str:
        seen["stage"] = get_current_settings().flows.heartbeat_frequency
        return "done"

    @lean_flow(name="lean-parent")
    def parent(config: str, overrides: dict[str, Any] | None = None) -> str:
        seen["parent"] = get_current_settings().flows.heartbeat_frequency
        seen["id"] = get_run_context().flow_run.id  # type: ignore[union-attr]
        return PrefectExecutor(lambda: ThreadPoolTaskRunner(max_workers=1)).stage("ingest", body)

    params = {"config": "/x/run.yaml", "overrides": {"render": {"gap_ms_max": 240.0}}}
    assert parent(**params) == "done"
    # a direct call: Prefect's heartbeat is off for the parent too (its body sends its own,
    # tested below) and for the stage (the parent's covers it)
    assert seen["parent"] is None and seen["stage"] is None
    with get_client(sync_client=True) as client:
        stored = client.read_flow_run(seen["id"]).parameters
    assert stored == flow(name="plain")(parent.fn).serialize_parameters(params)


def _heartbeats(client: Any, run_id: Any, want: int) -> list[Any]:
    """The heartbeat events the server recorded for flow run ``run_id`` (waits for ``want``:
    the server persists events in the background)."""
    import time

    from prefect.events.filters import EventFilter, EventNameFilter, EventResourceFilter

    flt = EventFilter(
        event=EventNameFilter(name=["prefect.flow-run.heartbeat"]),
        resource=EventResourceFilter(id=[f"prefect.flow-run.{run_id}"]),
    )
    for _ in range(60):
        events = list(client.read_events(filter=flt, limit=50).events)
        if len(events) >= want:
            return events
        time.sleep(0.5)
    return events


def test_a_direct_run_sends_one_heartbeat_itself_and_stops_it_at_the_end(
    prefect_server: dict[str, str],
) -> None:
    """Called directly, Prefect's heartbeat is off and the body's own sends the same event
    (resource, flow, tags) once at the start; called as a subflow, Prefect decides as for any
    flow. Never two heartbeats for one run; the thread is gone when the flow returns."""
    import threading

    from prefect import tags
    from prefect.client.orchestration import get_client
    from prefect.context import get_run_context
    from prefect.events.worker import EventsWorker

    from duetflow.flows.lean import flow as lean_flow
    from duetflow.flows.lean import flow_heartbeat

    seen: dict[str, Any] = {}

    @lean_flow(name="lean-heartbeat")
    def beating(x: int) -> int:
        seen.setdefault("setting", get_current_settings().flows.heartbeat_frequency)
        seen.setdefault("id", get_run_context().flow_run.id)  # type: ignore[union-attr]
        with flow_heartbeat():
            seen["threads"] = {t.name for t in threading.enumerate()}
            return x + 1

    @flow(name="plain-parent")
    def parent() -> int:
        return beating(1)

    with tags("lean-tag"):
        assert beating(1) == 2
    assert seen["setting"] is None and "duetflow-heartbeat" in seen["threads"]
    assert "duetflow-heartbeat" not in {t.name for t in threading.enumerate()}
    direct = seen.pop("id")
    seen.clear()
    assert parent() == 2  # as a subflow: Prefect's engine sends its heartbeat, as for any flow
    assert seen["setting"] == 180 and "duetflow-heartbeat" not in seen["threads"]
    sub = seen["id"]
    EventsWorker.drain_all(timeout=10)
    with get_client(sync_client=True) as client:
        assert len(_heartbeats(client, sub, want=1)) == 1  # Prefect's once, ours none
        events = _heartbeats(client, direct, want=1)
        assert len(events) == 1  # ours once, Prefect's none
        ev = events[0]
        related = {r.id: r.role for r in ev.related}
        run = client.read_flow_run(direct)
        assert related[f"prefect.flow.{run.flow_id}"] == "flow"
        assert related["prefect.tag.lean-tag"] == "tag"
        assert ev.resource.name == run.name
