"""Cut long dialogues into excerpts that render to 20–60 s, at turn boundaries.

A boundary is only ever placed where no turn (of either speaker, speech or not) is running, so
no excerpt cuts a turn, overlapped ones included. An excerpt starts at the start of a speech
turn that is not a backchannel, not the listener side of an overlap and not a corpus collection
header, and ends at the end of a speech turn that is not a backchannel. Its length is the length
it will *render* to (:mod:`~duetflow.turntaking.rendered_length`: re-timed gaps, capped pauses,
trimmed edges), which must lie inside ``window.min_s``–``window.max_s`` less ``window.margin_s``
at both ends, whatever gaps are drawn. Which excerpts are chosen is the ``window.policy``:

* ``greedy`` (default): left to right, the longest excerpt from the earliest possible start,
  then the next one from the first possible start after it. Few long excerpts, no shared audio.
* ``non_overlapping``: the set of non-overlapping excerpts that covers the most time
  (exact, weighted interval scheduling).
* ``max_count``: the largest number of non-overlapping excerpts (earliest end first, which is
  optimal for interval scheduling); excerpts come out close to ``window.min_s``.

All three are deterministic and never return overlapping excerpts.
"""

from __future__ import annotations

import bisect
import logging
import re
from collections.abc import Sequence
from dataclasses import replace

from duetflow.config import RenderConfig, TurnsConfig, WindowConfig
from duetflow.records.dialogue import Dialogue, MixedMonoSource, Turn, TurnKind, window_id
from duetflow.turntaking.overlaps import (
    OverlapClass,
    OverlapEvent,
    classify_overlaps,
    cut_points,
    listener_indices,
)
from duetflow.turntaking.rendered_length import LengthModel

log = logging.getLogger(__name__)

__all__ = ["candidate_windows", "make_windows", "window_dialogue"]

_EPS = 1e-9
HEADER_LABEL = "collection_header"


def _is_header(turn: Turn, patterns: Sequence[re.Pattern[str]]) -> bool:
    flag = str(turn.labels.get(HEADER_LABEL, "")).lower()
    if flag not in ("", "0", "false", "no"):
        return True
    return any(p.search(turn.text) for p in patterns)


def _valid_starts(
    turns: Sequence[Turn], events: Sequence[OverlapEvent], header_patterns: Sequence[str]
) -> list[float]:
    """Safe boundary times at which a window may begin."""
    safe_starts, _ = cut_points(turns)
    safe = set(safe_starts)
    pats = [re.compile(p) for p in header_patterns]
    listeners = listener_indices(events)
    good: set[float] = set()
    bad: set[float] = set()
    for i, t in enumerate(turns):
        if t.start not in safe:
            continue
        if t.kind is TurnKind.NONSPEECH or t.end <= t.start:
            continue
        if t.kind is TurnKind.BACKCHANNEL or i in listeners or _is_header(t, pats):
            bad.add(t.start)
        else:
            good.add(t.start)
    return sorted(good - bad)


def _valid_ends(turns: Sequence[Turn], events: Sequence[OverlapEvent]) -> list[float]:
    """Safe boundary times at which a window may end: after a speech turn, not a backchannel.

    Ending on a backchannel would end the excerpt inside the host's floor, and would leave the
    backchannel without the host's continuation that makes it one.
    """
    _, safe_ends = cut_points(turns)
    bc = listener_indices(events, [OverlapClass.BACKCHANNEL])
    good: set[float] = set()
    bad: set[float] = set()
    for i, t in enumerate(turns):
        if t.kind is TurnKind.NONSPEECH or t.end <= t.start:
            continue
        if i in bc or t.kind is TurnKind.BACKCHANNEL:
            bad.add(t.end)
        else:
            good.add(t.end)
    return [e for e in safe_ends if e in good and e not in bad]


def candidate_windows(
    turns: Sequence[Turn],
    cfg: WindowConfig,
    turns_cfg: TurnsConfig,
    header_patterns: Sequence[str] = (),
    lengths: LengthModel | None = None,
    events: Sequence[OverlapEvent] | None = None,
) -> list[tuple[float, list[float]]]:
    """Every valid start with the valid ends whose excerpt renders inside the range (ascending).

    ``lengths`` predicts rendered lengths (default: a separable source at the default render
    settings); an excerpt qualifies when its predicted length, for any gaps drawn, lies inside
    :attr:`WindowConfig.select_range`. ``events``: the turns' overlap classification, when
    already computed.
    """
    found = classify_overlaps(turns, turns_cfg) if events is None else events
    model = lengths or LengthModel(
        turns, mixed=False, render=RenderConfig(), turns_cfg=turns_cfg, events=found
    )
    lo_lim, hi_lim = cfg.select_range
    starts = _valid_starts(turns, found, header_patterns)
    ends = _valid_ends(turns, found)
    out: list[tuple[float, list[float]]] = []
    for s in starts:
        ok: list[float] = []
        for e in ends[bisect.bisect_right(ends, s) :]:
            r = model.excerpt(s, e)
            if r is None:
                continue
            if r.hi_s > hi_lim + _EPS:
                break  # lengths only grow with the end
            if r.lo_s >= lo_lim - _EPS:
                ok.append(e)
        if ok:
            out.append((s, ok))
    return out


