"""Room tone's colour: its spectral tilt measured, and brought to a target tilt.

The floor rule brings every category's room tone to one *level*; a recording's room still
has its own *colour* (DailyTalk's pauses are darker than IEMOCAP's, the studio's and the PH
references', docs/fairness.md). :func:`to_tilt` shapes a bed so its tilt (the slope of its
spectrum in dB per octave over :data:`TILT_BAND_HZ`, measured by :func:`tilt_db_oct`) becomes
a target: a zero-phase gain that is a straight line in dB over log-frequency inside the band
and flat outside it, so the tilt moves by exactly the difference and nothing else of the bed
changes (its texture, its band edge; its level is set where it is laid). The tilt aimed at is
the one the file's pauses will show: the bed at the level it is laid, plus the 16-bit rounding
that fills a band-limited bed's stop band (:func:`laid_tilt`). Deterministic: no draws, FFTs
and a fixed bisection only.
"""

from __future__ import annotations

import math

import numpy as np

from duetflow.audio.bandlimit import TRANSITION_HZ
from duetflow.audio.io import Audio

#: Band over which the tilt is measured and shaped, Hz (upper end capped at 0.45 × the rate);
#: the cue audit's pause tilt band (duetflow.fairness.cues.TILT_BAND_HZ), so that what is
#: shaped here is what the audit reads.
TILT_BAND_HZ = (100.0, 8000.0)
#: Samples per spectrum frame (hop: half of it), as the cue audit's.
FRAME = 1024
#: Step of the written files' 16-bit samples (full scale 1.0, :func:`duetflow.audio.io.to_pcm16`):
#: their rounding noise is part of the pauses' spectrum (:func:`laid_tilt`).
PCM16_STEP = 2.0**-15
#: Corrections larger than this are not made (dB/oct): a bed that far off the target is not
#: room tone (hum, a tonal machine) and shaping it would only colour it otherwise.
MAX_CORRECTION_DB_OCT = 6.0


def pass_band_hz(limit_hz: float | None) -> float | None:
    """Upper end of a bed's pass band under a low-pass at ``limit_hz`` (None: none): the cutoff
    less the low-pass's transition band (:data:`duetflow.audio.bandlimit.TRANSITION_HZ`)."""
    return None if limit_hz is None else limit_hz - TRANSITION_HZ


def _band(sr: int, hi_hz: float | None = None) -> tuple[float, float]:
    hi = min(TILT_BAND_HZ[1], 0.45 * sr)
    return TILT_BAND_HZ[0], hi if hi_hz is None else max(TILT_BAND_HZ[0] * 4, min(hi, hi_hz))


