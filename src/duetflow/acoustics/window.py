"""A window's tracks as read, and each track's background measured around the window's turns.

:class:`Track` is one speaker's audio (or a mono mix) read over a window plus context, at the
output rate; :func:`track_view` analyses it around the window's turns
(:mod:`duetflow.acoustics.source_acoustics`), :func:`window_floor` measures its floor there, or
in the rest of its recording when the window holds too little background
(:mod:`duetflow.acoustics.tone_sources`). Reading the tracks is
:mod:`duetflow.rendering.sources`; laying room tone from them is :mod:`duetflow.rendering.roomtone`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from duetflow.acoustics import source_acoustics
from duetflow.acoustics.tone_sources import RecordingTone, recording_tone
from duetflow.audio import edges
from duetflow.audio.io import Audio
from duetflow.records.dialogue import Dialogue, Turn

_REACH_S = 0.05  # background is judged only this close around the window's own turns


@dataclass(frozen=True)
class Track:
    """Samples at the output rate; sample 0 is ``t0`` seconds on the source timeline."""

    samples: Audio
    t0: float
    gaps: tuple[tuple[float, float], ...] = ()  # source-time spans with no material (per-turn)
    pieces: tuple[tuple[float, float], ...] = ()  # source-time spans of each clip (per-turn)
    recording: tuple[str, int | None] | None = None  # (file, channel) the track is read from
    #: the low-pass applied to ``samples`` (and to whatever else is read from ``recording``)
    bandwidth_hz: float | None = None

    def index(self, t: float, sr: int) -> int:
        """The sample of source time ``t`` (s) on this track."""
        return int(round((t - self.t0) * sr))

    @property
    def n(self) -> int:
        return len(self.samples)


def turn_spans(track: Track, turns: Sequence[Turn], sr: int) -> list[tuple[float, float]]:
    """Every turn's annotated span in track samples."""
    return [((t.start - track.t0) * sr, (t.end - track.t0) * sr) for t in turns]


def track_view(
    d: Dialogue,
    track: Track,
    turns: Sequence[Turn],
    sr: int,
    analysis: edges.Analysis | None = None,
) -> source_acoustics.TrackView:
    """The track analysed around the window's turns (background judged only near them; a
    clip-per-turn track's stretches without material are no background); ``analysis``: the
    track's whole analysis, when already made (:func:`duetflow.audio.edges.analyse_many`)."""
    lo = min((t.start for t in turns), default=track.t0)
    hi = max((t.end for t in turns), default=track.t0 + track.n / sr)
    if d.window is not None:
        lo, hi = min(lo, d.window[0]), max(hi, d.window[1])
    reach = ((lo - _REACH_S - track.t0) * sr, (hi + _REACH_S - track.t0) * sr)
    gaps = [((a - track.t0) * sr, (b - track.t0) * sr) for a, b in track.gaps]
    return source_acoustics.view(
        track.samples, sr, turn_spans(track, turns, sr), no_material=gaps, reach=reach,
        analysis=analysis,
    )  # fmt: skip


def window_floor(
    track: Track, v: source_acoustics.TrackView, sr: int
) -> tuple[edges.Floor | None, RecordingTone | None]:
    """A track's floor: its window's background, else the rest of its recording's."""
    floor = source_acoustics.track_floor(v)
    clear = v.clear if v.blocked is None else v.clear & ~v.blocked
    enough = np.count_nonzero(clear) * v.an.edge.hop >= 0.3 * sr
    if (floor is None or not enough) and track.recording is not None:
        rec = recording_tone(*track.recording, sr, track.bandwidth_hz)
        return (rec.floor or floor), rec
    return floor, None


def window_floor_again(
    track: Track,
    v: source_acoustics.TrackView,
    sr: int,
    found: tuple[edges.Floor | None, RecordingTone | None],
    blocked_before: edges.BoolArray | None,
) -> tuple[edges.Floor | None, RecordingTone | None]:
    """:func:`window_floor` after ``v.blocked`` was set (crosstalk marked), given what it found
    with ``blocked_before``: that, when the marking blocks none of the clear frames it looks
    at (every mask it reads is ``clear`` less ``blocked``), else found anew."""
    b = v.blocked
    if b is blocked_before or (
        blocked_before is None and b is not None and not (v.clear & b).any()
    ):
        return found
    return window_floor(track, v, sr)
