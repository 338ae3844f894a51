"""Assembly: clips laid over one steady room-tone floor, and assembling anew around moves.

The first step of :mod:`duetflow.rendering.mixdown` (split from it to keep each module under
500 lines): where no clip sounds, the bed is at the floor power; under a clip whose own
background (its noise after gain, faded with it) is quieter, the bed tops it up to the floor
power, sample by sample, following the clips' squared fade envelopes so power stays constant
through every join. Each stem (a speaker's layer of the two-channel file) is filled the same
way over that speaker's own room tone (``Bed.stem_tones``). :func:`reassemble` assembles anew
only around the items a correction moved and copies the rest (the same samples as assembling
whole); :func:`shift_bed` moves the room tone with them, cut at mid-gap and crossfaded there.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from duetflow.audio import kernels
from duetflow.audio.io import Audio
from duetflow.audio.mix import compiled_kernels, place
from duetflow.audio.roomtone import fill

Floats = npt.NDArray[np.float64]

_FILL_FADE_S = 0.01
_FADE_SPAN = 8192  # a clip's fades lie within this many samples of its ends
#: Half the crossfade (samples) at each of the bed's cuts where the items on its two sides moved
#: apart (:func:`shift_bed`): 5 ms at 16 kHz. A hard cut there is a step in the noise, a click
#: whose broadband energy shows in the pause's spectrum above a band-limited bed's band, where
#: the cue audit's tilt fit reaches: the more gaps a category has corrected (PH: 4.5 per
#: dialogue, HH and HM 1.1-1.4), the brighter its pauses read (docs/fairness.md, *The pause
#: colour*).
CUT_FADE_HALF = 80


@dataclass(frozen=True)
class Clip:
    """One piece of the output: gained, faded samples that move with main item ``group``.

    ``floor_power``: the clip's own background power after gain (per sample of ``data`` for a
    gain curve, else one value); the bed tops it up to the dialogue's floor.
    """

    group: int
    stem: int | None  # stem channel (speaker position) or None
    data: Audio  # samples x gain x fade envelope
    env: Audio  # the fade envelope
    at: int  # provisional output index of data[0]
    e0: int  # acoustic extent inside data
    e1: int
    floor_power: float | Audio = 0.0


@dataclass(frozen=True)
class Bed:
    """Room tone (any level) and the dialogue's floor power (before the true-peak ceiling).

    ``stem_tones``: each stem's own room tone (its speaker's, any level), laid in that stem's
    pauses at the same floor power; a stem without one (None, or past the tuple's end) gets
    ``tone``, the mix's."""

    tone: Audio
    power: float
    stem_tones: tuple[Audio | None, ...] = ()


def unit_noise(bed: Bed, n: int, rng: np.random.Generator, sr: int) -> Audio:
    noise = fill(bed.tone, n, rng, max(1, int(_FILL_FADE_S * sr)))
    p = float(np.mean(np.square(bed.tone, dtype=np.float64)))
    if p > 0:  # fill's array is its own: scaled in place (the same products)
        noise *= np.float32(1.0 / math.sqrt(p))
    return noise


def stem_beds(
    bed: Bed, noise: Audio, n_stems: int, rng: np.random.Generator, sr: int
) -> list[Audio]:
    """Each stem's unit-power room tone: its own (drawn after the mix's, so the mix's draws,
    and the mix, are the same with or without stems), else the mix's ``noise``."""
    out = []
    for k in range(n_stems):
        own = bed.stem_tones[k] if k < len(bed.stem_tones) else None
        out.append(
            noise if own is None else unit_noise(replace(bed, tone=own), len(noise), rng, sr)
        )
    return out


def assemble(
    clips: Sequence[Clip],
    shifts: Sequence[int],
    n: int,
    noise: Audio | None,
    floor_power: float,
    n_stems: int = 0,
    *,
    lo: int = 0,
    hi: int | None = None,
    stem_noise: Sequence[Audio] | None = None,
) -> tuple[Audio, Audio | None]:
    """Lay the clips (moved by ``shifts`` per group) over unit-power ``noise`` brought to
    ``floor_power`` wherever the clips' own background falls short of it (each stem over its
    own ``stem_noise``, when given, else over ``noise``).

    ``lo``, ``hi``: only output samples ``[lo, hi)`` of the ``n`` (default all), with the very
    values the whole assembly has there: every output sample is the same sequence of float32
    operations on the clips covering it, in clip order, and on ``noise`` at that sample."""
    hi = n if hi is None else hi
    m = max(0, hi - lo)
    out = np.zeros(m, dtype=np.float32)
    lack = [np.zeros(m, dtype=np.float32) for _ in range(1 + n_stems)] if noise is not None else []
    layers = [np.zeros(m, dtype=np.float32) for _ in range(n_stems)]
    for c in clips:
        at = c.at + shifts[c.group] - lo
        if at >= m or at + _reach(c) <= 0:
            continue  # wholly outside the part assembled
        place(out, c.data, at)
        if n_stems and c.stem is not None:
            place(layers[c.stem], c.data, at)
        if noise is not None:
            targets = [lack[0]] + ([lack[1 + c.stem]] if n_stems and c.stem is not None else [])
            for have in targets:
                _place_background(have, c, at)
    if noise is not None:
        compiled = kernels.sample_kernels()
        for k, have in enumerate(lack):
            tone = noise if k == 0 or stem_noise is None else stem_noise[k - 1]
            dest = out if k == 0 else layers[k - 1]
            part = tone[lo : lo + m]
            if (
                compiled is not None
                and part.dtype == np.float32
                and part.flags.c_contiguous
                and len(part) == m
            ):  # the same float32 steps in one pass
                compiled.top_up(dest, have, part, np.float32(floor_power))
                continue
            np.subtract(np.float32(floor_power), have, out=have)
            np.maximum(have, 0.0, out=have)
            np.sqrt(have, out=have)
            have *= part
            dest[:] += have
    stems = np.stack(layers, axis=1).astype(np.float32) if n_stems else None
    return out, stems


def _reach(c: Clip) -> int:
    """Samples from a clip's start that it touches (its data, its envelope's background)."""
    return max(len(c.data), len(c.env))


@dataclass(frozen=True)
class Layout:
    """Where an assembly put things: the items' shifts, its length, the bed's cuts."""

    shifts: list[int]
    n: int
    cuts: list[int]  # end of each item's stretch of room tone (:func:`bed_cuts`)


def _subtract(
    spans: list[tuple[int, int]], holes: Sequence[tuple[int, int]]
) -> list[tuple[int, int]]:
    """``spans`` (sorted, disjoint) less the union of ``holes`` (sorted by start)."""
    out: list[tuple[int, int]] = []
    j = 0
    for a, b in spans:
        while j < len(holes) and holes[j][1] <= a:
            j += 1
        k = j
        while a < b and k < len(holes) and holes[k][0] < b:
            h0, h1 = holes[k]
            if h0 > a:
                out.append((a, h0))
            a = max(a, h1)
            k += 1
        if a < b:
            out.append((a, b))
    return out


def unchanged(clips: Sequence[Clip], old: Layout, new: Layout) -> list[tuple[int, int, int]]:
    """Stretches ``(lo, hi, d)`` of the new assembly equal, sample for sample, to the old one's
    ``[lo - d, hi - d)``: every clip covering them moved by ``d`` and covered them before too,
    and the room tone under them is the same item's, moved by ``d``. Sorted, disjoint."""
    step = [b - a for a, b in zip(old.shifts, new.shifts, strict=True)]
    cand: dict[int, list[tuple[int, int]]] = {}
    h = CUT_FADE_HALF  # the bed's crossfades around its cuts (:func:`shift_bed`): never copied
    last = len(step) - 1
    for k, d in enumerate(step):
        a0 = max(new.cuts[k - 1] + h if k else 0, (old.cuts[k - 1] + h if k else 0) + d, d, 0)
        b0 = min(
            new.cuts[k] - (h if k < last else 0),
            old.cuts[k] - (h if k < last else 0) + d,
            old.n + d,
            new.n,
        )
        if b0 > a0:
            cand.setdefault(d, []).append((a0, b0))
    found: list[tuple[int, int, int]] = []
    for d, spans in cand.items():
        holes: list[tuple[int, int]] = []
        for c in clips:
            if step[c.group] != d:  # a clip that moved otherwise: where it is and where it was
                at = c.at + new.shifts[c.group]
                holes.append((at, at + _reach(c)))
                at = c.at + old.shifts[c.group] + d
                holes.append((at, at + _reach(c)))
        holes.sort()
        found += [(a, b, d) for a, b in _subtract(spans, holes)]
    return sorted(found)


def anew(same: Sequence[tuple[int, int, int]], n: int) -> list[tuple[int, int]]:
    """The stretches of ``[0, n)`` outside ``same`` (:func:`unchanged`): what :func:`reassemble`
    assembles anew, and all it reads of the room tone."""
    out: list[tuple[int, int]] = []
    lo = 0
    for a, b, _ in [*same, (n, n, 0)]:
        if a > lo:
            out.append((lo, a))
        lo = max(lo, b)
    return out


def reassemble(
    clips: Sequence[Clip],
    old: Layout,
    new: Layout,
    done: tuple[Audio, Audio | None],
    noise: Audio | None,
    floor_power: float,
    n_stems: int = 0,
    stem_noise: Sequence[Audio] | None = None,
    same: list[tuple[int, int, int]] | None = None,
) -> tuple[Audio, Audio | None, list[tuple[int, int, int]]]:
    """:func:`assemble` at the ``new`` layout, given the assembly ``done`` at the ``old`` one:
    what only moved is copied from it, the rest (around the moves) assembled anew. Equal to
    assembling whole. Also returns the copied stretches (:func:`unchanged`; ``same``: those
    already found). ``noise`` and ``stem_noise`` are read only outside them."""
    same = unchanged(clips, old, new) if same is None else same
    out = np.empty(new.n, dtype=np.float32)
    stems = np.empty((new.n, n_stems), dtype=np.float32) if n_stems else None
    lo = 0
    for a, b, d in [*same, (new.n, new.n, 0)]:
        if a > lo:
            part, sp = assemble(
                clips, new.shifts, new.n, noise, floor_power, n_stems, lo=lo, hi=a,
                stem_noise=stem_noise,
            )  # fmt: skip
            out[lo:a] = part
            if stems is not None and sp is not None:
                stems[lo:a] = sp
        out[a:b] = done[0][a - d : b - d]
        if stems is not None and done[1] is not None:
            stems[a:b] = done[1][a - d : b - d]
        lo = max(lo, b)
    return out, stems, same


def _place_background(have: Audio, c: Clip, at: int) -> None:
    """Add a clip's own background power (its floor power times its squared envelope)."""
    if isinstance(c.floor_power, np.ndarray):
        place(have, np.square(c.env) * c.floor_power, at)
        return
    fp = np.float32(c.floor_power)
    if fp == 0:
        return
    n = len(c.env)
    a, b = max(0, at), min(len(have), at + n)
    if b <= a:
        return
    have[a:b] += fp  # the envelope is 1 but for its fades at both ends: correct those alone
    compiled = compiled_kernels()
    if (
        compiled is not None
        and have.dtype == np.float32
        and c.env.dtype == np.float32
        and have.flags.c_contiguous
        and c.env.flags.c_contiguous
    ):  # the same float32 steps, the samples under 1 found in one walk
        compiled.fade_background(have, c.env, at, a, b, fp, _FADE_SPAN)
        return
    m = min(n, _FADE_SPAN)
    for lo in (0, n - m) if n > m else (0,):
        part = c.env[lo : lo + m]
        idx = lo + np.flatnonzero(part < 1.0)
        idx = idx[(idx >= a - at) & (idx < b - at)]
        have[at + idx] -= fp * (1.0 - np.square(c.env[idx]))


def bed_cuts(spans: Sequence[tuple[int, int]], shifts: Sequence[int], n: int) -> list[int]:
    """Where each item's stretch of room tone ends (:func:`shift_bed`): at mid-gap, moved by
    half the change of shift across the gap; the last at ``n``."""
    cuts = []
    lo = 0
    for k, sh in enumerate(shifts):
        if k + 1 < len(shifts):
            mid = (spans[k][1] + spans[k + 1][0]) // 2
            hi = mid + sh + (shifts[k + 1] - sh) // 2
        else:
            hi = n
        lo = min(max(hi, lo), n)
        cuts.append(lo)
    return cuts


def shift_bed(
    bed: Audio,
    spans: Sequence[tuple[int, int]],
    shifts: Sequence[int],
    n: int,
    within: Sequence[tuple[int, int]] | None = None,
) -> Audio:
    """The bed cut at mid-gap and moved with the items, so the room tone under and around every
    turn is the very noise its edges were measured against (only mid-gap length changes).

    Where the items on a cut's two sides moved apart, the two stretches of noise are joined by
    a crossfade of ``2 * CUT_FADE_HALF`` samples centred on the cut, not butted: its gains keep
    the power of the sum at the bed's whatever the two stretches' correlation there (the same
    noise a few milliseconds apart), so the join is neither a click nor a dip.

    ``within`` (sorted, disjoint ``[lo, hi)`` stretches): only those samples are wanted (a
    correction pass assembles only around its moves, :func:`reassemble`); they hold the values
    of the whole bed, the rest is left unset (never read: zeroing it cost as much as copying)."""
    whole = [(0, n)] if within is None else within
    out = np.empty(n, dtype=np.float32)
    lo = 0
    cuts = bed_cuts(spans, shifts, n)
    for sh, hi in zip(shifts, cuts, strict=True):
        for w0, w1 in whole:
            w0, w1 = max(w0, lo), min(w1, hi)
            if w1 > w0:
                _copy_clamped(out, w0, w1, bed, w0 - sh)
        lo = hi
    h = CUT_FADE_HALF
    for k in range(len(shifts) - 1):
        c = cuts[k]
        if h <= 0 or shifts[k] == shifts[k + 1] or c - h < 0 or c + h > n:
            continue
        if not any(w0 < c + h and c - h < w1 for w0, w1 in whole):
            continue
        a = np.empty(2 * h, dtype=np.float32)
        b = np.empty(2 * h, dtype=np.float32)
        _copy_clamped(a, 0, 2 * h, bed, c - h - shifts[k])  # the left stretch, continued
        _copy_clamped(b, 0, 2 * h, bed, c - h - shifts[k + 1])  # the right one, begun early
        out[c - h : c + h] = _power_crossfade(a, b)
    return out


def _power_crossfade(a: Audio, b: Audio) -> Audio:
    """``a`` faded out and ``b`` in over their length (sine/cosine), the gains scaled so the
    expected power of the sum stays at theirs given their correlation over the span."""
    a64, b64 = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    pa, pb = float(np.dot(a64, a64)), float(np.dot(b64, b64))
    rho = float(np.dot(a64, b64)) / math.sqrt(pa * pb) if pa > 0 and pb > 0 else 0.0
    rho = min(max(rho, -0.9), 1.0)
    fo, fi = _crossfade_gains(a64.size)
    norm = 1.0 / np.sqrt(1.0 + 2.0 * rho * fo * fi)
    return np.asarray((a64 * fo + b64 * fi) * norm, dtype=np.float32)


@lru_cache(maxsize=8)
def _crossfade_gains(n: int) -> tuple[Floats, Floats]:
    """The cosine fade-out and sine fade-in of ``n`` samples (every cut's crossfade has the
    same length: computed once), read-only."""
    theta = (np.arange(n, dtype=np.float64) + 0.5) / n * (math.pi / 2)
    fo, fi = np.cos(theta), np.sin(theta)
    fo.flags.writeable = fi.flags.writeable = False
    return fo, fi


def _copy_clamped(out: Audio, lo: int, hi: int, src: Audio, at: int) -> None:
    """``out[lo:hi] = src[at : at + hi - lo]``, indices outside ``src`` clamped to its ends."""
    m, last = len(src), len(src) - 1
    a, b = max(at, 0), min(at + hi - lo, m)  # the part inside src
    if b <= a:  # wholly before or after it
        out[lo:hi] = src[0 if at + hi - lo <= 0 else last]
        return
    out[lo : lo + a - at] = src[0]
    out[lo + a - at : lo + b - at] = src[a:b]
    out[lo + b - at : hi] = src[last]
