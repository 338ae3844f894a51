"""Room tone's colour: its spectral envelope measured, and matched to a target.

The floor rule brings every category's room tone to one *level*; a recording's room still
has its own *colour* (DailyTalk's pauses are darker near the top of the band than IEMOCAP's,
the studio's and the PH references', and hold less of their power under 100 Hz:
docs/fairness.md). :func:`to_envelope` shapes a bed so its spectral envelope is the target
(:func:`target_db`): one straight line in dB over log-frequency of a target tilt inside the band
(:data:`TILT_BAND_HZ`, its upper end the language's pass band), flat under it down to
:data:`MATCH_LOW_HZ`. The slope, the roll-off at the top of the band and the energy under
100 Hz (which sets the pause's 85 % roll-off) come out alike for every bed, by a zero-phase
gain (the target over the bed's own smoothed envelope, held beyond the matched range), so the
bed stays the same noise (its texture) at its own power (the level is the floor rule's).
Deterministic: no draws, FFTs only.
"""

from __future__ import annotations

import bisect
import functools
import math

import numpy as np
from scipy import fft as sp_fft

from duetflow.audio.bandlimit import TRANSITION_HZ
from duetflow.audio.io import Audio

#: Band over which the tilt is measured and shaped, Hz (upper end capped at 0.45 × the rate);
#: the cue audit's pause tilt band (duetflow.fairness.cues.TILT_BAND_HZ), so that what is
#: shaped here is what the audit reads.
TILT_BAND_HZ = (100.0, 8000.0)
#: Samples per spectrum frame (hop: half of it), as the cue audit's.
FRAME = 1024
#: Width of the smoothing of a bed's spectrum before its envelope is matched, octaves.
ENVELOPE_SMOOTH_OCT = 1.0 / 3.0
#: Largest boost or cut the envelope match applies at any frequency, dB.
MAX_ENVELOPE_DB = 20.0
#: Lowest frequency the envelope is matched down to, Hz: under the tilt band's lower end the
#: target is flat (the line's level there), so the energy under 100 Hz, which carries a fifth
#: to a third of a pause's power and sets its 85 % roll-off, is every bed's alike (below this
#: the gain is held: DC and slow drift are each recording's).
MATCH_LOW_HZ = 20.0
#: Samples per frame of the spectrum the envelope is read from when the bed holds at least
#: :data:`LONG_FRAME_MIN_FRAMES` of them: fine enough (3.9 Hz at 16 kHz) to read the envelope
#: a third of an octave wide at :data:`MATCH_LOW_HZ`; shorter beds use :data:`FRAME`.
LONG_FRAME = 4096
LONG_FRAME_MIN_FRAMES = 4


def pass_band_hz(limit_hz: float | None) -> float | None:
    """Upper end of a bed's pass band under a low-pass at ``limit_hz`` (None: none): the cutoff
    less the low-pass's transition band (:data:`duetflow.audio.bandlimit.TRANSITION_HZ`)."""
    return None if limit_hz is None else limit_hz - TRANSITION_HZ


def _band(sr: int, hi_hz: float | None = None) -> tuple[float, float]:
    hi = min(TILT_BAND_HZ[1], 0.45 * sr)
    return TILT_BAND_HZ[0], hi if hi_hz is None else max(TILT_BAND_HZ[0] * 4, min(hi, hi_hz))


def power_spectrum(x: Audio, sr: int, frame: int = FRAME) -> np.ndarray:
    """Mean Hann-windowed power spectrum of ``x`` in ``frame``-sample frames, half overlap."""
    return _power_spectrum(np.asarray(x, dtype=np.float64), frame, _Scratch())


class _Scratch:
    """Work arrays :func:`_power_spectrum` writes its blocks' products, spectra and powers
    into, grown on demand and kept by the caller for its next spectrum (a bed's two spectra,
    of ~the same size: fresh arrays of a megabyte each cost their page faults)."""

    def __init__(self) -> None:
        self.arrays: dict[type, np.ndarray] = {}

    def take(self, shape: tuple[int, int], dtype: type = np.float64) -> np.ndarray:
        """A C-contiguous array of ``shape`` and ``dtype`` (its values: whatever was there)."""
        size = shape[0] * shape[1]
        buf = self.arrays.get(dtype)
        if buf is None or buf.size < size:
            buf = self.arrays[dtype] = np.empty(size, dtype=dtype)
        return buf[:size].reshape(shape)