def _greedy(cands: list[tuple[float, list[float]]]) -> list[tuple[float, float]]:
    chosen: list[tuple[float, float]] = []
    cursor = float("-inf")
    for s, ends in cands:
        if s >= cursor:
            chosen.append((s, ends[-1]))
            cursor = ends[-1]
    return chosen


def _max_count(cands: list[tuple[float, list[float]]]) -> list[tuple[float, float]]:
    # Earliest end first; for one end, the earliest start (longest window) is tried first.
    by_end = sorted((ends[0], s) for s, ends in cands)
    chosen: list[tuple[float, float]] = []
    cursor = float("-inf")
    for e, s in by_end:
        if s >= cursor:
            chosen.append((s, e))
            cursor = e
    return chosen


def _max_coverage(cands: list[tuple[float, list[float]]]) -> list[tuple[float, float]]:
    # Weighted interval scheduling over time points; covered time in integer microseconds so that
    # ties resolve identically everywhere (a tie keeps the earlier, already-found solution).
    by_end: dict[float, list[float]] = {}
    for s, ends in cands:
        for e in ends:
            by_end.setdefault(e, []).append(s)
    points = sorted({p for e, ss in by_end.items() for p in (e, *ss)})
    best: dict[float, int] = {}
    back: list[tuple[float, float] | None] = []  # per point: window ending there, or None (skip)
    prev = 0
    for p in points:
        value, choice = prev, None
        for s in sorted(by_end.get(p, ())):
            v = best[s] + round((p - s) * 1e6)
            if v > value:
                value, choice = v, (s, p)
        best[p] = prev = value
        back.append(choice)
    chosen: list[tuple[float, float]] = []
    k = len(points) - 1
    while k >= 0:
        choice = back[k]
        if choice is None:
            k -= 1
            continue
        chosen.append(choice)
        k = bisect.bisect_left(points, choice[0])
    chosen.reverse()
    return chosen


_POLICIES = {"greedy": _greedy, "non_overlapping": _max_coverage, "max_count": _max_count}


def window_dialogue(dialogue: Dialogue, index: int, start: float, end: float) -> Dialogue:
    """The excerpt ``[start, end]`` of ``dialogue`` as its own ``Dialogue`` (source timeline)."""
    inside = tuple(t for t in dialogue.turns if t.start >= start and t.end <= end)
    return replace(
        dialogue,
        id=window_id(dialogue.id, index, start),
        turns=inside,
        duration_s=end - start,
        window=(start, end),
        provenance={
            **dialogue.provenance,
            "source_dialogue_id": dialogue.id,
            "window_index": index,
        },
    )


def make_windows(
    dialogue: Dialogue,
    cfg: WindowConfig,
    turns_cfg: TurnsConfig,
    header_patterns: Sequence[str] = (),
    render: RenderConfig | None = None,
    events: Sequence[OverlapEvent] | None = None,
) -> list[Dialogue]:
    """Excerpts that render to ``cfg.min_s``–``cfg.max_s`` seconds, chosen by ``cfg.policy``.

    Lengths are predicted with :class:`~duetflow.turntaking.rendered_length.LengthModel` for the
    dialogue's source kind and ``render`` settings (default: the default render section) and
    must lie inside :attr:`WindowConfig.select_range`. A dialogue that renders to that range as
    a whole is returned whole as one window (``window=(first turn start, last turn end)``); a
    shorter one yields none. Turns keep their source-timeline times; ``header_patterns`` are
    regexes of collection headers a window must not start with
    (``filters.collection_header_patterns``). ``events``: the dialogue's overlap classification
    when already computed (:func:`~duetflow.turntaking.overlaps.classify_overlaps` of its turns).
    """
    turns = dialogue.turns
    if not turns:
        return []
    events = classify_overlaps(turns, turns_cfg) if events is None else events
    model = LengthModel(
        turns,
        mixed=isinstance(dialogue.source, MixedMonoSource),
        render=render or RenderConfig(),
        turns_cfg=turns_cfg,
        events=events,
    )
    whole = model.whole()
    if whole is None:
        return []
    lo_lim, hi_lim = cfg.select_range
    if whole.hi_s <= hi_lim + _EPS:
        if whole.lo_s < lo_lim - _EPS:
            return []
        first = min(t.start for t in turns)
        last = max(t.end for t in turns)
        return [window_dialogue(dialogue, 0, first, last)]
    cands = candidate_windows(turns, cfg, turns_cfg, header_patterns, model, events)
    chosen = _POLICIES[cfg.policy](cands)
    log.debug(
        "%s: %d windows (%s) from %d starts", dialogue.id, len(chosen), cfg.policy, len(cands)
    )
    return [window_dialogue(dialogue, i, s, e) for i, (s, e) in enumerate(chosen)]