def power_spectrum(x: Audio, sr: int) -> np.ndarray:
    """Mean Hann-windowed power spectrum of ``x`` in :data:`FRAME`-sample frames, half overlap."""
    x64 = np.asarray(x, dtype=np.float64)
    if x64.size < FRAME:
        return np.zeros(0)
    hop = FRAME // 2
    win = np.hanning(FRAME)
    total = np.zeros(FRAME // 2 + 1)
    starts = range(0, x64.size - FRAME + 1, hop)
    n = 0
    for i0 in range(0, len(starts), 256):  # bounded memory for long beds
        block = np.stack([x64[s : s + FRAME] for s in starts[i0 : i0 + 256]]) * win
        total += (np.abs(np.fft.rfft(block, axis=1)) ** 2).sum(axis=0)
        n += block.shape[0]
    return total / n


def tilt_db_oct(x: Audio, sr: int, hi_hz: float | None = None) -> float:
    """Slope of ``x``'s spectrum, dB per octave over :data:`TILT_BAND_HZ` (NaN: no energy).

    A least-squares line of the level (dB) over log2 frequency, each bin weighted by
    1/sqrt(f) (linear bins crowd the high octaves), as the cue audit's ``pause_tilt_db_oct``;
    ``hi_hz``: the band's upper end lowered to it (a band-limited bed's pass band)."""
    psd = power_spectrum(x, sr)
    return math.nan if psd.size == 0 else _fit(psd, sr, hi_hz)


def tilt_gain(n: int, sr: int, delta_db_oct: float, hi_hz: float | None = None) -> np.ndarray:
    """Amplitude gain per rfft bin of an ``n``-sample signal: ``delta_db_oct`` dB per octave
    inside :data:`TILT_BAND_HZ` (0 dB at its geometric centre), flat outside it."""
    lo, hi = _band(sr, hi_hz)
    f = np.clip(np.fft.rfftfreq(n, 1.0 / sr), lo, hi)
    centre = math.log2(math.sqrt(lo * hi))
    return np.asarray(10.0 ** (delta_db_oct * (np.log2(f) - centre) / 20.0))


def _fit(psd: np.ndarray, sr: int, hi_hz: float | None = None) -> float:
    f = np.arange(psd.size) * sr / FRAME
    lo, hi = _band(sr, hi_hz)
    sel = (f >= lo) & (f <= hi) & (psd > 0)
    if sel.sum() < 3:
        return math.nan
    slope = np.polyfit(np.log2(f[sel]), 10.0 * np.log10(psd[sel]), 1, w=1.0 / np.sqrt(f[sel]))
    return float(slope[0])


def laid_tilt(
    psd: np.ndarray,
    sr: int,
    delta_db_oct: float,
    power: float | None,
    step: float | None,
    hi_hz: float | None = None,
) -> float:
    """Tilt of a bed of spectrum ``psd`` (:func:`power_spectrum`) shaped by ``delta_db_oct``
    and laid at mean ``power`` into a file quantised in steps of ``step`` (full scale 1.0):
    the rounding adds white noise of power step²/12, which fills a band-limited bed's stop
    band, so the tilt read in the file's pauses is not the bare bed's. ``power`` or ``step``
    None: the bare bed's."""
    shaped = psd * tilt_gain(2 * (psd.size - 1), sr, delta_db_oct, hi_hz) ** 2
    if power is not None and step is not None and shaped.sum() > 0:
        # mean power of a signal = sum(psd) / (FRAME * sum(win^2)) for a one-sided sum ~x2
        win2 = float(np.sum(np.hanning(FRAME) ** 2))
        scale = power / (_mean_power(shaped) / win2)
        shaped = shaped * scale + step * step / 12.0 * win2
    return _fit(shaped, sr, hi_hz)


def _mean_power(psd: np.ndarray) -> float:
    """Mean power (times sum(win^2)) of the signal whose framed spectrum is ``psd`` (Parseval
    over the one-sided spectrum)."""
    return float((2.0 * psd.sum() - psd[0] - psd[-1]) / FRAME)


def to_tilt(
    x: Audio,
    sr: int,
    target_db_oct: float,
    *,
    laid_power: float | None = None,
    step: float | None = None,
    hi_hz: float | None = None,
) -> tuple[Audio, float]:
    """``x`` shaped so its tilt is ``target_db_oct``, and the correction applied (dB/oct).

    The tilt aimed at is the one read where the bed is heard: laid at mean power
    ``laid_power`` into a file quantised in steps of ``step`` (16-bit PCM: 2^-15), see
    :func:`laid_tilt`; either None: the bare bed's (then the tilt moves by exactly the
    correction). ``hi_hz``: measure and shape only up to it (a band-limited bed's pass band:
    above it the gain stays flat). The correction is found by bisection (the tilt rises with
    it). The gain (:func:`tilt_gain`) is applied to the whole bed at once (zero phase); its
    power is kept (the level is the floor rule's). A bed too short or silent to measure, or
    one whose target lies farther than :data:`MAX_CORRECTION_DB_OCT` away, comes back
    unchanged (0.0)."""
    psd = power_spectrum(x, sr)
    if psd.size == 0 or not np.any(psd > 0):
        return x, 0.0
    lo_d, hi_d = -MAX_CORRECTION_DB_OCT, MAX_CORRECTION_DB_OCT
    at = [laid_tilt(psd, sr, d, laid_power, step, hi_hz) for d in (lo_d, 0.0, hi_d)]
    if not all(math.isfinite(t) for t in at) or not at[0] <= target_db_oct <= at[2]:
        return x, 0.0
    for _ in range(50):  # deterministic: the same steps every time
        mid = 0.5 * (lo_d + hi_d)
        if laid_tilt(psd, sr, mid, laid_power, step, hi_hz) < target_db_oct:
            lo_d = mid
        else:
            hi_d = mid
    delta = 0.5 * (lo_d + hi_d)
    x64 = np.asarray(x, dtype=np.float64)
    y = np.fft.irfft(np.fft.rfft(x64) * tilt_gain(x64.size, sr, delta, hi_hz), n=x64.size)
    p0, p1 = float(np.mean(x64 * x64)), float(np.mean(y * y))
    if p1 > 0:
        y *= math.sqrt(p0 / p1)
    return y.astype(np.float32), delta
