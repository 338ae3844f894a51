"""What a flow run costs Prefect's client beyond the work, made smaller without changing it.

Three fixed costs of every ``duetflow run`` (docs/performance.md, *Prefect start-up*):

* a flow run's parameters are stored through FastAPI's ``jsonable_encoder``, whose first use
  imports FastAPI and Starlette into the run's process (~0.3 s of CPU): :class:`LeanFlow`
  stores parameters that are JSON already (strings, numbers, booleans, ``None``, lists and
  string-keyed dicts of them) as they are — what the encoder returns for them — and hands any
  other value to Prefect's own serialization;
* the stage subflows run without a heartbeat thread of their own (the parent flow's covers
  them; a subflow's thread sleeps in whole seconds and is joined at its end): Prefect's
  ``temporary_settings`` validates a whole new settings tree for that each time (~0.15 s of CPU
  per stage), :func:`no_heartbeat` builds the changed settings once per process by copying;
* the parent flow's heartbeat thread sleeps in whole seconds and is joined when the flow ends:
  ~0.5 s of idle wall per run (0 to 1 s). Called directly (not as a subflow), a
  :class:`LeanFlow` runs with Prefect's heartbeat off and its body sends the same heartbeat
  itself (:func:`flow_heartbeat`: the same event, resource and related resources, at the same
  frequency), from a thread that waits on an event and so stops at once. Run any other way
  (a worker's ``prefect.engine``, a subflow), Prefect's own heartbeat runs and
  :func:`flow_heartbeat` does nothing: never two heartbeats, never none.
"""

from __future__ import annotations

import contextvars
import logging
import math
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar

from prefect import Flow
from prefect.context import FlowRunContext, SettingsContext, get_settings_context
from prefect.settings import get_current_settings

log = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

_NATIVE = (str, bool, int, type(None))


def json_native(value: Any) -> bool:
    """True for a value JSON holds as it is: what ``jsonable_encoder`` returns unchanged."""
    if isinstance(value, _NATIVE):
        return type(value) in (str, bool, int, type(None))  # no str/int subclasses (enums)
    if type(value) is float:
        return math.isfinite(value)
    if type(value) is dict:
        return all(type(k) is str and json_native(v) for k, v in value.items())
    if type(value) is list:
        return all(json_native(v) for v in value)
    return False


def _copy(value: Any) -> Any:
    if type(value) is dict:
        return {k: _copy(v) for k, v in value.items()}
    if type(value) is list:
        return [_copy(v) for v in value]
    return value


#: seconds between the heartbeats :func:`flow_heartbeat` sends (None: Prefect sends its own)
_OWN_HEARTBEAT: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "duetflow_own_heartbeat", default=None
)
#: Prefect's floor on the heartbeat interval (``prefect.flow_engine.MINIMUM_HEARTBEAT_INTERVAL``)
MINIMUM_HEARTBEAT_S = 30


class LeanFlow(Flow[P, R]):
    """A Prefect flow whose JSON-native parameters are stored without FastAPI's encoder, and
    whose body sends its heartbeat itself when called directly: the body must run inside
    :func:`flow_heartbeat` (``build_dataset``'s does), or a direct run sends none."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        every = get_current_settings().flows.heartbeat_frequency
        if every is None or FlowRunContext.get() is not None:  # heartbeats off, or a subflow:
            token = _OWN_HEARTBEAT.set(None)  # Prefect's engine decides, as for any flow
            try:
                return super().__call__(*args, **kwargs)
            finally:
                _OWN_HEARTBEAT.reset(token)
        token = _OWN_HEARTBEAT.set(max(every, MINIMUM_HEARTBEAT_S))
        try:
            with no_heartbeat():
                return super().__call__(*args, **kwargs)
        finally:
            _OWN_HEARTBEAT.reset(token)

    def serialize_parameters(self, parameters: dict[str, Any]) -> dict[str, Any]:
        if all(json_native(v) for v in parameters.values()):
            return {k: _copy(v) for k, v in parameters.items()}
        return super().serialize_parameters(parameters)


def flow(*, name: str, **options: Any) -> Callable[[Callable[P, R]], LeanFlow[P, R]]:
    """``@flow(name=...)`` as Prefect's decorator (its keyword options), building a
    :class:`LeanFlow`. Named ``flow`` on purpose: ``prefect deploy`` finds a deployment's
    entry point in the source by a function decorated ``@flow(...)``."""

    def decorate(fn: Callable[P, R]) -> LeanFlow[P, R]:
        return LeanFlow(fn, name=name, **options)

    return decorate


#: the last settings seen and their copy without a heartbeat
_QUIET: list[tuple[Any, Any]] = []


@contextmanager
def no_heartbeat() -> Iterator[None]:
    """Flow runs started inside the block send no heartbeat (``flows.heartbeat_frequency``
    None); every other setting is the current one, as it is (not read again from the
    environment)."""
    ctx = get_settings_context()
    settings = ctx.settings
    if not _QUIET or _QUIET[0][0] is not settings:
        flows = settings.flows.model_copy(update={"heartbeat_frequency": None})
        _QUIET[:] = [(settings, settings.model_copy(update={"flows": flows}))]
    with SettingsContext(profile=ctx.profile, settings=_QUIET[0][1]):
        yield


@contextmanager
def flow_heartbeat() -> Iterator[None]:
    """The running flow's heartbeat, for the length of the block, when its :class:`LeanFlow`
    turned Prefect's off (else nothing): the event Prefect's engine sends
    (``prefect.flow-run.heartbeat``, the flow run as resource, its flow, deployment and tags as
    related resources), at once and every ``flows.heartbeat_frequency`` seconds; the thread
    stops as the block ends."""
    every = _OWN_HEARTBEAT.get()
    ctx = FlowRunContext.get()
    if every is None or ctx is None or ctx.flow_run is None:
        yield
        return
    import prefect
    from prefect.events import RelatedResource, emit_event
    from prefect.events.related import tags_as_related_resources

    run = ctx.flow_run
    resource = {
        "prefect.resource.id": f"prefect.flow-run.{run.id}",
        "prefect.resource.name": run.name or "",
        "prefect.version": prefect.__version__,
    }
    related: list[RelatedResource] = []
    if run.flow_id:
        related.append(
            RelatedResource.model_validate(
                {
                    "prefect.resource.id": f"prefect.flow.{run.flow_id}",
                    "prefect.resource.role": "flow",
                    "prefect.resource.name": ctx.flow.name if ctx.flow else "",
                }
            )
        )
    if run.deployment_id:
        related.append(
            RelatedResource.model_validate(
                {
                    "prefect.resource.id": f"prefect.deployment.{run.deployment_id}",
                    "prefect.resource.role": "deployment",
                }
            )
        )
    related += tags_as_related_resources(set(run.tags or []))
    stop = threading.Event()

    def beat() -> None:
        while True:
            try:
                emit_event(event="prefect.flow-run.heartbeat", resource=resource, related=related)
            except Exception:  # as Prefect's own: a missed heartbeat never fails the run
                log.debug("failed to emit a heartbeat", exc_info=True)
            if stop.wait(every):
                return

    thread = threading.Thread(
        target=contextvars.copy_context().run, args=(beat,), daemon=True,
        name="duetflow-heartbeat",
    )  # fmt: skip
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=2)
