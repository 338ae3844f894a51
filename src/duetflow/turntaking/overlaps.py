"""Turn-taking analysis: overlap classes, floor-transfer offsets, speaker balance.

The classes follow TurnBench's canonical event classes (rooted in conversation analysis: Sacks,
Schegloff & Jefferson 1974; Schegloff 2000), plus Schegloff's terminal overlap; the rationale for
every threshold is in ``docs/turn-taking.md``. A *listener* vocalisation that starts while the
other party (the *host*) holds the floor is

* a **backchannel** when it does not claim the floor, whatever its duration: the host talks on
  over all of it, and its words (if the transcript has any) are not a bid for the floor; or its
  words are all continuers ("mm-hm", "yeah, right, I see", 嗯, 对对) and the host is the next to
  talk after it, however long it ran past the host's end;
* a **non-floor-taking interruption** when the host talks on over all of it but it is a bid for
  the floor: it carries other words, or the transcript marks it as broken off;
* otherwise the listener outlasted the host and holds the floor: a **terminal overlap** when it
  came in during the final part of the host's talk (at
  most ``turns.terminal_overlap_s`` before it ends) and the host's turn is not marked cut off:
  an early start of an ordinary turn transition;
* a (floor-taking) **interruption** when it came in mid-turn, or the host's turn is marked cut
  off.

Transcript evidence (:mod:`duetflow.turntaking.cues`) is used when ``turns.transcript_cues`` is on.
Nonspeech turns and zero-length turns never take part. Everything here is a pure function of the
turn timeline, so windows and filters can recompute it freely.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from duetflow.config import TurnsConfig
from duetflow.records.dialogue import Turn, TurnKind
from duetflow.turntaking.cues import Lexical, is_cut_off, lexical_class, stops_mid_clause

log = logging.getLogger(__name__)

__all__ = [
    "BalanceStats",
    "FloorTransfer",
    "OverlapClass",
    "OverlapEvent",
    "balance",
    "classify_overlaps",
    "floor_transfer_offsets",
    "floor_transfers",
    "listener_indices",
    "mark_backchannels",
]


class OverlapClass(StrEnum):
    """What a listener vocalisation during the host's turn does to the floor."""

    BACKCHANNEL = "backchannel"
    INTERRUPTION = "interruption"
    NON_FLOOR_INTERRUPTION = "non_floor_interruption"
    TERMINAL_OVERLAP = "terminal_overlap"

    @property
    def takes_floor(self) -> bool:
        """The listener holds the floor afterwards (a transition or an interruption)."""
        return self in (OverlapClass.INTERRUPTION, OverlapClass.TERMINAL_OVERLAP)


@dataclass(frozen=True)
class OverlapEvent:
    """One listener vocalisation overlapping a host turn.

    ``start``/``end`` bound the overlapped stretch (both talking) on the dialogue timeline;
    the indices point into the turn sequence given to :func:`classify_overlaps`.
    """

    listener: str
    speaker: str
    start: float
    end: float
    klass: OverlapClass
    host_turn_index: int
    listener_turn_index: int

    @property
    def overlap_s(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class BalanceStats:
    """Per-speaker share of utterances and of speaking time (each sums to 1, or all 0)."""

    utterance_share: dict[str, float]
    time_share: dict[str, float]
    counts: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, dict[str, float] | dict[str, int]]:
        return {
            "utterance_share": dict(self.utterance_share),
            "time_share": dict(self.time_share),
            "counts": dict(self.counts),
        }


def _is_speech(t: Turn) -> bool:
    return t.kind is not TurnKind.NONSPEECH and t.end > t.start


def _host_run_end(
    turns: Sequence[Turn], order: list[int], pos: int, join_s: float
) -> tuple[float, int]:
    """End of the host's talk starting at ``order[pos]``, and the turn it ends with.

    Consecutive turns of one speaker separated by less than ``join_s`` are one stretch of talk:
    a host who pauses briefly while the listener chimes in has not yielded the floor.
    """
    host = turns[order[pos]]
    end, last = host.end, order[pos]
    for q in range(pos + 1, len(order)):
        t = turns[order[q]]
        if t.start > end + join_s:
            break
        if t.speaker == host.speaker and t.end > end:
            end, last = t.end, order[q]
    return end, last


def _speech_order(turns: Sequence[Turn]) -> list[int]:
    return sorted(
        (i for i, t in enumerate(turns) if _is_speech(t)),
        key=lambda i: (turns[i].start, -turns[i].end, i),
    )


