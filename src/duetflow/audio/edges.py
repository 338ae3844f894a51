"""Acoustic speech edges: where speech meets the noise floor, on a short-time energy envelope.

This is the one definition of "where speech starts and ends" in duetflow. The renderer trims
turns with it, places clips by it and confirms every speaker-change gap on the rendered audio
with it; the report, the schema checks and the benchmark measure with it. The contract it
serves is written in docs/turn-taking.md (*Gaps*); its calibration is
``tests/audio/test_edges_calibration.py`` (signals built by :mod:`duetflow.audio.calibration`).

**Envelopes** (:func:`analyse`): mean-square energy in 10 ms windows every 2.5 ms, in dBFS, of
the signal as it is (*level* envelope) and of the signal high-passed at 100 Hz (*edge*
envelope). A room's rumble and mains hum live below 100 Hz, speech hardly does; their energy
flickers by several dB from one 10 ms window to the next, which would hide the last few dB of a
fading word. Edges are therefore read on the edge envelope, while the level speech must fall to
is the broadband floor's.

**Floor** (:func:`estimate_floor`): the background of a stretch of non-speech: its mean power
over the frames up to the quiet ones' upper reach (louder frames are events: a cough, a breath,
a tail the annotation missed), and how far single frames of the edge envelope rise above their
neighbourhood (*flicker*). A background with a fifth or more of its frames digitally silent
(below :data:`DIGITAL_DB`) has no level to measure: the absolute :data:`ABSOLUTE_FLOOR_DB`
stands in (a quiet listening room, about 47 dB under speech at -23 LUFS).

**Edge** (:func:`speech_extent`): where the speech alone falls to the floor's power. On the
envelope of speech plus noise that is a crossing of the floor plus 3 dB, raised above the
noise's flicker so that noise alone never reaches it (:meth:`Floor.edge_db`); a tail that
crosses that raised level is followed at its own rate of decay down to the floor (a tail that
sinks into the floor ends, for a listener, where it meets it). Detection has hysteresis: speech
is *entered* only at a core frame (well above the edge level and within
:data:`CORE_BELOW_PEAK_DB` of the turn's loud frames), then followed outward until the envelope
has stayed under the edge level for :data:`BRIDGE_S`. Steep edges are then placed within a
2.5 ms block (a 10 ms window reads a steep edge up to 5 ms outward). So quiet word endings (a
fricative, a decay 20–35 dB under the peak, a reverberant tail) stay inside the speech while
they are above the floor; a **breath intake** before an onset is not speech (it carries no
word): it never reaches a core level and the edge stops in the dip between it and the voicing.

Annotations and VAD only *locate* speech (a turn's ``hint``); edges come from energy.

Pure numpy/scipy, no configuration, no I/O. Positions are sample indices of the analysed
signal (floats: edges are interpolated between envelope frames).

One module (about 760 lines) on purpose: envelope, floor, edge and gap measurement are one
definition whose thresholds (:data:`EDGE_DB`, :data:`CORE_ABOVE_EDGE_DB`, the flicker and
quiet-run constants) and private helpers (``_crossing``, ``_sharpen``, ``_quietest``) are shared
by the floor estimate, the edge search and :func:`measure_gap`, and are calibrated together by
``tests/audio/test_edges_calibration.py``; splitting them would spread one contract over
modules that must change in step.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from scipy.ndimage import median_filter
from scipy.signal import butter

from duetflow.audio import kernels
from duetflow.audio.io import Audio, to_mono

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: Envelope hop (s).
HOP_S = 0.0025
#: Envelope window, in hops (10 ms: one period of the power ripple of 50 Hz hum).
WINDOW_HOPS = 4
#: Edges are read on the signal high-passed here (Hz, 2nd-order Butterworth).
HIGHPASS_HZ = 100.0
#: A frame below this level (dBFS) is digital silence.
DIGITAL_DB = -90.0
#: A background with at least this share of digitally silent frames is digital silence (a real
#: noise floor never holds one; a clean recording holds them between its tails).
DIGITAL_SHARE = 0.2
#: The floor assumed where the background is digital silence (dBFS, mean power).
ABSOLUTE_FLOOR_DB = -70.0
#: Speech power equal to noise power reads as floor + 3 dB on the envelope of their sum.
EDGE_DB = 10.0 * math.log10(2.0)
#: A core (speech-entering) frame is at least this far above the edge level ...
CORE_ABOVE_EDGE_DB = 7.0
#: ... and within this of the turn's loud frames (the 98th percentile inside its hint).
CORE_BELOW_PEAK_DB = 25.0
#: Speech ends only where the envelope stays at or under the edge level this long (s): the
#: flicker of a fading tail does not end it early.
BRIDGE_S = 0.008
#: Core frames this far outside a turn's hint still belong to the turn (s).
HINT_TOLERANCE_S = 0.1
#: How far past its hint a turn's edge is followed by default (s).
SEARCH_S = 0.5
#: A pause whose typical level is this far (and half its flicker) above its quietest 40 ms holds
#: more than its floor (a breath, a soft tail the first edges missed): its floor is its quietest
#: stretch.
EVENT_IN_PAUSE_DB = 3.0
#: Fewest envelope frames a floor is estimated from.
MIN_FLOOR_FRAMES = 4
#: A tail followed past its edge crossing at its own rate moves the edge by at most this (s).
MAX_EXTRAPOLATE_S = 0.1
_STEEP_DB = 10.0  # an edge whose envelope rises this much within one window is steep
_RING_S = 0.015  # how long the high-pass filter rings after a steep offset
_BLOCK_GUARD_DB = 6.0  # a hop block this far above the edge level holds speech, not flicker
_FIT_RANGE_DB = 8.0  # a tail's rate is read over this range above the edge level
_FIT_FRAMES = 40
_FLICKER_FRAMES = 21  # the neighbourhood (frames) flicker is measured against
_QUIET_S = 0.04  # the quietest stretch of a pause that seeds its floor
_DIP_S = 0.02  # a dip of the floor is judged over this long
_CLUSTER_DB = 10.0  # a background's frames lie this close to its quietest ones
_WARMUP_S = 0.1  # high-pass filter settling before an analysed range (transient < 1e-19)
#: How far outside a measured stretch its measurement reads envelope frames (s): a window's
#: half, a steep edge's hop blocks and the filter's ring (:func:`_sharpen`) and the flicker
#: median's neighbourhood, with room to spare (:func:`analyse_around`).
READ_REACH_S = 0.1
_SILENT_DB = -200.0  # the level given to a frame of exact zeros
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def quantiles(v: FloatArray, qs: Sequence[float]) -> list[float]:
    """Quantiles (0–100) of ``v`` by the nearest lower rank: one partial sort for all of them
    (numpy's ``percentile`` costs more than the envelope it is asked about)."""
    n = v.size
    ks = [min(n - 1, max(0, int(q / 100.0 * (n - 1)))) for q in qs]
    part = np.partition(v, sorted(set(ks)))
    return [float(part[k]) for k in ks]


def _median(v: FloatArray) -> float:
    """``numpy.median`` of a non-empty array without NaN, by one partial sort (the same value:
    the middle element, or the mean of the two middle ones)."""
    compiled = kernels.edge_kernels()
    if compiled is not None and v.dtype == np.float64:
        out = np.empty(1)
        if compiled.median(v, out):  # the same two order statistics, the same mean
            return float(out[0])
    n = v.size
    lo, hi = (n - 1) // 2, n // 2
    part = np.partition(v, [lo, hi])
    return float((part[lo] + part[hi]) / 2)


def _power(db: float) -> float:
    return float(10.0 ** (db / 10.0))


def _db(power: float) -> float:
    return 10.0 * math.log10(power) if power > 0 else _SILENT_DB


@dataclass(frozen=True)
class Envelope:
    """Energy envelope: ``db[k]`` is the level (dBFS) of ``WINDOW_HOPS`` hop blocks starting at
    block ``k``; ``blocks`` holds each hop block's mean power. Sample positions are the
    analysed signal's own: block 0 starts at sample ``start``."""

    db: FloatArray
    hop: int
    sr: int
    start: int = 0
    blocks: FloatArray = field(default_factory=lambda: np.zeros(0), repr=False)

    def __len__(self) -> int:
        return len(self.db)

    def center(self, k: float) -> float:
        """Sample position of frame ``k``'s centre (fractional frames allowed)."""
        return self.start + (k + WINDOW_HOPS / 2) * self.hop

    def span(self, a: float, b: float) -> tuple[int, int]:
        """Frames whose centres lie in ``[a, b)``, clipped to the envelope."""
        k0 = int(math.ceil((a - self.start) / self.hop - WINDOW_HOPS / 2))
        k1 = int(math.ceil((b - self.start) / self.hop - WINDOW_HOPS / 2))
        return max(0, k0), min(len(self.db), max(0, k1))


def _envelope(p: FloatArray, sr: int, start: int, hop: int) -> Envelope:
    """The envelope of hop blocks of mean power ``p`` (block 0 at sample ``start``)."""
    count = len(p)
    if count < WINDOW_HOPS:
        return Envelope(np.zeros(0), hop, sr, start, np.zeros(0))
    # each window the sum of its own hop blocks (not a difference of running sums): a frame's
    # value depends on its samples alone, wherever the analysed stretch starts
    compiled = kernels.edge_kernels()
    if compiled is not None:  # the same adds in the same order (duetflow.audio.edge_kernels)
        w = np.empty(count - WINDOW_HOPS + 1)
        audible = int(compiled.window_sums(p, WINDOW_HOPS, w))
    else:
        w = p[: count - WINDOW_HOPS + 1].copy()
        for j in range(1, WINDOW_HOPS):
            w += p[j : count - WINDOW_HOPS + 1 + j]
        w /= WINDOW_HOPS
        audible = -1
    # a window of digital silence (all its blocks zero) sums to zero: the frames with power
    # are those with w > 0; log10 is taken element by element, the same on all as on some
    if audible == len(w):
        db = 10.0 * np.log10(w)
    else:
        db = np.full(len(w), _SILENT_DB)
        ok = w > 0
        db[ok] = 10.0 * np.log10(w[ok])
    np.maximum(db, _SILENT_DB, out=db)
    return Envelope(db, hop, sr, start, p)


#: Chains the high-pass of a stretch is cut into (:func:`_chain_plan`), by its length in hop
#: blocks: a recursion is bound by its latency, independent ones side by side cost little more
#: than one (:func:`duetflow.audio.edge_kernels.hop_powers`: 32 vectorised lanes, or four
#: interleaved chains). Measured crossovers (a chain's warm-up against the overlap, on stretches
#: with 0.1 s of warm-up): four chains pay from ~200 blocks (0.5 s at 16 kHz), 32 from ~800 (2 s).
_CHAIN_COUNTS = ((800, 32), (200, 4))

#: (first sample, warm-up blocks, blocks, first block written) of each chain; int64 arrays
ChainPlan = tuple[
    npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]
]


