"""Room tone's colour: its spectral tilt measured, and brought to a target tilt.

The floor rule brings every category's room tone to one *level*; a recording's room still
has its own *colour* (DailyTalk's pauses are darker than IEMOCAP's, the studio's and the PH
references', docs/fairness.md). :func:`to_tilt` shapes a bed so its tilt (the slope of its
spectrum in dB per octave over :data:`TILT_BAND_HZ`, measured by :func:`tilt_db_oct`) becomes
a target: a zero-phase gain that is a straight line in dB over log-frequency inside the band
and flat outside it, so the tilt moves by exactly the difference and nothing else of the bed
changes (its texture, its band edge; its level is set where it is laid). Deterministic: no
draws, FFTs only.
"""

from __future__ import annotations

import math

import numpy as np

from duetflow.audio.io import Audio

#: Band over which the tilt is measured and shaped, Hz (upper end capped at 0.45 × the rate);
#: the cue audit's pause tilt band (duetflow.fairness.cues.TILT_BAND_HZ), so that what is
#: shaped here is what the audit reads.
TILT_BAND_HZ = (100.0, 8000.0)
#: Samples per spectrum frame (hop: half of it), as the cue audit's.
FRAME = 1024
#: Tilts farther than this from the target are not chased (dB/oct): a bed that far off is not
#: room tone (hum, a tonal machine) and shaping it would only colour it otherwise.
MAX_CORRECTION_DB_OCT = 6.0


def _band(sr: int) -> tuple[float, float]:
    return TILT_BAND_HZ[0], min(TILT_BAND_HZ[1], 0.45 * sr)


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


def tilt_db_oct(x: Audio, sr: int) -> float:
    """Slope of ``x``'s spectrum, dB per octave over :data:`TILT_BAND_HZ` (NaN: no energy).

    A least-squares line of the level (dB) over log2 frequency, each bin weighted by
    1/sqrt(f) (linear bins crowd the high octaves), as the cue audit's ``pause_tilt_db_oct``."""
    psd = power_spectrum(x, sr)
    if psd.size == 0:
        return math.nan
    f = np.arange(psd.size) * sr / FRAME
    lo, hi = _band(sr)
    sel = (f >= lo) & (f <= hi) & (psd > 0)
    if sel.sum() < 3:
        return math.nan
    slope = np.polyfit(np.log2(f[sel]), 10.0 * np.log10(psd[sel]), 1, w=1.0 / np.sqrt(f[sel]))
    return float(slope[0])


def tilt_gain(n: int, sr: int, delta_db_oct: float) -> np.ndarray:
    """Amplitude gain per rfft bin of an ``n``-sample signal: ``delta_db_oct`` dB per octave
    inside :data:`TILT_BAND_HZ` (0 dB at its geometric centre), flat outside it."""
    lo, hi = _band(sr)
    f = np.clip(np.fft.rfftfreq(n, 1.0 / sr), lo, hi)
    centre = math.log2(math.sqrt(lo * hi))
    return np.asarray(10.0 ** (delta_db_oct * (np.log2(f) - centre) / 20.0))


def to_tilt(x: Audio, sr: int, target_db_oct: float) -> tuple[Audio, float]:
    """``x`` shaped so its tilt is ``target_db_oct``, and the correction applied (dB/oct).

    The gain (:func:`tilt_gain`) is applied to the whole bed at once (zero phase); its power
    is kept (the level is the floor rule's). A bed too short or silent to measure, or one
    farther than :data:`MAX_CORRECTION_DB_OCT` from the target, comes back unchanged (0.0)."""
    measured = tilt_db_oct(x, sr)
    if not math.isfinite(measured) or abs(target_db_oct - measured) > MAX_CORRECTION_DB_OCT:
        return x, 0.0
    delta = target_db_oct - measured
    x64 = np.asarray(x, dtype=np.float64)
    y = np.fft.irfft(np.fft.rfft(x64) * tilt_gain(x64.size, sr, delta), n=x64.size)
    p0, p1 = float(np.mean(x64 * x64)), float(np.mean(y * y))
    if p1 > 0:
        y *= math.sqrt(p0 / p1)
    return y.astype(np.float32), delta
