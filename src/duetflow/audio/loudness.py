"""Loudness to a target with a true-peak ceiling: ITU-R BS.1770 measurement and gain helpers.

:func:`measure` is :func:`duetflow.audio.bs1770.measure`: gated integrated loudness where the
signal has at least one 400 ms gating block; for shorter or very sparse speech (every block
below the -70 LUFS absolute gate) the *ungated* K-weighted mean square over the whole signal —
the same filter, no gating — which is what BS.1770 computes for a single block. The returned
:class:`Loudness` says which method it used. :func:`true_peak_dbtp` here oversamples the whole
signal (the reference that :func:`duetflow.audio.bs1770.true_peak_dbtp` is tested against).
"""

from __future__ import annotations

import math

import numpy as np

from duetflow.audio.bs1770 import SILENCE_LUFS, Loudness, measure
from duetflow.audio.io import Audio, resample

__all__ = [
    "SILENCE_LUFS",
    "Loudness",
    "apply_gain",
    "ceiling_gain_db",
    "db_to_gain",
    "gain_to_target",
    "measure",
    "normalize",
    "true_peak_dbtp",
]


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