def _chain_plan(count: int, hop: int, warm: int, sr: int) -> ChainPlan:
    """How the high-pass of ``count`` hop blocks that follow ``warm`` samples of warm-up (a
    float32 stretch ``x``, block ``k`` at ``x[warm + k * hop]``) is cut into chains.

    The first chain starts at ``x[0]``, from a zero state (as one unbroken recursion would).
    A longer stretch is cut into ``k`` contiguous chains on the hop grid (:data:`_CHAIN_COUNTS`);
    each later chain starts from a zero state ``W >= _WARMUP_S`` early (``W = warm + m * hop``,
    so that every chain's blocks start at the same step), by when the state it missed has
    decayed below float64 resolution of the signal's scale (the pole radius to the ``W``: ~5e-20,
    times the state's gain): its outputs are the unbroken recursion's up to float64 roundings.
    The first chain takes ``m`` blocks more than the others, so that all run the same number of
    steps (the last one takes the remainder's few blocks alone). A function of the stretch's
    length alone: the same stretch is cut the same way wherever it is analysed from, with or
    without the compiled kernels."""
    m = max(0, -(-(int(_WARMUP_S * sr) - warm) // hop))
    k = next((k for least, k in _CHAIN_COUNTS if count >= least + m), 1)
    q = (count - m) // k
    if k == 1 or q < 1:
        one = np.array([0], dtype=np.int64)
        return one, np.zeros(1, np.int64), np.array([count], np.int64), np.zeros(1, np.int64)
    first = np.array([0] + [q + m + j * q for j in range(k - 1)], dtype=np.int64)
    blocks = np.full(k, q, dtype=np.int64)
    blocks[0] += m
    blocks[-1] += count - m - k * q
    pre = np.full(k, m, dtype=np.int64)
    pre[0] = 0
    pos = (first - pre) * hop  # each chain's warm-up, ``warm + pre * hop``, before its blocks
    return pos, pre, blocks, first


def _block_powers(s: FloatArray) -> FloatArray:
    """Each row's mean square: the squares summed in float64 in sample order."""
    d = s * s
    acc = d[:, 0].copy()
    for j in range(1, d.shape[1]):
        acc += d[:, j]
    acc /= d.shape[1]
    return acc


def _hop_powers(
    x: npt.NDArray[np.float32], warm: int, count: int, hop: int, sr: int
) -> tuple[FloatArray, FloatArray]:
    """The mean power of each of ``count`` hop blocks after ``warm`` samples of the float32
    stretch ``x``: of its 100 Hz high-pass (edge) and of ``x`` itself (level).

    The high-pass (:func:`_highpass_ba`'s float32 coefficients) runs with a float64 state: each
    chain of :func:`_chain_plan` is scipy's float64 ``lfilter`` of its samples widened, from a
    zero state (within float64 rounding of the exact filter; the float32 recursion this
    replaced strayed from it by up to ~2e-3 dB on quiet frames). A block's power is its
    samples' squares summed in float64 in sample order (a float32 sample's square is exact
    there), divided by the hop: one definition, the same on every machine. Compiled
    (:func:`duetflow.audio.edge_kernels.hop_powers`: one pass, the high-passed samples never
    stored, four chains side by side) where numba is, else scipy and numpy chain by chain: the
    same bits."""
    pe = np.empty(count)
    pl = np.empty(count)
    if count == 0:
        return pe, pl
    _chain_powers(x, warm, hop, sr, _chain_plan(count, hop, warm, sr), pe, pl)
    return pe, pl


def _chain_powers(
    x: npt.NDArray[np.float32], warm: int, hop: int, sr: int, plan: ChainPlan,
    pe: FloatArray, pl: FloatArray,
) -> None:  # fmt: skip
    """:func:`_hop_powers`' chains (``plan``, as :func:`_chain_plan` lays them) of the float32
    signal ``x``, each written to ``pe``/``pl`` at its first block: compiled in one call where
    numba is, else scipy and numpy chain by chain (the same bits)."""
    b32, a32 = _highpass_ba(sr)
    b, a = b32.astype(np.float64), a32.astype(np.float64)
    pos, pre, blocks, first = plan
    compiled = kernels.edge_kernels()
    if compiled is not None:
        c = np.concatenate((b / a[0], a[1:] / a[0]))  # as lfilter normalises
        st = np.zeros((len(pos), 2))
        compiled.hop_powers(c, x, warm, hop, pos, pre, blocks, first, st, pe, pl)
        return
    for j in range(len(pos)):
        seg = x[int(pos[j]) : int(pos[j]) + warm + int(pre[j] + blocks[j]) * hop]
        s0 = warm + int(pre[j]) * hop
        lo, hi = int(first[j]), int(first[j] + blocks[j])
        wide = seg.astype(np.float64)
        y = np.asarray(kernels.lfilter(b, a, wide), dtype=np.float64)
        pe[lo:hi] = _block_powers(y[s0:].reshape(-1, hop))
        pl[lo:hi] = _block_powers(wide[s0:].reshape(-1, hop))


@functools.lru_cache(maxsize=16)
def _highpass_ba(sr: int) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    b, a = butter(2, HIGHPASS_HZ, "highpass", fs=sr)
    return np.asarray(b, dtype=np.float32), np.asarray(a, dtype=np.float32)


#: Envelope lengths (frames) below which the compiled running median is used (measured: 7x
#: scipy on 100 frames, 0.85x on 18,000)
_MEDIAN_COMPILED_BELOW = 2000


def running_median(db: FloatArray) -> FloatArray:
    """``scipy.ndimage.median_filter(db, size=_FLICKER_FRAMES, mode="nearest")``: compiled where
    numba is (a median of an odd count is one of the values, so the same numbers), else scipy.
    The compiled walk is for the short stretches a pause's floor reads (~7x scipy there, whose
    set-up dominates); on a whole track's envelope scipy's own is as fast or faster."""
    compiled = kernels.edge_kernels()
    if compiled is not None and len(db) < _MEDIAN_COMPILED_BELOW:
        x = np.ascontiguousarray(db, dtype=np.float64)
        out = np.empty_like(x)
        if compiled.running_median(x, _FLICKER_FRAMES, out):
            return out
    res: FloatArray = median_filter(db, size=_FLICKER_FRAMES, mode="nearest")
    return res


@dataclass(frozen=True)
class Analysis:
    """The two envelopes of one signal (same frame grid): ``edge`` (high-passed, where edges are
    read) and ``level`` (broadband, the floor's level)."""

    edge: Envelope
    level: Envelope

    @property
    def sr(self) -> int:
        return self.edge.sr

    @functools.cached_property
    def edge_median(self) -> FloatArray:
        """The edge envelope's running median over :data:`_FLICKER_FRAMES` (edges held), once
        per analysis: every floor estimated on it reads its flicker against this."""
        return running_median(self.edge.db)

    def edge_median_in(self, lo: int, hi: int) -> FloatArray:
        """:attr:`edge_median` on frames ``[lo, hi)``: the same values, computed from those
        frames and their neighbourhoods only when the stretch is short (a pause)."""
        n = len(self.edge.db)
        if 4 * (hi - lo) >= n or "edge_median" in self.__dict__:
            return self.edge_median[lo:hi]
        r = _FLICKER_FRAMES // 2
        a, b = max(0, lo - r), min(n, hi + r)
        return running_median(self.edge.db[a:b])[lo - a : hi - a]


def analyse(samples: Audio, sample_rate: int, start: int = 0, stop: int | None = None) -> Analysis:
    """Envelopes of ``samples[start:stop]`` (mono; several channels are averaged).

    The high-pass runs from :data:`_WARMUP_S` before ``start`` (or from the signal's start),
    a long stretch in chains side by side (:func:`_chain_plan`), each started from a zero state
    that early: a frame's level differs from that of one unbroken float32 recursion by float32
    roundings (~1e-6 dB). Hop powers are float64 sums of the samples' squares
    (:func:`_hop_powers`)."""
    x = to_mono(samples)
    stop = len(x) if stop is None else min(int(stop), len(x))
    start = max(0, min(int(start), stop))
    hop = hop_samples(sample_rate)
    warm = min(start, int(_WARMUP_S * sample_rate))
    count = (stop - start) // hop
    if count < WINDOW_HOPS:
        none = Envelope(np.zeros(0), hop, sample_rate, start, np.zeros(0))
        return Analysis(none, none)
    seg = np.ascontiguousarray(x[start - warm : start + count * hop], dtype=np.float32)
    pe, pl = _hop_powers(seg, warm, count, hop, sample_rate)
    return Analysis(_envelope(pe, sample_rate, start, hop), _envelope(pl, sample_rate, start, hop))


def analyse_many(signals: Sequence[Audio], sample_rate: int) -> list[Analysis]:
    """:func:`analyse` of each whole signal, bit for bit (each long one's high-pass already runs
    in chains side by side)."""
    return [analyse(x, sample_rate) for x in signals]


def hop_samples(sample_rate: int) -> int:
    """The envelope hop in samples."""
    return max(1, int(round(sample_rate * HOP_S)))


def analyse_around(samples: Audio, sample_rate: int, a: float, b: float) -> Analysis:
    """Envelopes of the stretch ``[a, b)`` (samples) of a signal, equal to the whole signal's
    :func:`analyse` on every frame a measurement inside that stretch reads.

    The stretch is widened by :data:`READ_REACH_S` and its start put on the whole signal's hop
    grid (frame ``k`` here is frame ``start / hop + k`` there); the high-pass runs from
    :data:`_WARMUP_S` before it, by when the filter's start has decayed below float64
    resolution of the signal's scale (the two runs' chains are cut at other places: frame
    levels agree to ~1e-13 dB, see :func:`_chain_plan`). Measurements (:func:`measure_gap`,
    :func:`speech_extent`) of spans inside ``[a, b)`` on it equal those on the whole signal's
    analysis to well under a thousandth of a sample (tested on constructed signals), at the
    cost of the stretch instead of the file.
    """
    x = to_mono(samples)
    hop = hop_samples(sample_rate)
    reach = READ_REACH_S * sample_rate
    start = max(0, int(math.floor((a - reach) / hop)) * hop)
    stop = min(len(x), int(math.ceil(b + reach)))
    return analyse(x, sample_rate, start, stop)


@dataclass(frozen=True)
class BlockPowers:
    """The hop blocks' mean powers of a whole signal (block ``j`` at sample ``j * hop``): of its
    100 Hz high-pass (``edge``) and of itself (``level``), as :func:`analyse` computes them.

    What the envelopes of any stretch are made of: :meth:`around` gives
    :func:`analyse_around`'s analysis from them, and :meth:`moved` those of a signal that
    copies stretches of this one by whole hops (a correction pass of the mixdown, which moves
    items by whole hops and assembles anew only around the moves) without analysing the
    copied stretches again."""

    edge: FloatArray
    level: FloatArray
    hop: int
    sr: int

    @classmethod
    def of(cls, an: Analysis) -> BlockPowers | None:
        """The block powers of a whole-signal :func:`analyse` (None: too short to have any)."""
        if an.edge.start != 0 or len(an.edge.blocks) == 0:
            return None
        return cls(an.edge.blocks, an.level.blocks, an.edge.hop, an.edge.sr)

    def around(self, a: float, b: float) -> Analysis:
        """:func:`analyse_around` of ``[a, b)``: the same stretch and frame grid, its envelopes
        made from these blocks."""
        hop, sr = self.hop, self.sr
        reach = READ_REACH_S * sr
        start = max(0, int(math.floor((a - reach) / hop)) * hop)
        stop = min(len(self.edge) * hop, int(math.ceil(b + reach)))
        count = max(0, (stop - start) // hop)
        if count < WINDOW_HOPS:
            none = Envelope(np.zeros(0), hop, sr, start, np.zeros(0))
            return Analysis(none, none)
        k = start // hop
        return Analysis(
            _envelope(self.edge[k : k + count], sr, start, hop),
            _envelope(self.level[k : k + count], sr, start, hop),
        )

    def moved(self, samples: Audio, same: Sequence[tuple[int, int, int]]) -> BlockPowers:
        """The block powers of ``samples`` (a whole signal, mono), where each ``(lo, hi, d)`` of
        ``same`` says ``samples[lo:hi]`` equals this signal's ``[lo - d, hi - d)``.

        A block is taken over (from block ``j - d / hop``) when ``d`` is whole hops and the
        block and the high-pass's :data:`_WARMUP_S` of settling before it lie in the copied
        stretch (or the stretch starts the signal, unmoved): its filter state then differs from
        the one the samples give by less than float64 resolution of their scale, as between
        :func:`analyse_around` and :func:`analyse`. The other blocks are analysed, each run of
        them from :data:`_WARMUP_S` before it, as :func:`analyse` would."""
        x = to_mono(samples)
        hop, sr = self.hop, self.sr
        n = len(x) // hop
        pe, pl = np.empty(n), np.empty(n)
        todo = np.ones(n, dtype=bool)
        warm = int(_WARMUP_S * sr)
        for lo, hi, d in same:
            if d % hop:
                continue
            dk = d // hop
            j0 = max(-(-(lo + (0 if lo == 0 and d == 0 else warm)) // hop), dk)
            j1 = min(hi // hop, n, len(self.edge) + dk)
            if j1 > j0:
                pe[j0:j1] = self.edge[j0 - dk : j1 - dk]
                pl[j0:j1] = self.level[j0 - dk : j1 - dk]
                todo[j0:j1] = False
        cut = np.flatnonzero(np.diff(np.concatenate(([False], todo, [False])).astype(np.int8)))
        runs = cut.reshape(-1, 2)
        starts, stops = runs[:, 0].copy(), runs[:, 1].copy()  # contiguous, as the kernel's
        if len(runs):
            # each run one chain from a zero state, ``warm`` samples before it (as analysing it
            # alone would), all in one call; a run that starts within that of the signal's
            # start warms up from the start alone
            x32 = np.ascontiguousarray(x, dtype=np.float32)
            early = starts * hop < warm  # the first run at most
            groups = [(starts[~early], stops[~early], warm)] + [
                (starts[k : k + 1], stops[k : k + 1], int(starts[k]) * hop)
                for k in np.flatnonzero(early)
            ]
            for first, last, w in groups:
                if len(first):
                    zero = np.zeros(len(first), np.int64)
                    plan: ChainPlan = (first * hop - w, zero, last - first, first)
                    _chain_powers(x32, w, hop, sr, plan, pe, pl)
        return BlockPowers(pe, pl, hop, sr)


@dataclass(frozen=True)
class Floor:
    """A background: its broadband level ``db`` (mean power, dBFS: the level speech falls to),
    its level ``hp_db`` on the high-passed signal and how far single frames there rise above it
    (``spread_db``); ``digital`` when it is digital silence."""

    db: float
    hp_db: float
    spread_db: float = 0.0
    digital: bool = False

    @property
    def power(self) -> float:
        """Broadband mean power (0 for digital silence)."""
        return 0.0 if self.digital else _power(self.db)

    @property
    def hp_power(self) -> float:
        """High-passed mean power (0 for digital silence)."""
        return 0.0 if self.digital else _power(self.hp_db)

    def edge_db(self, speech_floor_db: float | None = None) -> float:
        """Level of a speech edge on the edge envelope over this background.

        ``speech_floor_db``: the level the speech must fall to (default: this floor's own); the
        renderer passes the rendered file's floor brought to the source's scale, so that edges
        measured on a source are the edges the file will show.
        """
        target = self.db if speech_floor_db is None else speech_floor_db
        total = _db(_power(target) + self.hp_power)
        if self.digital:
            return total
        return max(total, self.hp_db + self.spread_db + 0.5)

    def gained(self, gain_db: float) -> Floor:
        """This floor after a gain (a digital floor stays at the absolute level)."""
        if self.digital:
            return self
        return Floor(self.db + gain_db, self.hp_db + gain_db, self.spread_db, False)


DIGITAL_FLOOR = Floor(ABSOLUTE_FLOOR_DB, ABSOLUTE_FLOOR_DB, 0.0, True)


def _trimmed_level(v: FloatArray) -> float:
    """Mean power (dB) of frames up to the quiet ones' upper reach (louder ones are events)."""
    q50, q75 = quantiles(v, (50, 75))
    top = q50 + 4.5 * max(q75 - q50, 0.05)
    sel = v[v <= top]
    return _db(float(np.mean(np.power(10.0, sel / 10.0))))


def estimate_floor(an: Analysis, mask: BoolArray | None = None) -> Floor | None:
    """The floor of the background frames ``mask`` (all frames when None); None if too few."""
    n = len(an.edge)
    if mask is None:
        return _floor_in(an, 0, n)
    # the mask's own stretch (a pause is a few dozen frames of a whole file)
    on = np.flatnonzero(mask[:n])
    if on.size < MIN_FLOOR_FRAMES:
        return None
    i0, i1 = int(on[0]), int(on[-1]) + 1
    return _floor_in(an, i0, i1, mask[i0:i1])


_NO_MASK = np.zeros(0, dtype=bool)


def _floor_compiled(
    an: Analysis, i0: int, i1: int, m: BoolArray | None
) -> Floor | Literal[False] | None:
    """:func:`_floor_in` by one compiled pass (:func:`duetflow.audio.edge_kernels.floor_stats`:
    the frames' selection, their quantiles and the flicker against the running median at the
    frames used), the powers and their means still numpy's (``np.power`` is dispatched per
    CPU; ``np.add.reduce`` on the same values in the same order); False where numba is
    missing or a NaN leaves the order to numpy."""
    compiled = kernels.edge_kernels()
    lv, hv = an.level.db, an.edge.db
    if (
        compiled is None
        or lv.dtype != np.float64
        or hv.dtype != np.float64
        or not (lv.flags.c_contiguous and hv.flags.c_contiguous)
        or len(lv) != len(hv)
        or (m is not None and len(m) != i1 - i0)
    ):
        return False
    res = np.empty(4)
    mask = _NO_MASK if m is None else np.ascontiguousarray(m, dtype=bool)
    status, values = compiled.floor_stats(
        lv, hv, i0, i1, mask, m is not None, _FLICKER_FRAMES, DIGITAL_DB, DIGITAL_SHARE,
        MIN_FLOOR_FRAMES, res,
    )  # fmt: skip
    return _floor_of_stats(status, values, res)


def _floor_of_stats(
    status: int, values: FloatArray, res: FloatArray
) -> Floor | Literal[False] | None:
    """The floor :func:`duetflow.audio.edge_kernels.floor_stats` measured (its status, values
    and results): the powers and their means numpy's; False: a NaN, numpy decides."""
    if status == 0:
        return None
    if status == 1:
        return DIGITAL_FLOOR
    if status != 2:
        return False
    nl, nh = int(res[0]), int(res[1])
    # _trimmed_level's means: the same powers (elementwise), the same pairwise sums
    p = np.power(10.0, values / 10.0)
    level = _db(float(np.add.reduce(p[:nl])) / nl)
    hp = _db(float(np.add.reduce(p[nl:])) / nh)
    flicker, q50 = float(res[2]), float(res[3])
    return Floor(level, hp, max(0.0, q50 + flicker - hp), False)


def _floor_in(an: Analysis, i0: int, i1: int, m: BoolArray | None = None) -> Floor | None:
    """:func:`estimate_floor` of the frames ``m`` of ``[i0, i1)`` (all of them when None: no
    mask is built for a stretch, the same numbers)."""
    n = len(an.edge)
    i0, i1 = max(0, i0), min(n, i1)
    measured = _floor_compiled(an, i0, i1, m)
    if measured is not False:
        return measured
    count = max(0, i1 - i0) if m is None else int(np.count_nonzero(m))
    if count < MIN_FLOOR_FRAMES:
        return None
    lv, hv = an.level.db[i0:i1], an.edge.db[i0:i1]
    digital = lv < DIGITAL_DB
    silent = int(np.count_nonzero(digital if m is None else digital & m))
    if silent >= DIGITAL_SHARE * count:
        return DIGITAL_FLOOR
    every = m is None and silent == 0  # every frame used: slices, not gathers (same values)
    use = None if every else (~digital if m is None else m & ~digital)
    lu, hu = (lv, hv) if use is None else (lv[use], hv[use])
    idx = None if use is None else np.flatnonzero(use) + i0
    first, last = (i0, i1 - 1) if idx is None else (int(idx[0]), int(idx[-1]))
    # the frames used lie a whole neighbourhood inside [lo, hi) or reach the envelope's ends:
    # the running median of the whole envelope is theirs
    lo, hi = max(0, first - _FLICKER_FRAMES), min(n, last + _FLICKER_FRAMES + 1)
    med = an.edge_median_in(lo, hi)
    dev = hu - (med[first - lo : last + 1 - lo] if idx is None else med[idx - lo])
    level, hp = _trimmed_level(lu), _trimmed_level(hu)
    flicker = quantiles(dev, (99,))[0]
    q50 = quantiles(hu, (50,))[0]
    return Floor(level, hp, max(0.0, q50 + flicker - hp), False)


def background_mask(
    env: Envelope, speech: Sequence[tuple[float, float]], margin: float = 0.0
) -> BoolArray:
    """Frames whose windows lie clear of every ``speech`` span (samples, ``margin`` around)."""
    keep = np.ones(len(env), dtype=bool)
    half = WINDOW_HOPS / 2 * env.hop  # a frame reaches this far either side of its centre
    for a, b in speech:
        k0, k1 = env.span(a - margin - half, b + margin + half)
        keep[k0:k1] = False
    return keep


def floor_of(
    an: Analysis,
    speech: Sequence[tuple[float, float]] = (),
    margin: float = 0.0,
    *,
    usable: BoolArray | None = None,
) -> Floor | None:
    """The floor of everything outside ``speech`` (samples) and inside ``usable`` frames.

    When that leaves too little (annotations with no room between them), or no speech is
    given, the background is found from the signal: the frames within 10 dB of the quietest
    give a first floor, the frames under its edge level the floor; None when there is too
    little.
    """
    ok = np.ones(len(an.edge), dtype=bool) if usable is None else usable.copy()
    if speech:
        floor = estimate_floor(an, ok & background_mask(an.edge, speech, margin))
        if floor is not None:
            return floor
    v = an.level.db[ok]
    if v.size < MIN_FLOOR_FRAMES * 5:
        return estimate_floor(an, ok)
    digital = v < DIGITAL_DB
    if np.count_nonzero(digital) >= DIGITAL_SHARE * v.size:
        return DIGITAL_FLOOR
    # the quietest frames and those within 10 dB of them: the background, however little of
    # the signal it is (speech sits well above it); then the frames under the edge level that
    # first floor implies, measured whole (the quietest frames alone read low)
    low = quantiles(v[~digital], (1,))[0] + _CLUSTER_DB
    seed = estimate_floor(an, ok & (an.level.db <= low))
    if seed is None or seed.digital:
        return seed
    return estimate_floor(an, ok & (an.edge.db <= seed.edge_db())) or seed


def _quiet_run(values: FloatArray, level: float, m: int) -> int | None:
    """Index of the first frame of the first run of at least ``m`` frames of ``values`` at or
    under ``level`` (or of such a run reaching the end of ``values``); None when there is none.

    Walked frame by frame in growing chunks: an edge is usually within a few dozen frames of
    the core it is walked out from, where a few numpy calls would cost more than the walk."""
    n = values.size
    pos = run = 0
    size = 64
    while pos < n:
        for k, quiet in enumerate((values[pos : pos + size] <= level).tolist(), pos):
            if quiet:
                run += 1
                if run >= m:
                    return k - run + 1
            else:
                run = 0
        pos += size
        size *= 4
    return n - run if run else None


def _quiet_walk(db: FloatArray, origin: int, n: int, step: int, level: float, m: int) -> int | None:
    """:func:`_quiet_run` of ``db[origin + step * i]`` for ``i < n`` (``step`` 1: outward after
    a core frame, -1: outward before it), compiled where numba is."""
    compiled = kernels.edge_kernels()
    if compiled is not None and db.flags.c_contiguous and db.dtype == np.float64:
        q = int(compiled.quiet_run(db, origin, n, step, level, m))
        return None if q < 0 else q
    values = db[origin : origin + n] if step > 0 else db[origin - n + 1 : origin + 1][::-1]
    return _quiet_run(values, level, m)


def _crossing(env: Envelope, db: FloatArray, k0: int, below: int, above: int, lv: float) -> float:
    """Sample position where ``db`` (frames ``k0``…) crosses ``lv`` between adjacent frames."""
    a, b = db[below - k0], db[above - k0]
    frac = 0.5 if b == a else min(1.0, max(0.0, (lv - a) / (b - a)))
    return env.center(below + frac * (above - below))


def _sharpen(env: Envelope, edge: float, edge_db: float, *, rising: bool) -> float:
    """A steep edge placed on the broadband envelope's hop blocks (``env``: the level
    envelope).

    A window straddling a steep edge reads above the edge level while any of it holds speech,
    so a steep onset shows up to half a window early and a steep offset as late; after a steep
    offset the high-pass filter also rings for a few ms. Within that reach the broadband hop
    blocks tell where the level crosses: between the last block under it and the first above
    (interpolated in dB between block centres; into or out of digital silence, by the share of
    the block the speech fills).
    """
    p = env.blocks
    pos = (edge - env.start) / env.hop
    half = WINDOW_HOPS / 2.0
    ring = _RING_S / HOP_S
    if rising:
        j0, j1 = int(math.floor(pos)) - 1, int(math.floor(pos + half)) + 1
    else:
        j0, j1 = int(math.floor(pos - half - ring)) - 1, int(math.floor(pos)) + 1
    j0, j1 = max(j0, 1), min(j1, len(p) - 2)
    if j1 < j0:
        return edge
    # blocks clearly above the edge level (a 2.5 ms block of noise flickers by several dB)
    hits = np.flatnonzero(p[j0 : j1 + 1] > _power(edge_db + _BLOCK_GUARD_DB))
    if hits.size == 0:
        return edge
    lo = _power(edge_db)
    if rising:
        j = j0 + int(hits[0])
        for _ in range(2):  # the block the speech enters in may be under the guard
            if j - 1 >= 1 and p[j - 1] > lo:
                j -= 1
        # j: first block above the edge level; block j - 1 is under it
        if p[j - 1] == 0:  # out of digital silence: the block is the speech's share of the next
            fill = min(1.0, float(p[j] / p[j + 1])) if p[j + 1] > 0 else 1.0
            return max(env.start + (j + 1.0 - fill) * env.hop, edge)
        a, b = _db(float(p[j - 1])), _db(float(p[j]))
        frac = 0.5 if b == a else min(1.0, max(0.0, (edge_db - a) / (b - a)))
        return max(env.start + (j - 0.5 + frac) * env.hop, edge)
    j = j0 + int(hits[-1])
    for _ in range(2):
        if j + 2 < len(p) and p[j + 1] > lo:
            j += 1
    # j: last block above the edge level; block j + 1 is under it
    if p[j + 1] == 0:  # into digital silence
        fill = min(1.0, float(p[j] / p[j - 1])) if p[j - 1] > 0 else 1.0
        return min(env.start + (j + fill) * env.hop, edge)
    a, b = _db(float(p[j])), _db(float(p[j + 1]))
    frac = 0.5 if b == a else min(1.0, max(0.0, (a - edge_db) / (a - b)))
    return min(env.start + (j + 0.5 + frac) * env.hop, edge)


def _broad_edge(floor: Floor, target_db: float) -> float:
    """Level of an edge on the broadband envelope: speech at ``target_db`` over the floor."""
    return _db(_power(target_db) + floor.power)


def _beyond(inside: FloatArray, edge_db: float, floor: Floor, target_db: float) -> float:
    """Frames by which a fading tail goes on past its edge crossing, under the noise's reach.

    ``inside``: edge-envelope frames from the crossing inward. The speech alone (frame power
    less the background's) fades at a rate measured just inside the edge; followed at that rate
    from the edge level down to ``target_db`` it meets the floor. Bounded by
    :data:`MAX_EXTRAPOLATE_S`; nothing for a steep edge or a digital floor.
    """
    noise = floor.hp_power
    at_edge = _db(_power(edge_db) - noise)
    drop = at_edge - target_db
    if drop <= 0.05 or inside.size < 2:
        return 0.0
    s = 10.0 * np.log10(np.maximum(np.power(10.0, inside[:_FIT_FRAMES] / 10.0) - noise, 1e-30))
    out = np.flatnonzero(s > at_edge + _FIT_RANGE_DB)
    n = int(out[0]) if out.size else s.size
    if n < 2:
        return 0.0
    slope = float(np.polyfit(np.arange(n, dtype=np.float64), s[:n], 1)[0])  # dB/frame, inward
    if slope <= 0.05:
        return 0.0
    return float(min(drop / slope, MAX_EXTRAPOLATE_S * (1.0 / HOP_S)))


@functools.lru_cache(maxsize=1)
def _walk_module() -> Any | None:
    try:
        from duetflow.audio import walk_kernels as wk

        x = np.arange(8, dtype=np.float64)
        wk.extent_walk(
            x, 0, 40, _NO_MASK, False, 0.0, 320.0, 0.0, 320.0, 1.0, 25.0, 0.5, 0.5, 2,
            x, 0, 40, 6.0, 0.5, 1.0, 0.5, 0.5, 1.0, 0.5, np.empty(9),
        )  # fmt: skip
    except Exception:  # a numba that cannot compile here: the same output without it
        return None
    return wk


def walk_kernels() -> Any | None:
    """:mod:`duetflow.audio.walk_kernels` where the edge kernels are
    (:func:`duetflow.audio.kernels.edge_kernels`), else None."""
    if kernels.edge_kernels() is None:
        return None
    return _walk_module()


_RING_HOPS = _RING_S / HOP_S


@functools.lru_cache(maxsize=512)
def _extent_levels(
    db: float, hp_db: float, spread_db: float, digital: bool, t_on: float, t_off: float
) -> tuple[float, ...]:
    """:func:`speech_extent`'s levels over the floor of these fields for onset / offset
    targets (the same expressions, once per floor and targets): the edge levels, the core
    base, each end's broadband edge level with the two block powers :func:`_sharpen` compares
    with, and whether :func:`_beyond` can follow a tail at each end (its ``drop`` over 0.05)."""
    floor = Floor(db, hp_db, spread_db, digital)
    noise = floor.hp_power

    def end(t: float) -> tuple[float, float, float, float, bool]:
        lo, broad = floor.edge_db(t), _broad_edge(floor, t)
        tail = not _db(_power(lo) - noise) - t <= 0.05
        return lo, broad, _power(broad + _BLOCK_GUARD_DB), _power(broad), tail

    lo_on, on, g_on, w_on, tail_on = end(t_on)
    # the same target at both ends (a number equal to itself: not a NaN): the same levels
    same = t_off == t_on and math.copysign(1.0, t_off) == math.copysign(1.0, t_on)
    lo_off, off, g_off, w_off, tail_off = (lo_on, on, g_on, w_on, tail_on) if same else end(t_off)
    base = max(lo_on, lo_off) + CORE_ABOVE_EDGE_DB
    return lo_on, lo_off, base, on, g_on, w_on, off, g_off, w_off, tail_on, tail_off


@functools.lru_cache(maxsize=16)
def _bridge_frames(sr: int, hop: int) -> int:
    return max(1, int(round(BRIDGE_S * sr / hop)))


def _extent_compiled(
    walk: Any,
    an: Analysis,
    env: Envelope,
    floor: Floor,
    hint: tuple[float, float],
    bounds: tuple[float, float],
    onset_floor_db: float | None,
    offset_floor_db: float | None,
    blocked: BoolArray | None,
) -> Extent | Literal[False] | None:
    """:func:`speech_extent` with its walk in one compiled call
    (:func:`duetflow.audio.walk_kernels.extent_walk`) and the tails' fit numpy's; False where
    the arrays are not the kernel's kind (the Python path then)."""
    db, lv = env.db, an.level
    p = lv.blocks
    if (
        db.dtype != np.float64
        or not db.flags.c_contiguous
        or p.dtype != np.float64
        or not p.flags.c_contiguous
        or (
            blocked is not None
            and (blocked.dtype != np.bool_ or blocked.ndim != 1 or len(blocked) < len(db))
        )
    ):
        return False
    t_on = floor.db if onset_floor_db is None else onset_floor_db
    t_off = floor.db if offset_floor_db is None else offset_floor_db
    lo_on, lo_off, base, e_on, g_on, w_on, e_off, g_off, w_off, tail_on, tail_off = _extent_levels(
        floor.db, floor.hp_db, floor.spread_db, floor.digital, t_on, t_off
    )
    tol = HINT_TOLERANCE_S * env.sr
    out = np.empty(9)
    found = walk.extent_walk(
        db, env.start, env.hop, _NO_MASK if blocked is None else blocked, blocked is not None,
        float(bounds[0]), float(bounds[1]), hint[0] - tol, hint[1] + tol,
        base, CORE_BELOW_PEAK_DB, lo_on, lo_off, _bridge_frames(env.sr, env.hop),
        p, lv.start, lv.hop, _RING_HOPS, e_on, g_on, w_on, e_off, g_off, w_off, out,
    )  # fmt: skip
    if found != 1:
        return None
    peak, hi, e0, e1, *frames = out.tolist()
    k0, r0, first, last, r1 = map(int, frames)
    start: float
    end: float
    # _beyond of a tail, where it can follow one (else its 0.0: an edge less 0.0 is the edge)
    if r0 < 0:
        start = bounds[0]
    elif not tail_on:
        start = e0
    else:
        start = e0
        # the frames _beyond reads of db[r0 : first + 1]: its first _FIT_FRAMES (its size
        # decides only whether there are two)
        a = k0 + r0
        inside = db[a : min(k0 + first + 1, a + _FIT_FRAMES)]
        if inside.size >= 2:
            if blocked is not None:
                inside = np.where(blocked[a : a + inside.size], _SILENT_DB, inside)
            start -= env.hop * _beyond(inside, lo_on, floor, t_on)
    if r1 < 0:
        end = bounds[1]
    elif not tail_off:
        end = e1
    else:
        end = e1
        # db[last:r1][::-1]: its first _FIT_FRAMES are the last of db[last:r1], reversed
        b = k0 + r1
        inside = db[max(k0 + last, b - _FIT_FRAMES) : b]
        if inside.size >= 2:
            if blocked is not None:
                inside = np.where(blocked[b - inside.size : b], _SILENT_DB, inside)
            end += env.hop * _beyond(inside[::-1], lo_off, floor, t_off)
    start, end = max(start, bounds[0]), min(end, bounds[1])
    if end <= start:
        return None
    return Extent(start, end, peak, hi)


@dataclass(frozen=True)
class Extent:
    """Acoustic extent of one turn (samples, fractional) and the levels it was judged by."""

    start: float
    end: float
    peak_db: float
    core_db: float


def speech_extent(
    an: Analysis,
    floor: Floor,
    hint: tuple[float, float],
    *,
    bounds: tuple[float, float] | None = None,
    onset_floor_db: float | None = None,
    offset_floor_db: float | None = None,
    blocked: BoolArray | None = None,
) -> Extent | None:
    """The acoustic extent of the speech located by ``hint`` (samples); None if none is heard.

    ``floor``: the background the speech is heard over. ``bounds`` (samples; default the hint
    widened by :data:`SEARCH_S`): where the edges may lie; an edge that reaches a bound stops
    there (a cut). ``onset_floor_db`` / ``offset_floor_db``: the level speech must fall to at
    each end (default the floor's; see :meth:`Floor.edge_db`). ``blocked``: frames holding
    someone else's speech (crosstalk on a separable track), which break speech like silence.
    """
    # a digitally silent background has no rumble to reject: edges are read on the level
    # envelope there (the high-pass filter would ring into the silence after a steep offset)
    env = an.level if floor.digital else an.edge
    sr = env.sr
    if bounds is None:
        pad = SEARCH_S * sr
        bounds = (hint[0] - pad, hint[1] + pad)
    walk = walk_kernels()
    if walk is not None:
        found = _extent_compiled(walk, an, env, floor, hint, bounds, onset_floor_db,
                                 offset_floor_db, blocked)  # fmt: skip
        if found is not False:
            return found
    k0, k1 = env.span(bounds[0], bounds[1])
    if k1 - k0 < 2:
        return None
    db = env.db[k0:k1]
    if blocked is not None:
        db = np.where(blocked[k0:k1], _SILENT_DB, db)
    tol = HINT_TOLERANCE_S * sr
    h0, h1 = env.span(hint[0] - tol, hint[1] + tol)
    h0, h1 = max(h0, k0) - k0, min(h1, k1) - k0
    if h1 <= h0:
        return None
    inner = db[h0:h1]
    t_on = floor.db if onset_floor_db is None else onset_floor_db
    t_off = floor.db if offset_floor_db is None else offset_floor_db
    lo_on, lo_off = floor.edge_db(t_on), floor.edge_db(t_off)
    compiled = kernels.edge_kernels()
    if compiled is not None and inner.dtype == np.float64:  # the same selection, in one pass
        res = np.empty(4)
        base = max(lo_on, lo_off) + CORE_ABOVE_EDGE_DB
        found = compiled.core_frames(inner, base, CORE_BELOW_PEAK_DB, _SILENT_DB, res)
        if found != 1:
            return None
        peak, hi = float(res[0]), float(res[1])
        first, last = h0 + int(res[2]), h0 + int(res[3])
    else:
        audible = inner[inner > _SILENT_DB]
        if audible.size == 0:
            return None
        peak = quantiles(audible, (98,))[0]
        hi = max(max(lo_on, lo_off) + CORE_ABOVE_EDGE_DB, peak - CORE_BELOW_PEAK_DB)
        core = np.flatnonzero(inner >= hi)
        if core.size == 0:
            return None
        first, last = h0 + int(core[0]), h0 + int(core[-1])
    m = max(1, int(round(BRIDGE_S * sr / env.hop)))
    q = _quiet_walk(db, first, first + 1, -1, lo_on, m)
    if q is not None:
        r0 = first - q + 1  # first frame of the speech, after the quiet run
        start = _crossing(env, db, k0, k0 + r0 - 1, k0 + r0, lo_on)
        if r0 + WINDOW_HOPS < db.size and db[r0 + WINDOW_HOPS] >= lo_on + _STEEP_DB:
            start = _sharpen(an.level, start, _broad_edge(floor, t_on), rising=True)
        start -= env.hop * _beyond(db[r0 : first + 1], lo_on, floor, t_on)
    else:
        start = bounds[0]
    q = _quiet_walk(db, last, db.size - last, 1, lo_off, m)
    if q is not None:
        r1 = last + q  # first quiet frame after the speech
        end = _crossing(env, db, k0, k0 + r1, k0 + r1 - 1, lo_off)
        if r1 - 1 - WINDOW_HOPS >= 0 and db[r1 - 1 - WINDOW_HOPS] >= lo_off + _STEEP_DB:
            end = _sharpen(an.level, end, _broad_edge(floor, t_off), rising=False)
        end += env.hop * _beyond(db[last:r1][::-1], lo_off, floor, t_off)
    else:
        end = bounds[1]
    start, end = max(start, bounds[0]), min(end, bounds[1])
    if end <= start:
        return None
    return Extent(start, end, peak, hi)


@dataclass(frozen=True)
class GapMeasure:
    """One pause between two speakers as measured on the audio (sample positions).

    ``floor``: the pause's own floor; ``step_db``: the change of its level from the first to
    the second half of the pause (a join that jumps); ``dip_db``: how far the level of its
    quietest 20 ms sinks below the floor (a join that dips); ``zero_run``: the
    longest run of exact digital zeros between the two edges (samples).
    """

    offset: float
    onset: float
    floor: Floor
    step_db: float
    dip_db: float
    zero_run: int

    @property
    def gap(self) -> float:
        """The acoustic gap in samples."""
        return self.onset - self.offset


def longest_zero_run(x: Audio) -> int:
    """Length of the longest run of exact zeros in ``x``."""
    if x.size == 0:
        return 0
    compiled = kernels.edge_kernels()
    if compiled is not None and x.ndim == 1 and x.flags.c_contiguous and x.dtype in _FLOATS:
        return int(compiled.longest_zero_run(x))
    d = np.diff(np.concatenate(([0], (x == 0).astype(np.int8), [0])))
    starts, stops = np.flatnonzero(d == 1), np.flatnonzero(d == -1)
    return int((stops - starts).max()) if starts.size else 0


def _quietest(an: Analysis, k0: int, k1: int, width: int) -> Floor | None:
    """The floor of the quietest ``width`` frames in a row within frames ``[k0, k1)``."""
    if k1 - k0 > width:
        pw = np.power(10.0, an.level.db[k0:k1] / 10.0)
        walk = walk_kernels()
        lv, hv = an.level.db, an.edge.db
        if (
            walk is not None
            and lv.dtype == np.float64
            and hv.dtype == np.float64
            and lv.flags.c_contiguous
            and hv.flags.c_contiguous
            and len(lv) == len(hv)
        ):  # the run and its floor in one call (walk_kernels.quiet_floor), the same numbers
            res = np.empty(5)
            status, values = walk.quiet_floor(
                pw, width, k0, lv, hv, _FLICKER_FRAMES, DIGITAL_DB, DIGITAL_SHARE,
                MIN_FLOOR_FRAMES, res,
            )  # fmt: skip
            measured = _floor_of_stats(status, values, res)
            if measured is not False:
                return measured
            k = int(res[4])
            return _floor_in(an, k, k + width)
        compiled = kernels.edge_kernels()
        if compiled is not None:  # the same sums and comparisons (edge_kernels.quietest)
            k = k0 + int(compiled.quietest(pw, width))
        else:
            c = np.concatenate(([0.0], np.cumsum(pw)))
            k = k0 + int(np.argmin(c[width:] - c[:-width]))
        return _floor_in(an, k, k + width)
    return _floor_in(an, k0, k1)


def measure_gap(
    samples: Audio,
    sample_rate: int,
    prev: tuple[float, float],
    nxt: tuple[float, float],
    *,
    analysis: Analysis | None = None,
    floor: Floor | None = None,
    floor_db: float | None = None,
    margin_s: float = 0.01,
) -> GapMeasure | None:
    """Measure the pause between the speech located at ``prev`` and at ``nxt`` (samples).

    The floor is the pause's own: first its quietest 40 ms, then (once the edges are found)
    its frames between the edges, ``margin_s`` clear of them, unless an event fills so much of
    the pause that its typical level is the event's. ``floor`` skips that and measures against a
    known floor; ``floor_db`` gives only its level (the room tone a renderer laid, from its
    provenance; -inf: none, digital silence), its flicker is measured. Each side's
    edge is found with :func:`speech_extent`, never past the middle of the pause. None when the
    spans overlap, the pause holds no floor, or a side has no audible speech. ``analysis``: the
    envelopes of ``samples`` when already computed.
    """
    a0, a1 = prev
    b0, b1 = nxt
    if b0 <= a1:
        return None
    if analysis is None:
        analysis = analyse(samples, sample_rate, int(max(0.0, a0)), int(math.ceil(b1)) + 1)
    env = analysis.edge
    p0, p1 = env.span(a1, b0)
    if floor is None and floor_db is not None and not floor_db > DIGITAL_DB:
        floor = DIGITAL_FLOOR
    known = floor is not None or floor_db is not None
    if floor is None:
        if p1 - p0 < MIN_FLOOR_FRAMES:
            return None
        width = max(MIN_FLOOR_FRAMES, int(round(_QUIET_S * sample_rate / env.hop)))
        floor = _quietest(analysis, p0, p1, width)
        if floor is None:
            return None
        if floor_db is not None and not floor.digital:  # the level is known: keep the flicker
            floor = Floor(floor_db, floor.hp_db + floor_db - floor.db, floor.spread_db, False)
    quiet = floor
    mid = 0.5 * (a1 + b0)
    left = right = None
    for _ in range(3):
        left = speech_extent(analysis, floor, prev, bounds=(a0, mid))
        right = speech_extent(analysis, floor, nxt, bounds=(mid, b1))
        if left is None or right is None:
            return None
        if known or floor.digital:
            break
        margin = min(margin_s * sample_rate, (right.start - left.end) / 4)
        q0, q1 = env.span(left.end + margin, right.start - margin)
        seen = _floor_in(analysis, q0, q1)
        if seen is None or seen.digital:
            break
        tolerated = EVENT_IN_PAUSE_DB + 0.5 * max(quiet.spread_db, seen.spread_db)
        base = seen if seen.db <= quiet.db + tolerated else quiet
        better = Floor(base.db, base.hp_db, max(quiet.spread_db, seen.spread_db), False)
        if abs(better.db - floor.db) < 0.5 and abs(better.spread_db - floor.spread_db) < 0.5:
            floor = better
            break
        floor = better
    assert left is not None and right is not None
    offset, onset = left.end, right.start
    walk = walk_kernels()
    if walk is not None:
        tail = _pause_tail(walk, samples, analysis, offset, onset, floor)
        if tail is not None:
            return GapMeasure(offset, onset, floor, *tail)
    step = dip = 0.0
    q0, q1 = analysis.level.span(offset + 2 * env.hop, onset - 2 * env.hop)
    pause = analysis.level.db[q0:q1]
    if pause.size >= 2 * MIN_FLOOR_FRAMES and not floor.digital:
        half = pause.size // 2
        step = _median(pause[half:]) - _median(pause[:half])
        compiled = kernels.edge_kernels()
        # the quietest 20 ms of the pause (hop blocks averaged: a single 10 ms window of noise
        # flickers by several dB on its own)
        lv = analysis.level
        j0 = int(math.ceil((offset - lv.start) / lv.hop)) + 2
        j1 = int((onset - lv.start) / lv.hop) - 2
        width = max(1, int(round(_DIP_S / HOP_S)))
        if j1 - j0 >= width:
            if compiled is not None and lv.blocks.dtype == np.float64:  # the same sums
                low = float(compiled.window_min(lv.blocks[j0:j1], width)) / width
            else:
                c = np.concatenate(([0.0], np.cumsum(lv.blocks[j0:j1])))
                low = float(np.min(c[width:] - c[:-width]) / width)
            dip = max(0.0, floor.db - _db(low))
    x = to_mono(samples)
    zeros = longest_zero_run(x[int(math.ceil(offset)) : int(math.floor(onset))])
    return GapMeasure(offset, onset, floor, step, dip, zeros)


def _pause_tail(
    walk: Any, samples: Audio, an: Analysis, offset: float, onset: float, floor: Floor
) -> tuple[float, float, int] | None:
    """:func:`measure_gap`'s step, dip and zero run of the pause between ``offset`` and
    ``onset`` in one compiled call (:func:`duetflow.audio.walk_kernels.pause_tail`: the same
    spans, medians, windowed minimum and run); None where the arrays are not the kernel's kind
    or a NaN leaves a median to numpy (:func:`measure_gap` measures them itself then)."""
    lv = an.level
    x = to_mono(samples)
    z0, z1 = int(math.ceil(offset)), int(math.floor(onset))
    if (
        z0 < 0
        or x.ndim != 1
        or x.dtype not in _FLOATS
        or not x.flags.c_contiguous
        or lv.db.dtype != np.float64
        or lv.blocks.dtype != np.float64
        or not (lv.db.flags.c_contiguous and lv.blocks.flags.c_contiguous)
    ):
        return None
    out = np.zeros(3)
    width = max(1, int(round(_DIP_S / HOP_S)))
    got = walk.pause_tail(
        lv.db, lv.blocks, lv.start, lv.hop, an.edge.hop, offset, onset, not floor.digital,
        MIN_FLOOR_FRAMES, width, x, z0, z1, out,
    )  # fmt: skip
    if got < 0:
        return None
    step, low, zeros = out.tolist()
    dip = max(0.0, floor.db - _db(low)) if got & 2 else 0.0
    return (step if got & 1 else 0.0), dip, int(zeros)


def change_pauses(
    turns: Sequence[tuple[str, float, float]],
) -> list[tuple[tuple[str, float, float], tuple[str, float, float]]]:
    """Pairs of consecutive floor-holding turns ``(speaker, start_s, end_s)`` that change
    speaker with a pause between them (a change that overlaps has no pause to measure)."""
    ordered = sorted(turns, key=lambda t: (t[1], t[2]))
    return [(a, b) for a, b in itertools.pairwise(ordered) if a[0] != b[0] and b[1] > a[2]]


def change_gaps(
    samples: Audio,
    sample_rate: int,
    turns: Sequence[tuple[str, float, float]],
    *,
    digital: bool = False,
    floor_db: float | None = None,
) -> list[GapMeasure | None]:
    """Every speaker-change pause of a rendered dialogue measured on its audio (the report, the
    schema checks and the benchmark read gaps this way). ``turns``: the floor-holding turns
    (rows of kind ``turn``) in seconds; ``digital``: the file was rendered without room tone, so
    its pauses are measured against the absolute floor; ``floor_db``: the floor level the file's
    pauses hold, when recorded (see :func:`duetflow.audio.gap_tolerance.floor_in_file_db`)."""
    x = to_mono(samples)
    an = analyse(x, sample_rate)
    sr = sample_rate
    return [
        measure_gap(
            x,
            sr,
            (a[1] * sr, a[2] * sr),
            (b[1] * sr, b[2] * sr),
            analysis=an,
            floor=DIGITAL_FLOOR if digital else None,
            floor_db=floor_db,
        )
        for a, b in change_pauses(turns)
    ]
