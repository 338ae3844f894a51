"""Acoustic facts of the tracks a window is rendered from: floor, crosstalk, turn extents, tone.

A *track* is one speaker's audio (a channel, a file, the clips of a clip-per-turn source laid on
a timeline) or the mix of a mono recording, read over the window plus some context. For each
track :class:`TrackView` holds its envelopes (:func:`duetflow.audio.edges.analyse`) and three
frame masks:

* ``material``: frames that hold audio of this track (a clip-per-turn track has none between
  its clips) and lie within the window's reach (speech of turns outside the window may sound in
  the context read around it, so that is never taken for background);
* ``clear``: material frames clear of every annotated turn of every speaker (by
  :data:`BACKGROUND_MARGIN_S`): candidate background, where the floor is measured;
* ``blocked``: frames where the track holds the *other* speaker's voice (crosstalk on a
  separable track, :func:`mark_crosstalk`): never this speaker's speech, never background.

Turn extents come from :func:`duetflow.audio.edges.speech_extent` over the track's floor, with
the level speech must fall to given by the caller (the rendered file's floor in the track's
scale). Room tone comes from the track's background between extents (:func:`tone_runs`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from duetflow.audio import edges, kernels, roomtone
from duetflow.audio.io import Audio

#: Kept clear of annotated speech when judging a floor (s).
BACKGROUND_MARGIN_S = 0.05
#: Kept clear of acoustic extents when taking room tone (s).
TONE_MARGIN_S = 0.02
#: A frame is crosstalk while the other speaker talks unless it is louder than their measured
#: leak into this track by this much (dB).
CROSSTALK_DB = 6.0

Span = tuple[float, float]


@dataclass
class TrackView:
    """One track's envelopes and frame masks (see the module docstring)."""

    samples: Audio
    sr: int
    an: edges.Analysis
    material: edges.BoolArray
    clear: edges.BoolArray
    blocked: edges.BoolArray | None = None

    @property
    def n_frames(self) -> int:
        return len(self.an.edge)


def view(
    samples: Audio,
    sr: int,
    speech: Sequence[Span],
    *,
    no_material: Sequence[Span] = (),
    reach: Span | None = None,
    analysis: edges.Analysis | None = None,
) -> TrackView:
    """Analyse a track; ``speech``: every annotated turn (all speakers), ``no_material``: spans
    without audio, ``reach``: the samples that belong to the window (all by default);
    ``analysis``: the track's :func:`duetflow.audio.edges.analyse`, when already made."""
    an = edges.analyse(samples, sr) if analysis is None else analysis
    env = an.edge
    material = np.ones(len(env), dtype=bool)
    if reach is not None:
        k0, k1 = env.span(reach[0], reach[1])
        material[:k0] = False
        material[k1:] = False
    for a, b in no_material:
        half = edges.WINDOW_HOPS / 2 * env.hop
        k0, k1 = env.span(a - half, b + half)
        material[k0:k1] = False
    clear = material & edges.background_mask(env, speech, BACKGROUND_MARGIN_S * sr)
    return TrackView(samples, sr, an, material, clear)


def track_floor(v: TrackView, usable: edges.BoolArray | None = None) -> edges.Floor | None:
    """The floor of a track's background (``usable`` narrows the frames looked at)."""
    ok = v.material if usable is None else v.material & usable
    clear = v.clear & ok
    if v.blocked is not None:
        clear = clear & ~v.blocked
    floor = edges.estimate_floor(v.an, clear)
    if floor is not None:
        return floor
    return edges.floor_of(v.an, usable=ok)


def _alone(v: TrackView, own: Sequence[Span], other: Sequence[Span]) -> edges.BoolArray:
    """Frames inside ``own`` annotations and outside ``other`` ones."""
    env = v.an.edge
    mask = np.zeros(len(env), dtype=bool)
    for a, b in own:
        k0, k1 = env.span(a, b)
        mask[k0:k1] = True
    for a, b in other:
        k0, k1 = env.span(a, b)
        mask[k0:k1] = False
    return mask


def _median(v: edges.FloatArray) -> float:
    """``float(numpy.median(v))`` of a non-empty float64 array: compiled where numba is (the
    same two order statistics and their mean, :func:`duetflow.audio.edge_kernels.median`),
    numpy's own where it is not or a NaN leaves the order to numpy."""
    compiled = kernels.edge_kernels()
    if compiled is not None and v.dtype == np.float64 and v.ndim == 1 and v.size:
        out = np.empty(1)
        if compiled.median(v, out):
            return float(out[0])
    return float(np.median(v))


