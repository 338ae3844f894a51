"""Effective bandwidth of a recording and a zero-phase low-pass to a common one.

A judge must not tell a corpus recording from a TTS voice by how far up the spectrum it
reaches, so every category of one language is band-limited to one effective bandwidth
(docs/equalisation.md, ``render.bandwidth_hz``):

* :func:`energy_bandwidth_hz`: the frequency below which ``share`` (99 %) of a signal's spectral
  energy lies (Welch periodogram, Hann windows of 2048 samples at 50 % overlap): what a
  recording's effective bandwidth is measured as, in provenance and in the equalisation tests.
  The periodogram is :func:`welch_density`: ``scipy.signal.welch``'s own values, bit for bit
  (the same window from ``ShortTimeFFT``, the same per-segment mean removal, ``rfft``, squares,
  doubling and mean over segments in the same order and memory layout), computed over blocks of
  segments instead of scipy's Python loop over each segment (~3x faster on a 45 s window);
* :func:`lowpass`: a linear-phase FIR (Kaiser window, 60 dB stop band, 250 Hz transition band
  centred on the cutoff, -6 dB there) applied centred, so it is zero-phase: no sample moves,
  speech edges and gaps stay where they were. FFT convolution (overlap-add on power-of-two
  blocks, float32 transforms), deterministic for the same samples.

Plain numpy/scipy over float32 samples; no config.
"""

from __future__ import annotations

import functools

import numpy as np
import numpy.typing as npt
from scipy import fft as sp_fft
from scipy import signal

from duetflow.audio import kernels

__all__ = ["STOP_DB", "TRANSITION_HZ", "energy_bandwidth_hz", "lowpass", "welch_density"]

Audio = npt.NDArray[np.float32]

#: stop-band attenuation (dB) and transition width (Hz) of :func:`lowpass`
STOP_DB = 60.0
TRANSITION_HZ = 250.0


@functools.lru_cache(maxsize=32)
def _taps(sr: int, cutoff_hz: float) -> npt.NDArray[np.float64]:
    nyq = sr / 2.0
    numtaps, beta = signal.kaiserord(STOP_DB, TRANSITION_HZ / nyq)
    numtaps |= 1  # odd: a whole-sample delay, removed by centring
    return np.asarray(signal.firwin(numtaps, cutoff_hz, window=("kaiser", beta), fs=sr))


def lowpass(x: Audio, sr: int, cutoff_hz: float | None) -> Audio:
    """``x`` low-passed at ``cutoff_hz`` (zero-phase); unchanged when the cutoff is None or at
    or above the Nyquist frequency less the transition band (nothing there to remove).

    The convolution is ``scipy.signal.oaconvolve(x, taps, mode="same")``'s, with float32
    transforms on power-of-two blocks (:func:`_overlap_add_same`: within 1e-6 of the signal's
    peak of scipy's float64 result, ``tests/audio/test_bandlimit.py``)."""
    if cutoff_hz is None or cutoff_hz >= sr / 2.0 - TRANSITION_HZ or x.size == 0:
        return x
    h = _taps(sr, float(cutoff_hz))
    fast = None
    if x.ndim == 1:
        block = _oa_block(x.size, h.size)
        fast = _overlap_add_same(x, h, _taps_spectrum(sr, float(cutoff_hz), block))
    if fast is not None:
        return fast
    y = signal.oaconvolve(np.asarray(x, dtype=np.float64), h, mode="same")
    return np.asarray(y, dtype=np.float32)


_OA_ROWS = 16  # blocks transformed at once (a multiple of any SIMD width pocketfft batches by;
# measured: 16 rows 1.15-1.25x the speed of 8, the same bits)
_OA_BLOCK_PER_TAP = 16  # a block is the power of two at least this many times the taps' span


def _oa_block(s1: int, s2: int) -> int:
    """Overlap-add block length for ``s1`` samples and ``s2`` taps: a power of two (pocketfft's
    fastest lengths) of at least :data:`_OA_BLOCK_PER_TAP` taps' spans, no longer than one
    block holding the whole convolution."""
    whole = 1 << (s1 + s2 - 2).bit_length()  # >= s1 + s2 - 1
    return min(whole, 1 << (_OA_BLOCK_PER_TAP * (s2 - 1) - 1).bit_length())