def _power_spectrum(x64: np.ndarray, frame: int, scratch: _Scratch) -> np.ndarray:
    """:func:`power_spectrum` of a float64 ``x64``: per block of frames the windowed product,
    its ``rfft``, ``np.abs`` and the square, each into ``scratch`` (contiguous, as fresh arrays
    would be: the same loops, the same bits)."""
    if x64.size < frame:
        return np.zeros(0)
    hop = frame // 2
    win = _hann(frame)
    bins = frame // 2 + 1
    total = np.zeros(bins)
    # the frames as views (no per-frame copies): each windowed block is the same product
    frames = np.lib.stride_tricks.sliding_window_view(x64, frame)[::hop]
    n = 0
    for i0 in range(0, frames.shape[0], 256):  # bounded memory for long beds
        view = frames[i0 : i0 + 256]
        m = view.shape[0]
        block = np.multiply(view, win, out=scratch.take((m, frame)))
        spec = np.fft.rfft(block, axis=1, out=scratch.take((m, bins), np.complex128))
        power = np.abs(spec, out=scratch.take((m, bins)))  # the block is read: its memory
        np.multiply(power, power, out=power)  # ``** 2``'s product, in place
        total += power.sum(axis=0)
        n += m
    return total / n


@functools.lru_cache(maxsize=4)
def _hann(frame: int) -> np.ndarray:
    """``np.hanning(frame)``, made once per frame length (read-only)."""
    win = np.hanning(frame)
    win.flags.writeable = False
    return win


def tilt_db_oct(x: Audio, sr: int, hi_hz: float | None = None) -> float:
    """Slope of ``x``'s spectrum, dB per octave over :data:`TILT_BAND_HZ` (NaN: no energy).

    A least-squares line of the level (dB) over log2 frequency, each bin weighted by
    1/sqrt(f) (linear bins crowd the high octaves), as the cue audit's ``pause_tilt_db_oct``;
    ``hi_hz``: the band's upper end lowered to it (a band-limited bed's pass band)."""
    psd = power_spectrum(x, sr)
    return math.nan if psd.size == 0 else _fit(psd, sr, hi_hz)


def _fit(psd: np.ndarray, sr: int, hi_hz: float | None = None) -> float:
    f = np.arange(psd.size) * sr / FRAME
    lo, hi = _band(sr, hi_hz)
    sel = (f >= lo) & (f <= hi) & (psd > 0)
    if sel.sum() < 3:
        return math.nan
    slope = np.polyfit(np.log2(f[sel]), 10.0 * np.log10(psd[sel]), 1, w=1.0 / np.sqrt(f[sel]))
    return float(slope[0])


def envelope_db(psd: np.ndarray, sr: int, f: np.ndarray) -> np.ndarray:
    """Level (dB) of the spectrum ``psd`` (:func:`power_spectrum`, any frame) at frequencies
    ``f``, averaged over :data:`ENVELOPE_SMOOTH_OCT` around each (its envelope, not its bins)."""
    fb = np.arange(psd.size) * sr / (2 * (psd.size - 1))
    c = np.concatenate(([0.0], np.cumsum(psd)))
    half = 2.0 ** (ENVELOPE_SMOOTH_OCT / 2)
    i0 = np.clip(np.searchsorted(fb, f / half), 0, psd.size - 1)
    i1 = np.clip(np.searchsorted(fb, f * half, side="right"), i0 + 1, psd.size)
    mean = (c[i1] - c[i0]) / (i1 - i0)
    return np.asarray(10.0 * np.log10(np.maximum(mean, 1e-30)))


def target_db(
    f: np.ndarray, sr: int, target_db_oct: float, hi_hz: float | None = None
) -> np.ndarray:
    """The target envelope (dB, up to a constant) at frequencies ``f``: a line of
    ``target_db_oct`` over log2 f in the band (:data:`TILT_BAND_HZ`, upper end ``hi_hz``),
    flat under its lower end (the line's level there)."""
    lo, hi = _band(sr, hi_hz)
    octs = np.log2(np.maximum(f, lo)) - math.log2(math.sqrt(lo * hi))
    return np.asarray(target_db_oct * octs)


