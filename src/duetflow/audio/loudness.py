"""ITU-R BS.1770 loudness (pyloudnorm), gain to a target, and a true-peak ceiling.

Integrated loudness needs at least one 400 ms gating block; for shorter or very sparse speech
(every block below the -70 LUFS absolute gate) we fall back to the *ungated* K-weighted mean
square over the whole signal — the same filter, no gating — which is what BS.1770 computes for
a single block. :func:`measure` says which method it used.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pyloudnorm

from duetflow.audio.io import Audio, resample

SILENCE_LUFS = -120.0


@lru_cache(maxsize=16)
def _meter(sample_rate: int) -> pyloudnorm.Meter:
    return pyloudnorm.Meter(sample_rate)


@dataclass(frozen=True)
class Loudness:
    lufs: float
    method: str  # "integrated" | "ungated" | "silent"


def _ungated(samples: Audio, sample_rate: int) -> float:
    meter = _meter(sample_rate)
    x = samples.astype(np.float64).reshape(len(samples), -1)
    for f in meter._filters.values():  # K-weighting: high shelf + high pass
        x = f.apply_filter(x)
    ms = float(np.mean(x**2))
    return -0.691 + 10 * math.log10(ms) if ms > 0 else SILENCE_LUFS


def measure(samples: Audio, sample_rate: int) -> Loudness:
    """Loudness of a signal in LUFS, integrated when possible (see module docstring)."""
    if samples.size == 0 or not np.any(samples):
        return Loudness(SILENCE_LUFS, "silent")
    if len(samples) >= int(0.4 * sample_rate):
        value = float(_meter(sample_rate).integrated_loudness(samples.astype(np.float64)))
        if math.isfinite(value):
            return Loudness(value, "integrated")
    value = _ungated(samples, sample_rate)
    return Loudness(value, "ungated" if value > SILENCE_LUFS else "silent")


def true_peak_dbtp(samples: Audio, sample_rate: int) -> float:
    """True peak via 4x oversampling (BS.1770 Annex 2), in dBTP."""
    if samples.size == 0:
        return -math.inf
    up = resample(samples.astype(np.float32), sample_rate, sample_rate * 4, quality="VHQ")
    peak = float(max(np.max(np.abs(up)), np.max(np.abs(samples))))
    return 20 * math.log10(peak) if peak > 0 else -math.inf


def db_to_gain(db: float) -> float:
    return float(10 ** (db / 20.0))


def apply_gain(samples: Audio, gain_db: float) -> Audio:
    return (samples * np.float32(db_to_gain(gain_db))).astype(np.float32)


def gain_to_target(measured_lufs: float, target_lufs: float) -> float:
    """Gain (dB) that moves ``measured_lufs`` to ``target_lufs``; 0 for silence."""
    if measured_lufs <= SILENCE_LUFS:
        return 0.0
    return target_lufs - measured_lufs


def ceiling_gain_db(samples: Audio, sample_rate: int, ceiling_dbtp: float) -> float:
    """Non-positive gain (dB) that keeps the true peak at or under the ceiling."""
    tp = true_peak_dbtp(samples, sample_rate)
    return min(0.0, ceiling_dbtp - tp - 0.05) if math.isfinite(tp) else 0.0


def normalize(
    samples: Audio, sample_rate: int, target_lufs: float, ceiling_dbtp: float
) -> tuple[Audio, float, Loudness]:
    """Gain a signal to the target loudness, then reduce (never clip) to the true-peak ceiling.

    Returns the new samples, the total gain in dB and the original measurement.
    """
    m = measure(samples, sample_rate)
    gain = gain_to_target(m.lufs, target_lufs)
    out = apply_gain(samples, gain)
    extra = ceiling_gain_db(out, sample_rate, ceiling_dbtp)
    if extra < 0:
        out = apply_gain(out, extra)
        gain += extra
    return out, gain, m