def _overlap_add_same(
    x: Audio, h: npt.NDArray[np.float64], taps: npt.NDArray[np.complex64] | None = None
) -> Audio | None:
    """``scipy.signal.oaconvolve(x, h, mode="same")`` as float32, its transforms in float32 on
    power-of-two blocks (:func:`_oa_block`: 4,096 samples for the 235 taps at 16 kHz, where
    scipy's float64 ones are 2,200, 2^3·5^2·11), ~1.9x faster; None for a 2-D signal.

    Not scipy's bits: the float32 transforms' rounding leaves the output within 1e-6 of the
    signal's peak of scipy's float64 convolution (``tests/audio/test_bandlimit.py``), under
    the filter's 60 dB stop band by 60 dB; in the rendered FLACs one int16 sample in
    ~3,500 moves by one step and turn edges by at most 0.002 ms (docs/performance.md). Each
    step of ``x`` zero-padded to one block, ``rfft`` over blocks lying row by row in groups of
    :data:`_OA_ROWS`, times the taps' ``rfft`` (computed in float64, rounded once), ``irfft``;
    each block's tail added to the next block's head; the centred ``same`` part. A group of
    blocks that is all zeros is not transformed: its output is +0.0, every sample (digital
    silence: a clip-per-turn track between its speaker's clips). ``taps``: the taps' transform
    on the block (:func:`_taps_spectrum`, cached by :func:`lowpass`); the blocks' output is
    written straight into the centred result (no copy of the whole convolution), the
    spectra multiplied in place: the same values as before, bit for bit."""
    if x.ndim != 1:
        return None
    s1, s2 = x.size, h.size
    block = _oa_block(s1, s2)
    overlap = s2 - 1
    step = block - overlap
    n = max(1, -(-s1 // step))  # blocks holding x; the last one's tail ends the output
    if taps is None or taps.shape != (1, block // 2 + 1):
        taps = _spectrum(h, block)
    c = (s2 - 1) // 2  # the full convolution's sample c + j is the result's sample j
    res = np.empty(s1, dtype=np.float32)

    def put(lo: int, part: Audio) -> None:  # the full convolution's samples [lo, lo + size)
        a, b = max(lo, c), min(lo + part.size, c + s1)
        if b > a:
            res[a - c : b - c] = part[a - lo : b - lo]

    rows = np.zeros((_OA_ROWS, block), dtype=np.float32)
    tail: Audio | None = None
    whole = s1 // step  # blocks filled by x; the next holds its rest, any later ones nothing
    for r0 in range(0, n, _OA_ROWS):
        r1 = min(n, r0 + _OA_ROWS)
        buf = rows[: r1 - r0]
        full = max(0, min(r1, whole) - r0)
        if full:
            buf[:full, :step] = x[r0 * step : (r0 + full) * step].reshape(full, step)
        for r in range(r0 + full, r1):  # the part-filled block, then empty ones
            rest = x[r * step : (r + 1) * step]
            buf[r - r0, : rest.size] = rest
            buf[r - r0, rest.size : step] = 0.0
        if buf[:, :1].any() or buf.any():  # a row's first sample decides most groups at once
            spec = sp_fft.rfft(buf, axis=-1)
            spec *= taps  # in place: the same products
            y = sp_fft.irfft(spec, block, axis=-1)
        else:  # digital silence (a clip-per-turn track between its clips)
            y = np.zeros_like(buf)
        if overlap:
            y[1:, :overlap] += y[:-1, step:]
            if tail is not None:
                y[0, :overlap] += tail
            tail = y[-1, step:].copy()
        put(r0 * step, y[:, :step].reshape(-1))
    if overlap and tail is not None:
        put(n * step, tail)
    return res


def _spectrum(h: npt.NDArray[np.float64], block: int) -> npt.NDArray[np.complex64]:
    """The taps' transform on ``block`` samples (computed in float64, rounded once)."""
    spec = sp_fft.rfft(h.reshape(1, h.size), block, axis=-1)
    return np.asarray(spec, dtype=np.complex64)


@functools.lru_cache(maxsize=32)
def _taps_spectrum(sr: int, cutoff_hz: float, block: int) -> npt.NDArray[np.complex64]:
    """:func:`_spectrum` of :func:`_taps`, once per rate, cutoff and block (read-only)."""
    spec = _spectrum(_taps(sr, cutoff_hz), block)
    spec.flags.writeable = False
    return spec


def energy_bandwidth_hz(x: Audio, sr: int, share: float = 0.99) -> float | None:
    """Frequency (Hz) below which ``share`` of ``x``'s spectral energy lies; None for silence
    or a signal shorter than 256 samples."""
    if x.size < 256:
        return None
    f, p = welch_density(np.asarray(x, dtype=np.float64), sr, min(2048, x.size))
    c = np.cumsum(p)
    if c[-1] <= 0:
        return None
    return float(f[min(len(f) - 1, int(np.searchsorted(c, share * c[-1])))])


_BLOCK = 64  # segments transformed at once: ~1 MB of samples, cache-sized


@functools.lru_cache(maxsize=8)
def _welch_plan(sr: int, nperseg: int) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """(frequencies, window scaled to a density) exactly as ``scipy.signal.csd`` builds them."""
    win = signal.get_window("hann_periodic", nperseg)
    hop = nperseg - nperseg // 2
    sft = signal.ShortTimeFFT(
        win, hop, sr, fft_mode="onesided", mfft=nperseg, scale_to="psd", phase_shift=None
    )
    return np.asarray(sft.f, dtype=np.float64), np.asarray(sft.win, dtype=np.float64)


def welch_density(
    x: npt.NDArray[np.float64], sr: int, nperseg: int
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """``scipy.signal.welch(x, fs=sr, nperseg=nperseg)`` for a 1-D float64 ``x`` with
    ``len(x) >= nperseg`` (Hann window, 50 % overlap, constant detrend, density, mean), the same
    bits (``tests/audio/test_bandlimit.py`` compares them as integers), without scipy's
    per-segment Python loop.

    Every step is scipy's on the same operands: each segment less its own mean
    (``np.mean`` over the segment's contiguous samples), times the scaled window, ``rfft``,
    ``re**2 + im**2``; the power lies frequency-major as in scipy's spectrogram, so the mean over
    segments reduces the same contiguous rows in the same pairwise order; the inner bins are
    doubled before it, as scipy does."""
    f, win = _welch_plan(int(sr), int(nperseg))
    hop = nperseg - nperseg // 2
    count = (x.size - nperseg // 2) // hop
    power = np.empty((f.size, count), dtype=np.float64)
    inner = slice(1, -1 if nperseg % 2 == 0 else None)
    compiled = kernels.welch_kernels()
    if compiled is not None and count > 1:
        live, segments, into_columns, row_means = compiled
        xs = np.ascontiguousarray(x, dtype=np.float64)
        sounding = np.empty(count, dtype=np.bool_)
        if live(xs, hop, nperseg, sounding) < count:
            # digital silence (a clip-per-turn track between its clips): those segments'
            # power is +0.0 in every bin (see duetflow.audio.welch_kernels), held from here
            power = np.zeros((f.size, count), dtype=np.float64)
        rows = np.flatnonzero(sounding)
        block = np.empty((max(1, min(_BLOCK, rows.size)), nperseg), dtype=np.float64)
        for a in range(0, rows.size, _BLOCK):
            at = rows[a : a + _BLOCK]
            seg = block[: at.size]
            segments(xs, win, hop, at, seg)
            into_columns(sp_fft.rfft(seg, n=nperseg, axis=-1), power, at)
        mean = np.empty(f.size, dtype=np.float64)
        row_means(power, 1, f.size - 1 if nperseg % 2 == 0 else f.size, mean)
        return f, mean
    segs = np.lib.stride_tricks.sliding_window_view(x, nperseg)[::hop]
    for a in range(0, count, _BLOCK):
        seg = segs[a : min(count, a + _BLOCK)]
        seg = seg - np.mean(seg, axis=-1, keepdims=True)
        seg *= win
        spec = sp_fft.rfft(seg, n=nperseg, axis=-1)
        re, im = spec.real, spec.imag
        pw = re * re
        pw += im * im
        power[:, a : a + len(pw)] = pw.T
    power[inner] *= 2
    if count > 1:
        return f, power.mean(axis=-1)
    return f, power.reshape(f.size)