def to_envelope(
    x: Audio, sr: int, target_db_oct: float, *, hi_hz: float | None = None
) -> tuple[Audio, float]:
    """``x`` with its spectral envelope made the target (:func:`target_db`): a straight line of
    ``target_db_oct`` dB per octave in the band (:data:`TILT_BAND_HZ`, upper end ``hi_hz``),
    flat from its lower end down to :data:`MATCH_LOW_HZ`: tilt, roll-off and the energy under
    100 Hz alike for every bed, the texture (the same noise) and the power (the floor rule's)
    its own. The gain is the target over the bed's envelope (read from a spectrum of
    :data:`LONG_FRAME`-sample frames where the bed is long enough, smoothed over
    :data:`ENVELOPE_SMOOTH_OCT`, bounded by :data:`MAX_ENVELOPE_DB`), held beyond the matched
    range's ends, zero phase, applied to the whole bed at once (``rfft``, times the gain,
    ``irfft``, in float32: within 2e-6 of the bed's peak of the same steps in float64, where a
    16-bit step is 3e-5 of full scale). Returned with the bed's own tilt before (dB/oct in the
    band; NaN, bed unchanged, when it is too short or silent to measure).

    The bed is shaped on its first :func:`fast_length` samples, and the shaped bed is that
    long: a bed is joined from pauses, so its length is arbitrary, and at most lengths the
    transforms take Bluestein's route (~10x the time of a fast length's); dropping its last
    samples (2 % at most, 0.2-0.5 % on average) costs a bed nothing it is used for (it is laid
    as random excerpts joined with crossfades, :func:`duetflow.audio.roomtone.fill`)."""
    part = np.asarray(x[: fast_length(x.size)], dtype=np.float32)
    x64 = part.astype(np.float64)  # once, for both spectra and the power
    scratch = _Scratch()  # the two spectra's work arrays
    psd = _power_spectrum(x64, FRAME, scratch)
    if psd.size == 0 or not np.any(psd > 0):
        return x, math.nan
    lo, hi = _band(sr, hi_hz)
    before = _fit(psd, sr, hi_hz)
    if x64.size >= LONG_FRAME_MIN_FRAMES * LONG_FRAME:
        psd = _power_spectrum(x64, LONG_FRAME, scratch)
    low = min(MATCH_LOW_HZ, lo)
    grid = low * 2.0 ** np.arange(0.0, math.log2(hi / low) + 1e-9, 1.0 / 24.0)  # 1/24 octave
    env = envelope_db(psd, sr, grid)
    gain_db = target_db(grid, sr, target_db_oct, hi_hz) - env
    gain_db = np.clip(gain_db - np.median(gain_db), -MAX_ENVELOPE_DB, MAX_ENVELOPE_DB)
    g = _gain(np.fft.rfftfreq(x64.size, 1.0 / sr), low, hi, grid, gain_db)
    spec = sp_fft.rfft(part)
    spec *= g.astype(np.float32)
    y = sp_fft.irfft(spec, n=part.size)
    p0, p1 = float(np.mean(x64 * x64)), float(np.mean(np.square(y, dtype=np.float64)))
    if p1 > 0:
        y *= np.float32(math.sqrt(p0 / p1))
    return y, before


def _gain(
    f: np.ndarray, low: float, hi: float, grid: np.ndarray, gain_db: np.ndarray
) -> np.ndarray:
    """``10 ** (np.interp(np.log2(np.clip(f, low, hi)), np.log2(grid), gain_db) / 20)`` for
    ascending ``f``: the gain (linear) at each bin, the ``gain_db`` read on the 1/24-octave
    ``grid``, held beyond ``low`` and ``hi``. Element by element the same arithmetic; the bins
    clipped to either end (over half of them under a 4 kHz band-limit) share one value, worked
    out once."""
    i0 = int(np.searchsorted(f, low, side="right"))  # f[:i0] <= low: clipped to low
    i1 = max(i0, int(np.searchsorted(f, hi, side="left")))  # f[i1:] >= hi: clipped to hi
    lg = np.log2(grid)
    ends = 10.0 ** (np.interp(np.log2(np.array([low, hi])), lg, gain_db) / 20.0)
    g = np.empty(f.size)
    g[:i0] = ends[0]
    g[i0:i1] = 10.0 ** (np.interp(np.log2(f[i0:i1]), lg, gain_db) / 20.0)
    g[i1:] = ends[1]
    return g


#: Beds at least this long are shaped on their fast length (:func:`fast_length`); shorter
#: ones whole (numpy's transforms of a few thousand samples are cheap at any length).
FAST_MIN_LENGTH = 4096
#: The prime factors of a fast length: pocketfft's own radices (numpy's ``rfft``/``irfft``
#: take Bluestein's route, ~10x slower, on a length with any other, as most beds' are).
FAST_PRIMES = (2, 3, 5, 7, 11)


def fast_length(n: int) -> int:
    """The longest even length ``<= n`` whose prime factors are all :data:`FAST_PRIMES`
    (``n`` itself under :data:`FAST_MIN_LENGTH`): the part of an ``n``-sample bed
    :func:`to_envelope` shapes. At most 2 % shorter than ``n`` (at 4,096-8,192 samples, 1 % from
    32,768 up; 0.2-0.5 % on average: ``tests/audio/test_tone_colour.py``)."""
    if n < FAST_MIN_LENGTH:
        return n
    lengths = _fast_lengths(n.bit_length())
    return lengths[bisect.bisect_right(lengths, n) - 1]


@functools.lru_cache(maxsize=8)
def _fast_lengths(bits: int) -> tuple[int, ...]:
    """The even lengths of :data:`FAST_PRIMES` factors below ``2 ** bits``, ascending."""
    limit = 1 << bits
    found = [1]
    for p in FAST_PRIMES:
        more = []
        for v in found:
            v *= p
            while v < limit:
                more.append(v)
                v *= p
        found += more
    return tuple(sorted(v for v in found if v % 2 == 0))
