"""Trimming: where each turn's (or mixed block's) acoustic extent may lie, in track samples.

A separable turn's edges may move past its annotation by the search reach, never past the
middle of the pause to its neighbours on the same track nor outside its clip; two blocks of a
mixed track that overlap (a latched change) are cut at the quietest point of the overlap.
The extents themselves are found by :func:`duetflow.acoustics.source_acoustics.extent`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from duetflow.acoustics import source_acoustics
from duetflow.acoustics.blocks import Block
from duetflow.acoustics.window import Track
from duetflow.audio import edges
from duetflow.audio.io import Audio
from duetflow.audio.trim import frame_db
from duetflow.records.dialogue import Turn

_CUT_SEARCH_S = 0.02  # a latched speaker change in a mix is cut within this of the overlap
_CUT_FRAME_S = 0.005


def sample_span(ext: edges.Extent) -> tuple[int, int]:
    """An extent's (start, end) rounded to whole samples."""
    return int(round(ext.start)), int(round(ext.end))


def same_track_bounds(
    turns: Sequence[Turn], idx: Sequence[int], i: int, track: Track, sr: int
) -> tuple[float, float]:
    """Where turn ``i``'s edges may lie on its track (samples): past its hint by the search
    reach, never past the middle of a pause to the previous or next turn on the same track, nor
    outside its clip (clip-per-turn)."""
    t = turns[i]
    lo = (t.start - track.t0 - edges.SEARCH_S) * sr
    hi = (t.end - track.t0 + edges.SEARCH_S) * sr
    for j in idx:
        if j == i:
            continue
        o = turns[j]
        if o.end <= t.start:
            lo = max(lo, (0.5 * (o.end + t.start) - track.t0) * sr)
        elif o.start >= t.end:
            hi = min(hi, (0.5 * (t.end + o.start) - track.t0) * sr)
    mid = 0.5 * (t.start + t.end)
    for a, b in track.pieces:
        if a <= mid < b:
            lo, hi = max(lo, (a - track.t0) * sr), min(hi, (b - track.t0) * sr)
    return max(lo, 0.0), min(hi, float(track.n))


def piece_mask(v: source_acoustics.TrackView, track: Track, t: Turn, sr: int) -> Any:
    """Frames of the clip holding turn ``t`` (clip-per-turn tracks), else None."""
    mid = 0.5 * (t.start + t.end)
    for a, b in track.pieces:
        if a <= mid < b:
            mask = np.zeros(v.n_frames, dtype=bool)
            k0, k1 = v.an.edge.span((a - track.t0) * sr, (b - track.t0) * sr)
            mask[k0:k1] = True
            return mask
    return None


def quietest_point(x: Audio, i0: int, i1: int, sr: int) -> int:
    """Sample index at the centre of the quietest 5 ms frame of ``x[i0:i1]``."""
    n = max(1, int(_CUT_FRAME_S * sr))
    if i1 - i0 < n:
        return (i0 + i1) // 2
    levels = frame_db(x[i0:i1], n)
    return i0 + int(np.argmin(levels)) * n + n // 2


def block_bounds(track: Track, blocks: Sequence[Block], sr: int) -> list[tuple[float, float]]:
    """Source-time range each block's audio may come from.

    Blocks that overlap (a latched speaker change, see
    :func:`~duetflow.acoustics.blocks.merge_blocks`) are cut at the quietest point around the
    overlap, so neither keeps the other's voice; other neighbours are bounded at the middle of
    the pause between their annotations.
    """
    bounds = [(b.start - edges.SEARCH_S, b.end + edges.SEARCH_S) for b in blocks]
    m = _CUT_SEARCH_S
    for k in range(len(blocks) - 1):
        e, s = blocks[k].end, blocks[k + 1].start
        if s >= e:
            c = 0.5 * (e + s)
            if s - e < 2 * edges.SEARCH_S:
                bounds[k] = (bounds[k][0], c)
                bounds[k + 1] = (c, bounds[k + 1][1])
            continue
        lo = max(track.index(s - m, sr), track.index(blocks[k].start, sr), 0)
        hi = min(track.index(e + m, sr), track.index(blocks[k + 1].end, sr), track.n)
        c = track.t0 + quietest_point(track.samples, lo, hi, sr) / sr
        bounds[k] = (bounds[k][0], c)
        bounds[k + 1] = (c, bounds[k + 1][1])
    return bounds