def mark_crosstalk(
    views: Sequence[TrackView],
    own: Sequence[Sequence[Span]],
    floors: Sequence[edges.Floor | None],
    *,
    margin_db: float = CROSSTALK_DB,
) -> None:
    """Set ``blocked`` on each of two time-aligned tracks: frames that hold no more than the
    other speaker's voice leaking in.

    The leak is measured, not assumed: where the other speaker talks alone (annotated, loud on
    their own track), this track reads the other track's level plus a steady leak gain (the
    median difference). A frame of this track is crosstalk when the other speaker talks there
    and this track is not louder than that leak by ``margin_db`` (default
    :data:`CROSSTALK_DB`; acoustic turn timing passes :data:`~duetflow.audio.edges.EDGE_DB`:
    speech as loud as the leak, the edge definition with the leak as the background); a track
    with no crosstalk has a leak gain far down and blocks nothing but its own background.
    """
    if len(views) != 2:
        return
    n = min(views[0].n_frames, views[1].n_frames)
    walk = edges.walk_kernels()
    for i in range(2):
        o = 1 - i
        mine, theirs = views[i].an.edge.db[:n], views[o].an.edge.db[:n]
        fo = floors[o]
        loud_db = (fo.edge_db() if fo is not None else edges.ABSOLUTE_FLOOR_DB) + (
            edges.CORE_ABOVE_EDGE_DB
        )
        alone = _alone(views[o], own[o], own[i])[:n]
        if (
            walk is not None
            and mine.dtype == np.float64
            and theirs.dtype == np.float64
            and mine.flags.c_contiguous
            and theirs.flags.c_contiguous
        ):  # the same comparisons, differences, median and sums in one pass each
            blocked = np.zeros(views[i].n_frames, dtype=bool)
            got = walk.crosstalk(mine, theirs, alone, n, loud_db, margin_db, 8, blocked)
            if got == 1:
                views[i].blocked = blocked
            if got >= 0:
                continue
        loud = theirs >= loud_db
        solo = alone & loud
        if np.count_nonzero(solo) < 8:
            continue
        leak = _median(mine[solo] - theirs[solo])
        blocked = np.zeros(views[i].n_frames, dtype=bool)
        blocked[:n] = loud & (mine <= theirs + leak + margin_db)
        views[i].blocked = blocked


def extent(
    v: TrackView,
    floor: edges.Floor,
    hint: Span,
    bounds: Span,
    target_db: float | None = None,
    *,
    onset_db: float | None = None,
    offset_db: float | None = None,
) -> edges.Extent | None:
    """A turn's acoustic extent on its track (samples): see
    :func:`duetflow.audio.edges.speech_extent`; ``target_db`` the level its speech must fall to
    at both ends (``onset_db`` / ``offset_db`` override one end)."""
    return edges.speech_extent(
        v.an,
        floor,
        hint,
        bounds=bounds,
        onset_floor_db=onset_db if onset_db is not None else target_db,
        offset_floor_db=offset_db if offset_db is not None else target_db,
        blocked=v.blocked,
    )


def tone_runs(
    v: TrackView, floor: edges.Floor, extents: Sequence[Span], *, annotated: bool = True
) -> list[tuple[int, int]]:
    """Sample ranges of room tone on a track: background frames clear of every acoustic extent
    (and, with ``annotated``, of every annotated turn), at the floor's level, in pauses of at
    least :data:`~duetflow.audio.roomtone.MIN_PAUSE_S`."""
    env = v.an.edge
    ok = (v.clear if annotated else v.material).copy()
    if v.blocked is not None:
        ok &= ~v.blocked
    ok &= edges.background_mask(env, extents, TONE_MARGIN_S * v.sr)
    ok &= env.db <= floor.edge_db()
    return roomtone.pause_runs(v.an, ok, floor)


def synthesized(
    v: TrackView, floor: edges.Floor, extents: Sequence[Span], rng: np.random.Generator
) -> Audio | None:
    """Noise with the track's background spectrum (no pause long enough to take tone from)."""
    ok = v.material & edges.background_mask(v.an.edge, extents, TONE_MARGIN_S * v.sr)
    if v.blocked is not None:
        ok &= ~v.blocked
    return roomtone.synthesized_tone(v.samples, v.an, ok, floor, rng)