def classify_overlaps(turns: Sequence[Turn], cfg: TurnsConfig) -> list[OverlapEvent]:
    """Classify every listener vocalisation that starts inside the other party's turn.

    The host of a listener turn ``L`` is the other speaker's turn that holds the floor when ``L``
    starts (it started no later and ends after ``L``'s start; on a simultaneous start the longer
    turn is the host; among several candidates, the one that ends last). Listener turns that do
    not take the floor never act as hosts: they never held it. Overlaps shorter than
    ``cfg.min_overlap_s`` are ordinary transitions, not events. Returns events ordered by onset,
    then listener turn index.
    """
    order = _speech_order(turns)
    pos_of = {idx: p for p, idx in enumerate(order)}
    active: list[int] = []  # earlier speech turns still running, i.e. possible hosts
    events: list[OverlapEvent] = []
    for p, li in enumerate(order):
        lt = turns[li]
        active = [hi for hi in active if turns[hi].end > lt.start]
        host_i: int | None = None
        for hi in active:
            if turns[hi].speaker != lt.speaker and (
                host_i is None or turns[hi].end > turns[host_i].end
            ):
                host_i = hi
        active.append(li)
        if host_i is None:
            continue
        ht = turns[host_i]
        overlap_end = min(ht.end, lt.end)
        if overlap_end - lt.start < cfg.min_overlap_s:
            continue
        host_end, host_last = _host_run_end(turns, order, pos_of[host_i], cfg.same_speaker_join_s)
        klass = _classify(turns, order, p, ht.speaker, host_end, turns[host_last], cfg)
        if not klass.takes_floor:
            active.remove(li)  # talk inside the host's floor never holds the floor itself
        events.append(
            OverlapEvent(
                listener=lt.speaker,
                speaker=ht.speaker,
                start=lt.start,
                end=overlap_end,
                klass=klass,
                host_turn_index=host_i,
                listener_turn_index=li,
            )
        )
    events.sort(key=lambda e: (e.start, e.listener_turn_index))
    return events


def _classify(
    turns: Sequence[Turn],
    order: list[int],
    p: int,
    host_speaker: str,
    host_end: float,
    host_last: Turn,
    cfg: TurnsConfig,
) -> OverlapClass:
    lt = turns[order[p]]
    lexical = lexical_class(lt) if cfg.transcript_cues else Lexical.UNKNOWN
    cut_off = cfg.transcript_cues and is_cut_off(lt)
    if lt.end <= host_end:  # the host talked on over all of it: no floor taken
        bid = cut_off or lexical is Lexical.CONTENT
        return OverlapClass.NON_FLOOR_INTERRUPTION if bid else OverlapClass.BACKCHANNEL
    if (
        lexical is Lexical.BACKCHANNEL
        and not cut_off
        and _host_keeps_floor(turns, order, p, host_speaker, host_end)
    ):
        return OverlapClass.BACKCHANNEL  # a continuer that ran past the host, who carries on
    # the listener has the floor after the host: where did it come in?
    # a host whose words stop mid-clause ("... and", "……然后") was going on: cut off too
    host_cut_off = cfg.transcript_cues and (is_cut_off(host_last) or stops_mid_clause(host_last))
    if host_end - lt.start <= cfg.terminal_overlap_s + 1e-9 and not host_cut_off:
        return OverlapClass.TERMINAL_OVERLAP
    return OverlapClass.INTERRUPTION


def _host_keeps_floor(
    turns: Sequence[Turn], order: list[int], p: int, host_speaker: str, host_end: float
) -> bool:
    """The host talks on past the listener, or is the next one to start talking after it.

    When nobody talks after the listener (end of the dialogue or window) a continuer is given the
    benefit of the doubt: nothing shows that it took the floor.
    """
    lt = turns[order[p]]
    if host_end >= lt.end:
        return True
    for q in range(p + 1, len(order)):
        t = turns[order[q]]
        if t.speaker == host_speaker:
            return True
        if t.speaker == lt.speaker:
            return False
    return True


def listener_indices(
    events: Sequence[OverlapEvent], classes: Sequence[OverlapClass] | None = None
) -> set[int]:
    """Turn indices that are the listener side of an event (of the given classes, or any)."""
    return {e.listener_turn_index for e in events if classes is None or e.klass in classes}


def mark_backchannels(
    turns: Sequence[Turn], cfg: TurnsConfig, events: Sequence[OverlapEvent] | None = None
) -> tuple[Turn, ...]:
    """Return the turns with ``kind=BACKCHANNEL`` where the overlap analysis says so.

    The renderer keeps backchannels at their offset inside the host turn instead of re-timing
    them as turns, so the mark must agree with the filter's view. Other turns are unchanged
    (an adapter's own backchannel marks are kept). ``events``: the turns' classification when
    already computed (:func:`classify_overlaps` of the same turns and config).
    """
    found = classify_overlaps(turns, cfg) if events is None else events
    bc = listener_indices(found, [OverlapClass.BACKCHANNEL])
    return tuple(
        replace(t, kind=TurnKind.BACKCHANNEL) if i in bc and t.kind is TurnKind.TURN else t
        for i, t in enumerate(turns)
    )


