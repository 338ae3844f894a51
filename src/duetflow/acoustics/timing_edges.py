"""Acoustic turn timing, the part its three measuring paths share (:mod:`.timing`).

Separable tracks (:mod:`.timing_separable`), clips per turn (the same module) and mono mixes
(:mod:`.timing_mixed`) each measure edges their own way and record them in one
:class:`Measured` record, with one rule for where an edge may be searched
(:func:`search_bounds`), one for when a measured edge is a measurement and not its search bound
(:func:`edges_of`) and one for which floor a chunk is judged against (:func:`floor_for`);
:func:`duetflow.acoustics.timing.measure` applies and labels the result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

from duetflow.acoustics import source_acoustics
from duetflow.acoustics.track_reader import Span
from duetflow.audio import edges
from duetflow.records.dialogue import Turn, TurnKind

#: A chunk whose background is shorter than this (s) is judged against the floor last measured
#: on the same track.
MIN_BACKGROUND_S = 0.3
#: Fewest measured boundaries a dialogue's slack is estimated from (per side: three; pooled
#: over both sides: four).
MIN_SLACK_EDGES = 4
MIN_SLACK_SIDE = 3

NEIGHBOURS = 3  # same-track annotations looked at either side of a turn for its bounds
CUT_EPS_S = 0.003  # an edge this close to its search bound was cut there, not measured


class EdgeSource(StrEnum):
    """Where a refined edge comes from."""

    ACOUSTIC = "acoustic"  # measured on the audio
    SLACK = "slack"  # a mono overlap's boundary: the annotation less the dialogue's slack
    ANNOTATION = "annotation"  # kept as annotated: not measurable, no slack estimate
    NO_SPEECH = "no_speech"  # the turn holds no audible speech: kept as annotated


@dataclass(frozen=True)
class Slack:
    """A dialogue's typical annotation slack (s, annotated minus acoustic; positive: the
    annotation is wider than the speech), from its measurable boundaries."""

    onset_s: float
    offset_s: float
    n_onsets: int
    n_offsets: int


@dataclass
class Edge:
    """One refined edge (seconds) and where it came from."""

    t: float
    source: EdgeSource


@dataclass
class Measured:
    """What one measuring path found: refined edges by turn index, turns without speech and
    the slack samples of its measured boundaries."""

    starts: dict[int, Edge] = field(default_factory=dict)
    ends: dict[int, Edge] = field(default_factory=dict)
    no_speech: set[int] = field(default_factory=set)
    onset_slack: list[float] = field(default_factory=list)
    offset_slack: list[float] = field(default_factory=list)
    slack: Slack | None = None


def search_bounds(
    turns: Sequence[Turn], idx: Sequence[int], pos: int, tol: float
) -> tuple[float, float]:
    """Where turn ``idx[pos]``'s edges may lie (s): its annotation widened by ``tol``, never past
    the middle of the pause to a neighbouring annotation of ``idx`` (the same track, in time
    order; the nearest :data:`NEIGHBOURS` either side are looked at)."""
    t = turns[idx[pos]]
    lo, hi = t.start - tol, t.end + tol
    for j in idx[max(0, pos - NEIGHBOURS) : pos + NEIGHBOURS + 1]:
        o = turns[j]
        if j == idx[pos]:
            continue
        if o.end <= t.start:
            lo = max(lo, 0.5 * (o.end + t.start))
        elif o.start >= t.end:
            hi = min(hi, 0.5 * (t.end + o.start))
    return lo, hi


def edges_of(
    ext: edges.Extent | None, span: Span, bounds: tuple[float, float]
) -> tuple[float | None, float | None] | None:
    """An extent in seconds; an edge cut at its bound is None (not measured); None: no speech."""
    if ext is None:
        return None
    s0, s1 = float(span.t0 + ext.start / span.sr), float(span.t0 + ext.end / span.sr)
    start = s0 if s0 > bounds[0] + CUT_EPS_S else None
    end = s1 if s1 < bounds[1] - CUT_EPS_S else None
    return start, end


def floor_for(v: source_acoustics.TrackView, last: edges.Floor | None) -> edges.Floor | None:
    """The floor a chunk's edges are judged against: the chunk's own, or the one last measured on
    the same track where the chunk holds less than :data:`MIN_BACKGROUND_S` of background."""
    floor = source_acoustics.track_floor(v)
    clear = v.clear if v.blocked is None else v.clear & ~v.blocked
    enough = np.count_nonzero(clear) * v.an.edge.hop >= MIN_BACKGROUND_S * v.sr
    if last is not None and (floor is None or not enough):
        return last
    return floor


def speech_indices(turns: Sequence[Turn]) -> list[int]:
    """Indices of the turns timing looks at: speech (not nonspeech) of positive length."""
    return [i for i, t in enumerate(turns) if t.kind != TurnKind.NONSPEECH and t.end > t.start]


def in_range(turns: Sequence[Turn], a: float, b: float) -> list[Turn]:
    """The turns that reach into ``[a, b)`` (s)."""
    return [t for t in turns if t.end > a and t.start < b]


def record_edges(res: Measured, i: int, got: tuple[float | None, float | None] | None) -> None:
    """Record one turn's measured edges as acoustic (``got`` None: the turn holds no speech)."""
    if got is None:
        res.no_speech.add(i)
        return
    if got[0] is not None:
        res.starts[i] = Edge(got[0], EdgeSource.ACOUSTIC)
    if got[1] is not None:
        res.ends[i] = Edge(got[1], EdgeSource.ACOUSTIC)
