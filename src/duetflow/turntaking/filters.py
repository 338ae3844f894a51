"""Dialogue filters: named, composable predicates that keep a window or say why not.

Each filter is ``(dialogue, ctx) -> Keep | Reject`` and is looked up by name in a registry, so
``filters.order`` in the run config decides which run and in what order. :func:`apply_filters`
runs all of them (so a rejection's detail lists *every* failing reason) and records the first
failure's reason code. A plugin adds a filter with :func:`register_filter` or through the
``duetflow.filters`` entry-point group.

Reason codes: ``collection_header``, ``unintelligible``, ``too_short``, ``too_long``,
``too_few_turns``, ``interruption``, ``non_floor_interruption``, ``mono_overlap``,
``imbalanced``, ``language``, ``topic``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from importlib.metadata import entry_points
from typing import Any, TypeAlias

from duetflow.config import RunConfig
from duetflow.errors import ConfigError
from duetflow.records.dialogue import Dialogue, MixedMonoSource, Turn, TurnKind
from duetflow.turntaking.overlaps import (
    BalanceStats,
    OverlapClass,
    OverlapEvent,
    balance,
    classify_overlaps,
)
from duetflow.turntaking.rendered_length import LengthRange, predict_length
from duetflow.turntaking.windows import HEADER_LABEL

log = logging.getLogger(__name__)

__all__ = [
    "FilterContext",
    "FilterFn",
    "FilterResult",
    "Keep",
    "Reject",
    "apply_filters",
    "available_filters",
    "get_filter",
    "register_filter",
]

ENTRY_POINT_GROUP = "duetflow.filters"

#: The run-config knobs that decide each reason code of the window and filter stages (and the
#: renderer's length check), declared once, next to the filters that emit them: ``duetflow
#: rejections`` names them with the values the run used (each reason's detail records them).
#: Ingest reasons are facts about the input, decided by no knob.
REASON_KNOBS: dict[str, tuple[str, ...]] = {
    "collection_header": ("filters.collection_header_patterns",),
    "unintelligible": ("filters.unintelligible_max_share",),
    "too_short": ("window.min_s", "window.margin_s"),
    "too_long": ("window.max_s", "window.margin_s"),
    "too_few_turns": ("filters.min_turns_per_speaker",),
    "interruption": ("filters.max_interruptions", "turns.terminal_overlap_s"),
    "non_floor_interruption": ("filters.max_non_floor_interruptions",),
    # the filter itself: leave ``mono_overlaps`` out of the order to keep such windows
    "mono_overlap": ("filters.order", "turns.min_overlap_s"),
    "imbalanced": ("filters.balance_min", "filters.balance_max"),
    "language": ("filters.languages",),
    "topic": ("filters.topics",),
    "no_window": ("window.min_s", "window.max_s", "window.policy"),
    # applied to rendered audio (pipeline.process, tts.pipeline; duetflow.rendering.quality)
    "dnsmos_ovrl_low": ("filters.min_dnsmos_ovrl", "quality.dnsmos"),
}


@dataclass(frozen=True)
class Keep:
    """The filter has no objection."""


@dataclass(frozen=True)
class Reject:
    """The filter rejects the dialogue: a reason code plus JSON-able details."""

    reason: str
    details: Mapping[str, Any] = field(default_factory=dict)


Outcome: TypeAlias = Keep | Reject
KEEP = Keep()


class FilterContext:
    """What filters share about one dialogue, computed once and only when first asked for.

    ``events``: the overlap classification of the dialogue's turns when the caller already has it
    (:func:`~duetflow.turntaking.overlaps.classify_overlaps` of the same turns and
    ``config.turns``); every other shared fact is derived from it.
    """

    def __init__(
        self,
        dialogue: Dialogue,
        config: RunConfig,
        events: Sequence[OverlapEvent] | None = None,
    ) -> None:
        self.dialogue = dialogue
        self.config = config
        self._given_events = None if events is None else list(events)

    @cached_property
    def events(self) -> list[OverlapEvent]:
        if self._given_events is not None:
            return self._given_events
        return classify_overlaps(self.dialogue.turns, self.config.turns)

    @cached_property
    def balance(self) -> BalanceStats:
        speakers = [s.id for s in self.dialogue.speakers]
        return balance(self.dialogue.turns, self.config.turns, speakers, self.events)

    @cached_property
    def length(self) -> LengthRange | None:
        """Predicted rendered length (:mod:`duetflow.turntaking.rendered_length`)."""
        return predict_length(self.dialogue, self.config, self.events)

    @cached_property
    def speech_turns(self) -> list[Turn]:
        return [t for t in self.dialogue.turns if t.kind is not TurnKind.NONSPEECH]


FilterFn: TypeAlias = Callable[[Dialogue, FilterContext], Outcome]

_REGISTRY: dict[str, FilterFn] = {}
_plugins_loaded = False


def register_filter(name: str) -> Callable[[FilterFn], FilterFn]:
    """Decorator: make ``fn`` available as ``name`` in ``filters.order``."""

    def deco(fn: FilterFn) -> FilterFn:
        _REGISTRY[name] = fn
        return fn

    return deco


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name not in _REGISTRY:
            _REGISTRY[ep.name] = ep.load()


def available_filters() -> list[str]:
    _load_plugins()
    return sorted(_REGISTRY)


def get_filter(name: str) -> FilterFn:
    """The filter called ``name``; unknown names are a configuration error."""
    if name not in _REGISTRY:
        _load_plugins()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ConfigError(
            f"filters.order: unknown filter '{name}' (known: {', '.join(available_filters())})"
        ) from None


@dataclass(frozen=True)
class FilterResult:
    """Verdict of all configured filters; ``reason`` is the first failure's code (None if kept)."""

    kept: bool
    reason: str | None = None
    failing: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def detail(self) -> dict[str, Any]:
        """JSON-able detail for a ``Rejection``: every failing reason with its details."""
        return {"failing": [{"reason": r, **d} for r, d in self.failing]}


