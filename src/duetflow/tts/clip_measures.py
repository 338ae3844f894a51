"""The measures a voice reference clip is scored by: speech power, voiced share, SNR, pitch.

Plain numpy on one clip: :func:`speech_power` (mean power inside VAD speech and the voiced
share), :func:`mean_power` (of the recording's room tone), :func:`snr_db` (the two as a
ratio) and :func:`estimate_pitch` (median F0, recorded with the chosen voice).
:mod:`duetflow.tts.voices` selects clips with them.
"""

from __future__ import annotations

import math

import numpy as np

from duetflow.audio.io import Audio, resample, to_mono
from duetflow.audio.vad import VadParams, detect_speech


def estimate_pitch(samples: Audio, sr: int) -> float | None:
    """Median F0 (Hz) of the voiced frames, by normalised autocorrelation (60–400 Hz)."""
    x = to_mono(samples)
    if sr != 16000:
        x, sr = resample(x, sr, 16000), 16000
    frame, hop = 640, 160  # 40 ms frames, 10 ms hop
    if len(x) < frame:
        return None
    count = 1 + (len(x) - frame) // hop
    idx = np.arange(frame)[None, :] + hop * np.arange(count)[:, None]
    frames = x[idx].astype(np.float64)
    frames -= frames.mean(axis=1, keepdims=True)
    energy = (frames**2).sum(axis=1)
    if not np.any(energy > 0):
        return None
    loud = energy > energy.max() * 10 ** (-30 / 10)
    lo, hi = sr // 400, sr // 60
    spec = np.fft.rfft(frames[loud] * np.hanning(frame), n=2 * frame)
    ac = np.fft.irfft(np.abs(spec) ** 2)[:, : hi + 1]
    ac = ac / np.maximum(ac[:, :1], 1e-12)
    lags = lo + np.argmax(ac[:, lo : hi + 1], axis=1)
    peaks = ac[np.arange(len(lags)), lags]
    voiced = peaks > 0.45
    if voiced.sum() < 5:
        return None
    return float(np.median(sr / lags[voiced]))


def mean_power(x: Audio) -> float:
    """Mean power of a signal (0 for an empty one)."""
    return float(np.mean(np.square(x, dtype=np.float64))) if x.size else 0.0


def speech_power(samples: Audio, sr: int, params: VadParams | None = None) -> tuple[float, float]:
    """(mean power inside VAD speech regions, voiced share) of a signal."""
    regions = detect_speech(samples, sr, params)
    if not regions:
        return 0.0, 0.0
    parts = [samples[int(a * sr) : int(b * sr)] for a, b in regions]
    voiced = sum(len(p) for p in parts)
    total = float(np.sum([np.sum(np.square(p, dtype=np.float64)) for p in parts]))
    return total / max(voiced, 1), voiced / max(len(samples), 1)


def snr_db(speech_pow: float, noise_pow: float) -> float | None:
    """SNR of speech over noise power; None for a digitally clean (noise-free) recording."""
    if noise_pow <= 0:
        return None
    return 10 * math.log10(max(speech_pow - noise_pow, 1e-12) / noise_pow)
