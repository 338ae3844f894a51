"""Turn-taking events of a rendered dialogue, for trainers of turn-taking models.

:func:`dialogue_events` reads a dialogue's rendered turn rows (the output timeline) and
returns its events as :class:`~duetflow.records.rows.TurnEventRow` records, in the classes the
analysis computes everywhere else (:mod:`duetflow.turntaking.overlaps`, TurnBench's classes plus
the terminal overlap), with the same thresholds (``turns`` config):

* ``turn``: a turn that holds the floor (every turn but non-speech, backchannels and
  non-floor-taking interruptions), over its own span;
* ``backchannel``, ``non_floor_interruption``, ``terminal_overlap``, ``interruption``: each
  listener vocalisation that starts inside the other party's turn
  (:func:`~duetflow.turntaking.overlaps.classify_overlaps`), over the overlapped stretch; a
  turn the renderer marked ``backchannel`` that overlaps nothing is a backchannel over its span;
* ``nonspeech``: a turn of kind ``nonspeech`` (laughter and the like where the source marks it
  and the turns keep it), over its span;
* ``gap``: each speaker change of the floor
  (:func:`~duetflow.turntaking.overlaps.floor_transfers`), from the floor's end to the next
  speaker's start (the other way round for an overlapping change), ``offset_s`` the signed
  floor-transfer offset.

A pure function of the turn rows and the config: the release computes it once per dialogue
at publish (``release.events``).
"""

from __future__ import annotations

from collections.abc import Sequence

from duetflow.config import TurnsConfig
from duetflow.records.dialogue import Turn, TurnKind
from duetflow.records.rows import RenderedTurnRow, TurnEventRow
from duetflow.turntaking.overlaps import (
    OverlapClass,
    classify_overlaps,
    floor_transfers,
    listener_indices,
)

#: every event class, in the order events starting at one instant are listed
EVENT_KINDS = (
    "turn",
    str(OverlapClass.BACKCHANNEL),
    str(OverlapClass.NON_FLOOR_INTERRUPTION),
    str(OverlapClass.TERMINAL_OVERLAP),
    str(OverlapClass.INTERRUPTION),
    "nonspeech",
    "gap",
)
assert {str(c) for c in OverlapClass} <= set(EVENT_KINDS)


def _r(x: float) -> float:
    return round(float(x), 6)


def dialogue_events(turns: Sequence[RenderedTurnRow], cfg: TurnsConfig) -> list[TurnEventRow]:
    """The events of one dialogue's turn rows (module docstring), ordered by start, class
    (:data:`EVENT_KINDS` order) and turn, numbered from 0."""
    rows = sorted(turns, key=lambda r: r.turn_index)
    if not rows:
        return []
    did = rows[0].dialogue_id
    tl = [Turn(r.speaker, float(r.start_s), float(r.end_s), r.text or "", TurnKind(r.kind))
          for r in rows]  # fmt: skip
    overlaps = classify_overlaps(tl, cfg)
    listening = listener_indices(
        overlaps, [OverlapClass.BACKCHANNEL, OverlapClass.NON_FLOOR_INTERRUPTION]
    )
    overlapping = listener_indices(overlaps)
    found: list[tuple[str, str, float, float, int, int | None, float | None]] = []
    for i, t in enumerate(tl):
        idx = rows[i].turn_index
        if t.kind is TurnKind.NONSPEECH:
            found.append(("nonspeech", t.speaker, t.start, t.end, idx, None, None))
        elif t.kind is TurnKind.BACKCHANNEL:
            if i not in overlapping:
                found.append(("backchannel", t.speaker, t.start, t.end, idx, None, None))
        elif i not in listening:
            found.append(("turn", t.speaker, t.start, t.end, idx, None, None))
    for e in overlaps:
        found.append(
            (str(e.klass), e.listener, e.start, e.end, rows[e.listener_turn_index].turn_index,
             rows[e.host_turn_index].turn_index, None)
        )  # fmt: skip
    for f in floor_transfers(tl, cfg, overlaps):
        before, after = tl[f.before], tl[f.after]
        lo, hi = sorted((before.end, after.start))
        found.append(
            ("gap", after.speaker, lo, hi, rows[f.after].turn_index,
             rows[f.before].turn_index, _r(f.offset))
        )  # fmt: skip
    found.sort(key=lambda e: (_r(e[2]), EVENT_KINDS.index(e[0]), e[4], _r(e[3])))
    return [
        TurnEventRow(
            dialogue_id=did,
            event_index=k,
            event=kind,
            speaker=speaker,
            start_s=_r(start),
            end_s=_r(end),
            turn_index=int(turn),
            other_turn_index=None if other is None else int(other),
            offset_s=offset,
        )
        for k, (kind, speaker, start, end, turn, other, offset) in enumerate(found)
    ]