def apply_filters(
    dialogue: Dialogue, config: RunConfig, ctx: FilterContext | None = None
) -> FilterResult:
    """Run every filter of ``config.filters.order`` (in order) on ``dialogue``."""
    fns = [(name, get_filter(name)) for name in config.filters.order]
    ctx = ctx or FilterContext(dialogue, config)
    failing: list[tuple[str, dict[str, Any]]] = []
    for name, fn in fns:
        out = fn(dialogue, ctx)
        if isinstance(out, Reject):
            failing.append((out.reason, {"filter": name, **dict(out.details)}))
    if not failing:
        return FilterResult(kept=True)
    return FilterResult(kept=False, reason=failing[0][0], failing=failing)


# --- the built-in filters -------------------------------------------------------------------------

_TAG = re.compile(r"\[[^\]]*\]")
_UNINTELLIGIBLE_TAGS = {"[*]"}
_PUNCT = re.compile(r"[\s\W_]+", re.UNICODE)


def is_unintelligible(turn: Turn) -> bool:
    """Only ``[*]`` (RAMC: unintelligible / foreign) and punctuation, or labelled so."""
    if str(turn.labels.get("unintelligible", "")).lower() in ("1", "true", "yes"):
        return True
    tags = _TAG.findall(turn.text)
    if not tags or any(t not in _UNINTELLIGIBLE_TAGS for t in tags):
        return False
    return not _PUNCT.sub("", _TAG.sub("", turn.text))


@register_filter("collection_header")
def collection_header(dialogue: Dialogue, ctx: FilterContext) -> Outcome:
    """Reject excerpts containing a spoken corpus collection header (RAMC's first segment)."""
    pats = [re.compile(p) for p in ctx.config.filters.collection_header_patterns]
    for i, t in enumerate(dialogue.turns):
        flag = str(t.labels.get(HEADER_LABEL, "")).lower()
        if flag not in ("", "0", "false", "no") or any(p.search(t.text) for p in pats):
            return Reject("collection_header", {"turn_index": i, "text": t.text[:80]})
    return KEEP


@register_filter("unintelligible")
def unintelligible(dialogue: Dialogue, ctx: FilterContext) -> Outcome:
    """Reject when too many speech turns are only unintelligible marks."""
    speech = ctx.speech_turns
    if not speech:
        return KEEP
    n = sum(1 for t in speech if is_unintelligible(t))
    share = n / len(speech)
    limit = ctx.config.filters.unintelligible_max_share
    if n and share > limit:
        return Reject("unintelligible", {"share": round(share, 4), "max_share": limit, "turns": n})
    return KEEP


@register_filter("duration")
def duration(dialogue: Dialogue, ctx: FilterContext) -> Outcome:
    """Keep what will *render* to ``window.min_s``–``window.max_s`` seconds (less the margin).

    The length is predicted from the turns with the renderer's own layout
    (:mod:`duetflow.turntaking.rendered_length`), for every gap it may draw; the rendered audio
    is checked again after rendering.
    """
    w = ctx.config.window
    lo, hi = w.select_range
    r = ctx.length
    detail = {
        "predicted_s": r.to_list() if r else None,
        "source_s": round(dialogue.duration_s, 3),
        "select_range_s": [round(lo, 3), round(hi, 3)],
    }
    if r is None or r.lo_s < lo - 1e-9:
        return Reject("too_short", {**detail, "min_s": w.min_s})
    if r.hi_s > hi + 1e-9:
        return Reject("too_long", {**detail, "max_s": w.max_s})
    return KEEP


