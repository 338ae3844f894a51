"""Mixdown: clips laid over one steady room-tone floor, every speaker-change gap confirmed.

Used by the renderer (HH/HM windows) and by PH assembly. Input: *clips* (gained, faded pieces
of speech, each moving with a main item), each main item's acoustic extent in provisional output
samples, the drawn gap at every speaker change, and optionally a *bed*: room tone and the
dialogue's floor power.

1. **Assemble** (:func:`duetflow.rendering.assembly.assemble`). The floor is one level across
   the file: where no clip sounds, the bed is at the floor power; under a clip whose own
   background (its noise after gain, faded with it) is quieter, the bed tops it up to the floor
   power (the bed's power is the floor power less the clips' background power, sample by
   sample). The clips' fades are raised-cosine amplitude ramps and the bed follows their squared
   envelope, so power stays constant through every join (uncorrelated noise adds in power), with
   no dip or jump. Each stem (a speaker's layer, for the two-channel file) is filled the same
   way to the same floor power, over that speaker's own room tone where the bed has one
   (``Bed.stem_tones``).
2. **Confirm**. The dialogue is brought to the level and the 16-bit samples the file will hold
   and every speaker-change gap is measured on it with :func:`duetflow.audio.edges.measure_gap`
   as a reader measures it (:func:`measure_change`: on the whole file's envelopes, from the
   items' spans). A gap off its draw by more than :data:`GAP_TOLERANCE_S` is corrected by
   moving the following items by the difference, in whole envelope hops
   (:func:`duetflow.audio.edges.hop_samples`); the room tone moves with them (cut at mid-gap,
   so every edge keeps the background it was measured against). A correction pass assembles
   anew only around the moves (:func:`duetflow.rendering.assembly.reassemble`; what merely
   moved is copied, the same samples as assembling whole; the room tone is moved only there)
   and only the moved changes are measured again, from the edges found before, on the
   envelopes of their two items alone (:meth:`duetflow.audio.edges.BlockPowers.around`:
   :func:`~duetflow.audio.edges.analyse_around`'s analysis, equal there to the whole file's,
   made from the file's hop-block powers, which each pass carries over what it copied and
   analyses only where it assembled anew); every change is measured again, on the file
   analysed whole once, when the pass lowered the ceiling gain (every written sample changed).
   The changes after a move keep their measures, moved with them: a reader analyses the file
   on a hop grid fixed to its first sample, and items moved by whole hops sit on it as before,
   so it reads them as they were read (moved by part of a hop, a soft edge is read at another
   phase of the grid: up to a few ms elsewhere, docs/turn-taking.md). The share of windows
   that needed a move is in the result (``corrected``).

The rendered rows take the measured edges at every change, so the manifest's gap *is* the
acoustic gap of the file.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from duetflow.audio import bs1770, edges, kernels
from duetflow.audio import loudness as ld
from duetflow.audio.gap_tolerance import ROW_GAP_TOL_MS
from duetflow.audio.io import Audio, pcm16_levels
from duetflow.errors import InputError
from duetflow.rendering.assembly import (
    Bed,
    Clip,
    Layout,
    anew,
    assemble,
    bed_cuts,
    reassemble,
    shift_bed,
    stem_beds,
    unchanged,
    unit_noise,
)

log = logging.getLogger(__name__)

#: A measured gap further than this from its draw is corrected (s).
GAP_TOLERANCE_S = 0.002
#: Correction passes at most: a pass moves the items after every gap still off its draw and
#: measures those gaps again (one pass almost always suffices; the room tone joined anew can
#: shift an edge by a few ms). A gap whose correction overshot (its error changed sign) and
#: that lies in the band is kept: the measured edge flips between two places as the room tone
#: under it moves, and another pass would only flip it back (and might end outside the band).
MAX_CORRECTIONS = 3
#: Rejection reason of a dialogue whose gaps could not be confirmed inside the band.
GAP_UNCONFIRMED = "gap_unconfirmed"
#: Re-measurements from the edges found, at most, and how close two must agree to hold (s).
_REMEASURE = 3
_HOLD = 0.001
#: Audio either side of a pause that its measurement looks at (s).
CONTEXT_S = 0.5


@dataclass(frozen=True)
class Change:
    """A drawn speaker-change gap between main items ``after`` and ``after + 1``."""

    after: int
    gap_s: float


@dataclass
class Mix:
    """The assembled dialogue and what the confirmation measured (positions in output samples,
    after ``shifts``)."""

    out: Audio
    stems: Audio | None
    shifts: list[int]  # per main item, samples added to its provisional position
    measures: list[edges.GapMeasure | None]  # per change, on the final audio
    ceiling_db: float
    corrected: int = 0  # changes whose gap was moved
    #: ``out`` at ``ceiling_db`` as 16-bit PCM holds it (:func:`as_written`), when the
    #: confirmation made it (a dialogue with a speaker change); the file is written from it
    written: Audio | None = None


def as_written(x: Audio, gain_db: float) -> Audio:
    """``x`` at ``gain_db`` as 16-bit PCM holds it (what the file and its readers see)."""
    compiled = kernels.sample_kernels()
    if compiled is not None and x.dtype == np.float32 and x.ndim == 1 and x.flags.c_contiguous:
        w = np.empty(len(x), dtype=np.float32)  # the same float32 steps in one pass
        compiled.written16(x, np.float32(ld.db_to_gain(gain_db)), gain_db < 0, w)
        return w
    y = x * np.float32(ld.db_to_gain(gain_db)) if gain_db < 0 else x
    q = pcm16_levels(y)
    q *= np.float32(1.0 / 32768.0)
    return q


def _rewrite(
    out: Audio, gain_db: float, done: Audio, same: Sequence[tuple[int, int, int]]
) -> Audio:
    """:func:`as_written` of ``out``, given ``done``, the written form (at the same gain) of the
    assembly that ``out[lo:hi]`` copies at ``[lo - d, hi - d)`` for each of ``same``."""
    w = np.empty(len(out), dtype=np.float32)
    lo = 0
    for a, b, d in [*same, (len(out), len(out), 0)]:
        if a > lo:
            w[lo:a] = as_written(out[lo:a], gain_db)
        w[a:b] = done[a - d : b - d]
        lo = max(lo, b)
    return w


def measure_change(
    written: Audio,
    sr: int,
    prev: tuple[float, float],
    nxt: tuple[float, float],
    floor_db: float | None,
    analysis: edges.Analysis | None = None,
) -> edges.GapMeasure | None:
    """The pause between two items of a dialogue (output samples), against the floor level the
    file holds (``floor_db``; -inf: digital silence), measured as every reader of the rows
    measures it: ``analysis`` is the whole file's (:func:`duetflow.audio.edges.change_gaps`
    analyses whole files) or one equal to it around the two items
    (:func:`duetflow.audio.edges.analyse_around`); without it, only the audio around the pause
    is analysed. The measure is repeated from the edges it found, which the rows record as the
    turns' ends, until two agree within :data:`_HOLD`; edges found where they were looked for
    (``prev[1]``, ``nxt[0]``: a correction pass passes the edges found before) hold at once."""
    if analysis is None:
        ctx = int(CONTEXT_S * sr)
        r0, r1 = max(0, int(prev[1]) - ctx), min(len(written), int(math.ceil(nxt[0])) + ctx)
        analysis = edges.analyse(written, sr, r0, r1)
        a = (float(max(prev[0], r0)), float(prev[1]))
        b = (float(nxt[0]), float(min(nxt[1], r1)))
    else:
        a, b = (float(prev[0]), float(prev[1])), (float(nxt[0]), float(nxt[1]))
    hold = _HOLD * sr
    m = edges.measure_gap(written, sr, a, b, analysis=analysis, floor_db=floor_db)
    if m is not None and abs(m.offset - a[1]) < hold and abs(m.onset - b[0]) < hold:
        return m  # measured from its own edges already
    for _ in range(_REMEASURE):
        if m is None or not (a[0] < m.offset and m.onset < b[1]):
            break
        again = edges.measure_gap(
            written, sr, (a[0], m.offset), (m.onset, b[1]), analysis=analysis, floor_db=floor_db
        )
        if again is None:
            break
        held = abs(again.offset - m.offset) < hold and abs(again.onset - m.onset) < hold
        m = again
        if held:
            break
    return m


def _check_band(
    changes: Sequence[Change],
    measures: Sequence[edges.GapMeasure | None],
    band_s: tuple[float, float],
    sr: int,
) -> None:
    """Raise :class:`InputError` (``gap_unconfirmed``) when a confirmed gap lies outside the band
    by more than :data:`ROW_GAP_TOL_MS` (the rows carry it) or could not be measured at all."""
    tol = ROW_GAP_TOL_MS / 1000.0
    bad = []
    for c, m in zip(changes, measures, strict=True):
        gap = None if m is None else m.gap / sr
        if gap is None or not band_s[0] - tol <= gap <= band_s[1] + tol:
            shown = "none" if gap is None else f"{gap * 1000:.1f} ms"
            bad.append(f"after item {c.after}: {shown}")
    if bad:
        lo, hi = band_s[0] * 1000, band_s[1] * 1000
        raise InputError(
            None,
            f"speaker-change gaps not confirmed in [{lo:g}, {hi:g}] ms: " + "; ".join(bad[:5]),
            reason=GAP_UNCONFIRMED,
        )


def mixdown(
    clips: Sequence[Clip],
    spans: Sequence[tuple[int, int]],
    changes: Sequence[Change],
    duration_s: float,
    sr: int,
    *,
    bed: Bed | None,
    rng: np.random.Generator,
    ceiling_dbtp: float,
    n_stems: int = 0,
    band_s: tuple[float, float] | None = None,
) -> Mix:
    """Assemble, measure every speaker-change gap on the file's samples, correct what is off.

    ``spans``: each main item's acoustic extent in provisional output samples. Without a bed
    (a digitally clean source) pauses are measured against the absolute floor. A gap is
    corrected when it is off its draw by more than :data:`GAP_TOLERANCE_S`, or lies outside
    ``band_s`` (the configured window, seconds) at all.
    """
    n0 = int(round(duration_s * sr))
    noise = unit_noise(bed, n0, rng, sr) if bed is not None else None
    stem_noise = (
        stem_beds(bed, noise, n_stems, rng, sr) if bed is not None and noise is not None else None
    )
    power = bed.power if bed is not None else 0.0
    shifts = [0] * len(spans)
    out, stems = assemble(clips, shifts, n0, noise, power, n_stems, stem_noise=stem_noise)
    layout = Layout(shifts, n0, bed_cuts(spans, shifts, n0))

    def true_peak(x: Audio) -> float:
        # the true peak, or -inf where it lies under the ceiling's reach: every use below
        # compares it with the ceiling less 0.02-0.05 dB and decides the same either way
        if bs1770.true_peak_under(x, sr, ceiling_dbtp - 0.05):
            return -math.inf
        return bs1770.true_peak_dbtp(x, sr)

    peak = true_peak(out)
    ceiling = min(0.0, ceiling_dbtp - peak - 0.05) if math.isfinite(peak) else 0.0

    analysed: list[Any] = [None, None]
    powers: list[edges.BlockPowers | None] = [None]  # the written file's, in a correction pass

    def measure(
        c: Change, written: Audio, found: edges.GapMeasure | None = None
    ) -> edges.GapMeasure | None:
        # ``found``: the edges measured before this change's items moved (in their new
        # places): measured from them, a gap that holds is measured once
        k = c.after
        prev: tuple[float, float] = (spans[k][0] + shifts[k], spans[k][1] + shifts[k])
        nxt: tuple[float, float] = (
            spans[k + 1][0] + shifts[k + 1],
            spans[k + 1][1] + shifts[k + 1],
        )
        # the floor the file holds is the bed laid (after the ceiling): a soft tail that fills
        # half a pause does not pass for the pause's floor
        level = 10 * math.log10(power) + min(0.0, ceiling) if power > 0 else -math.inf
        if found is None:
            if analysed[0] is not written:  # the whole file's envelopes, once per version
                analysed[:] = [written, edges.analyse(written, sr)]
            an = analysed[1]
        else:
            if prev[0] < found.offset and found.onset < nxt[1]:
                prev, nxt = (prev[0], found.offset), (found.onset, nxt[1])
            # only the moved change's two items, analysed as the whole file would be (from
            # the file's block powers, analysed only where the pass assembled anew)
            bp = powers[0]
            an = (
                edges.analyse_around(written, sr, prev[0], nxt[1])
                if bp is None
                else bp.around(prev[0], nxt[1])
            )
        return measure_change(written, sr, prev, nxt, level, an)

    written = as_written(out, ceiling) if changes else out
    measures = [measure(c, written) for c in changes]
    tol = GAP_TOLERANCE_S * sr
    hop = edges.hop_samples(sr)

    def inside(m: edges.GapMeasure) -> bool:
        return band_s is None or band_s[0] * sr <= m.gap <= band_s[1] * sr

    def off(c: Change, m: edges.GapMeasure | None) -> int:
        # samples to add before item c.after + 1 (0: the gap holds its draw), in whole
        # envelope hops: the items after a move keep their place on the hop grid every reader
        # analyses on, so the gaps that merely moved with them measure as they did
        if m is None:
            return 0
        err = c.gap_s * sr - m.gap
        if abs(err) <= tol and inside(m):
            return 0
        # out of the band by less than half a hop: one hop towards the draw (in the band)
        return (int(round(err / hop)) or (1 if err > 0 else -1)) * hop

    def settled(i: int, before: int, now: int) -> bool:
        # a correction overshot (its error changed sign) and the gap lies in the band: the
        # instrument flips between two edges as the bed under them moves; chasing the draw
        # again would only flip it back, so the in-band gap is kept
        m = measures[i]
        return m is not None and before != 0 and (before > 0) != (now > 0) and inside(m)

    corrected: set[int] = set()
    todo = {i: d for i, c in enumerate(changes) if (d := off(c, measures[i]))}
    if todo and analysed[1] is not None:
        powers[0] = edges.BlockPowers.of(analysed[1])
    for _ in range(MAX_CORRECTIONS):
        if not todo:
            break
        corrected |= set(todo)
        deltas = [0] * len(spans)
        for i, d in todo.items():
            deltas[changes[i].after + 1] = d
        step = list(itertools.accumulate(deltas))
        shifts = [a + b for a, b in zip(shifts, step, strict=True)]
        n1 = n0 + shifts[-1]
        assert noise is None or len(noise) >= n0
        # only the stretches around the moves are assembled anew, the rest copied: the room
        # tone is moved only there
        moved = Layout(shifts, n1, bed_cuts(spans, shifts, n1))
        same = unchanged(clips, layout, moved)
        fresh = anew(same, n1)
        noise1 = shift_bed(noise, spans, shifts, n1, fresh) if noise is not None else None
        stem1 = None
        if noise1 is not None and stem_noise is not None:  # a stem over the mix's: noise1
            stem1 = [
                noise1 if x is noise else shift_bed(x, spans, shifts, n1, fresh) for x in stem_noise
            ]
        out, stems, same = reassemble(
            clips, layout, moved, (out, stems), noise1, power, n_stems, stem1, same
        )
        layout = moved
        # the clips moved whole: only the pauses around the moves hold new sums (room tone cut
        # and joined anew), so the true peak is the old one or one found there
        ctx = int(CONTEXT_S * sr)
        for i in todo:
            k = changes[i].after
            a = max(0, spans[k][1] + shifts[k] - ctx)
            b = min(len(out), spans[k + 1][0] + shifts[k + 1] + ctx)
            if b > a:
                peak = max(peak, true_peak(out[a:b]))
        regained = peak + ceiling > ceiling_dbtp - 0.02
        if regained:
            extra = ceiling_dbtp - 0.05 - (peak + ceiling)
            log.info("true peak moved after re-timing: %.3f dB more reduction", extra)
            ceiling += extra
            written = as_written(out, ceiling)
            # every written sample changed: the whole file analysed once for all its changes
            powers[0] = edges.BlockPowers.of(edges.analyse(written, sr))
        else:
            written = _rewrite(out, ceiling, written, same)
            if powers[0] is not None:
                powers[0] = powers[0].moved(written, same)
        # measured again: the moved changes, and every change when the gain (so every written
        # sample) changed; the rest moved whole hops with their two items: measured as before
        again = set(range(len(changes))) if regained else set(todo)
        for i, c in enumerate(changes):
            m = measures[i]
            if i in again:
                k = c.after
                was = None
                if m is not None:  # its edges where the move put them
                    was = replace(m, offset=m.offset + step[k], onset=m.onset + step[k + 1])
                measures[i] = measure(c, written, was)
            elif m is not None:  # moved with its two items by the moves before it
                sh = step[c.after]
                measures[i] = replace(m, offset=m.offset + sh, onset=m.onset + sh)
        todo = {
            i: d
            for i in sorted(again)
            if (d := off(changes[i], measures[i])) and not settled(i, todo.get(i, 0), d)
        }
    if band_s is not None:
        _check_band(changes, measures, band_s, sr)
    return Mix(out, stems, shifts, measures, ceiling, len(corrected), written if changes else None)