def _floor_turns(
    turns: Sequence[Turn], cfg: TurnsConfig, events: Sequence[OverlapEvent] | None
) -> list[int]:
    """Speech turns that can hold the floor: not backchannels, not inside another party's turn."""
    found = classify_overlaps(turns, cfg) if events is None else events
    skip = listener_indices(found, [OverlapClass.BACKCHANNEL])
    order = [
        i
        for i in _speech_order(turns)
        if i not in skip and turns[i].kind is not TurnKind.BACKCHANNEL
    ]
    max_end: dict[str, float] = {}  # per speaker, latest end among turns started so far
    out = []
    for i in order:
        t = turns[i]
        contained = any(e >= t.end for s, e in max_end.items() if s != t.speaker)
        if not contained:
            out.append(i)
        max_end[t.speaker] = max(max_end.get(t.speaker, t.end), t.end)
    return out


@dataclass(frozen=True)
class FloorTransfer:
    """One speaker change of the floor: turn ``after`` follows the floor turn ``before``.

    ``offset`` (seconds) = ``after``'s start - the end of ``before``'s speaker's run: negative
    is overlap, positive is gap. Indices point into the turn sequence given.
    """

    before: int
    after: int
    offset: float


def floor_transfers(
    turns: Sequence[Turn], cfg: TurnsConfig, events: Sequence[OverlapEvent] | None = None
) -> list[FloorTransfer]:
    """Every speaker change of the floor, in timeline order (see
    :func:`floor_transfer_offsets`; ``before`` is the turn of the previous run that ends last)."""
    floor = _floor_turns(turns, cfg, events)
    out: list[FloorTransfer] = []
    prev: int | None = None
    for i in floor:
        t = turns[i]
        if prev is None:
            prev = i
            continue
        if t.speaker == turns[prev].speaker:
            if t.end > turns[prev].end:
                prev = i
            continue
        out.append(FloorTransfer(prev, i, t.start - turns[prev].end))
        prev = i
    return out


def floor_transfer_offsets(
    turns: Sequence[Turn], cfg: TurnsConfig, events: Sequence[OverlapEvent] | None = None
) -> list[float]:
    """Floor-transfer offset (seconds) at every speaker change, in timeline order.

    FTO = next speaker's start - previous speaker's end: negative is overlap, positive is gap.
    Backchannels and turns wholly inside the other party's turn do not transfer the floor and are
    skipped; a run of one speaker's turns ends at the latest end in the run. ``events``: the
    turns' classification when already computed (:func:`classify_overlaps` of the same turns).
    """
    return [f.offset for f in floor_transfers(turns, cfg, events)]


def _union_length(intervals: list[tuple[float, float]]) -> float:
    total = 0.0
    cur_s: float | None = None
    cur_e = 0.0
    for s, e in sorted(intervals):
        if cur_s is None or s > cur_e:
            if cur_s is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_s is not None:
        total += cur_e - cur_s
    return total


def balance(
    turns: Sequence[Turn],
    cfg: TurnsConfig,
    speakers: Sequence[str] | None = None,
    events: Sequence[OverlapEvent] | None = None,
) -> BalanceStats:
    """Each speaker's share of utterances and of speaking time.

    Utterances are speech turns; backchannels (classified or adapter-marked) are left out when
    ``cfg.balance_excludes_backchannels``, because a stream of "mm-hm" does not make a party an
    equal contributor. Speaking time counts all speech, each speaker's overlapping turns once.
    ``speakers`` lists parties to report even when silent (a dialogue's two speakers);
    ``events``: the turns' classification when already computed.
    """
    names = list(dict.fromkeys([*(speakers or ()), *(t.speaker for t in turns if _is_speech(t))]))
    bc: set[int] = set()
    if cfg.balance_excludes_backchannels:
        found = classify_overlaps(turns, cfg) if events is None else events
        bc = listener_indices(found, [OverlapClass.BACKCHANNEL])
        bc |= {i for i, t in enumerate(turns) if t.kind is TurnKind.BACKCHANNEL}
    counts = dict.fromkeys(names, 0)
    spans: dict[str, list[tuple[float, float]]] = {n: [] for n in names}
    for i, t in enumerate(turns):
        if not _is_speech(t):
            continue
        spans[t.speaker].append((t.start, t.end))
        if i not in bc:
            counts[t.speaker] += 1
    n = sum(counts.values())
    times = {s: _union_length(v) for s, v in spans.items()}
    total_time = sum(times.values())
    return BalanceStats(
        utterance_share={s: (c / n if n else 0.0) for s, c in counts.items()},
        time_share={s: (v / total_time if total_time else 0.0) for s, v in times.items()},
        counts=counts,
    )


def cut_points(turns: Sequence[Turn]) -> tuple[list[float], list[float]]:
    """Sorted turn starts and ends that no turn strictly straddles (safe window boundaries)."""
    by_start = sorted((t.start, t.end) for t in turns)
    starts = [s for s, _ in by_start]
    prefix_max: list[float] = []
    m = float("-inf")
    for _, e in by_start:
        m = max(m, e)
        prefix_max.append(m)

    def safe(x: float) -> bool:
        k = bisect.bisect_left(starts, x)  # turns starting strictly before x
        return k == 0 or prefix_max[k - 1] <= x

    s_pts = sorted({t.start for t in turns if safe(t.start)})
    e_pts = sorted({t.end for t in turns if safe(t.end)})
    return s_pts, e_pts