@register_filter("min_turns")
def min_turns(dialogue: Dialogue, ctx: FilterContext) -> Outcome:
    """Each party must hold the floor a minimum number of times (backchannels do not count)."""
    need = ctx.config.filters.min_turns_per_speaker
    counts = {s.id: ctx.balance.counts.get(s.id, 0) for s in dialogue.speakers}
    short = {s: c for s, c in counts.items() if c < need}
    if short:
        return Reject("too_few_turns", {"counts": counts, "min_turns_per_speaker": need})
    return KEEP


@register_filter("interruptions")
def interruptions(dialogue: Dialogue, ctx: FilterContext) -> Outcome:
    """Reject floor-taking interruptions beyond the allowance (and optionally non-floor ones)."""
    fc = ctx.config.filters
    floor = [e for e in ctx.events if e.klass is OverlapClass.INTERRUPTION]
    if len(floor) > fc.max_interruptions:
        return Reject(
            "interruption",
            {
                "count": len(floor),
                "max": fc.max_interruptions,
                "at_s": [round(e.start, 3) for e in floor[:10]],
                "events": [_event_detail(dialogue, e) for e in floor[:10]],
                "terminal_overlap_s": ctx.config.turns.terminal_overlap_s,
            },
        )
    if fc.max_non_floor_interruptions is not None:
        nf = [e for e in ctx.events if e.klass is OverlapClass.NON_FLOOR_INTERRUPTION]
        if len(nf) > fc.max_non_floor_interruptions:
            return Reject(
                "non_floor_interruption",
                {
                    "count": len(nf),
                    "max": fc.max_non_floor_interruptions,
                    "at_s": [round(e.start, 3) for e in nf[:10]],
                },
            )
    return KEEP


def _event_detail(dialogue: Dialogue, e: OverlapEvent) -> dict[str, Any]:
    """Who came in on whom, when, and how long before the host's turn ended."""
    turns = dialogue.turns
    host_end = turns[e.host_turn_index].end if 0 <= e.host_turn_index < len(turns) else e.end
    return {
        "at_s": round(e.start, 3),
        "listener": e.listener,
        "host": e.speaker,
        "before_host_end_s": round(host_end - e.start, 3),
    }


@register_filter("mono_overlaps")
def mono_overlaps(dialogue: Dialogue, ctx: FilterContext) -> Outcome:
    """Reject a mixed-mono window holding an overlapped speaker change (a terminal overlap) or
    a talked-over bid (a non-floor-taking interruption).

    On a mono mix neither can be re-timed (both voices are in one channel, the renderer keeps
    them as recorded), while a separable source lays both end to end and every change of every
    category is a 180–230 ms gap: one overlap would tell the window's category apart
    (docs/equalisation.md). Backchannels ride inside their host turn in every layout
    (``render.backchannels``) and pass. Separable sources always pass."""
    if not isinstance(dialogue.source, MixedMonoSource):
        return KEEP
    marks = (OverlapClass.TERMINAL_OVERLAP, OverlapClass.NON_FLOOR_INTERRUPTION)
    found = [e for e in ctx.events if e.klass in marks]
    if found:
        return Reject(
            "mono_overlap",
            {
                "count": len(found),
                "at_s": [round(e.start, 3) for e in found[:10]],
                "overlap_s": [round(e.end - e.start, 3) for e in found[:10]],
                "events": [_event_detail(dialogue, e) for e in found[:10]],
            },
        )
    return KEEP


@register_filter("balance")
def balance_filter(dialogue: Dialogue, ctx: FilterContext) -> Outcome:
    """Each party's utterance share must lie in ``[balance_min, balance_max]``."""
    fc = ctx.config.filters
    shares = {s.id: ctx.balance.utterance_share.get(s.id, 0.0) for s in dialogue.speakers}
    if any(not (fc.balance_min - 1e-9 <= v <= fc.balance_max + 1e-9) for v in shares.values()):
        return Reject(
            "imbalanced",
            {
                "utterance_share": {k: round(v, 4) for k, v in shares.items()},
                "time_share": {k: round(v, 4) for k, v in ctx.balance.time_share.items()},
                "band": [fc.balance_min, fc.balance_max],
            },
        )
    return KEEP


@register_filter("language")
def language(dialogue: Dialogue, ctx: FilterContext) -> Outcome:
    """Keep only the configured languages (dialogue language and any speaker language)."""
    allowed = ctx.config.filters.languages
    if allowed is None:
        return KEEP
    langs = {dialogue.language} | {s.language for s in dialogue.speakers if s.language}
    bad = sorted(lang for lang in langs if lang not in allowed)
    if bad:
        return Reject("language", {"languages": bad, "allowed": list(allowed)})
    return KEEP


@register_filter("topics")
def topics(dialogue: Dialogue, ctx: FilterContext) -> Outcome:
    """Keep only the configured taxonomy topics (``filters.topics``; None keeps every topic)."""
    allowed = ctx.config.filters.topics
    if allowed is None or dialogue.topic in allowed:
        return KEEP
    return Reject("topic", {"topic": dialogue.topic, "allowed": list(allowed)})
