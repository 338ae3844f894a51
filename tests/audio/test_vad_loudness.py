"""VAD and loudness on synthetic signals of known layout."""

from __future__ import annotations

import math

import numpy as np
import pytest

from duetflow.audio.loudness import measure, normalize, true_peak_dbtp
from duetflow.audio.vad import VadParams, detect_speech


def _voiced(seconds: float, sr: int, f0: float, rng: np.random.Generator) -> np.ndarray:
    """Harmonic source with syllable-rate modulation: what WebRTC VAD calls speech."""
    t = np.arange(int(seconds * sr)) / sr
    f = f0 * (1 + 0.05 * np.sin(2 * np.pi * 3 * t))
    phase = 2 * np.pi * np.cumsum(f) / sr
    x = sum(np.sin(k * phase) / k for k in range(1, 12))
    env = 0.6 + 0.4 * np.sin(2 * np.pi * 4 * t) ** 2
    return (0.3 * x * env + 0.01 * rng.standard_normal(len(t))).astype(np.float32)


@pytest.mark.parametrize("sr", [16000, 22050, 44100])
def test_vad_finds_known_regions(sr: int) -> None:
    rng = np.random.default_rng(0)
    layout = [(0.5, 2.0), (2.8, 4.1), (5.0, 6.5)]
    total = 7.5
    x = (0.001 * rng.standard_normal(int(total * sr))).astype(np.float32)
    for a, b in layout:
        seg = _voiced(b - a, sr, 140.0, rng)
        x[int(a * sr) : int(a * sr) + len(seg)] += seg
    found = detect_speech(x, sr, VadParams(hangover_ms=0, min_silence_ms=200))
    assert len(found) == len(layout), found
    for (a, b), (fa, fb) in zip(layout, found, strict=True):
        assert abs(fa - a) <= 0.03 + 1e-9, (a, fa)
        assert abs(fb - b) <= 0.03 + 1e-9, (b, fb)


def test_loudness_gain_hits_target_and_ceiling() -> None:
    rng = np.random.default_rng(1)
    sr = 16000
    x = _voiced(4.0, sr, 120.0, rng) * 0.1
    out, gain, before = normalize(x, sr, -23.0, -1.0)
    assert before.method == "integrated"
    assert abs(measure(out, sr).lufs - (-23.0)) < 0.1
    assert math.isclose(gain, -23.0 - before.lufs, abs_tol=1e-6)
    loud, _, _ = normalize(x, sr, -3.0, -1.0)  # target impossible without clipping
    assert true_peak_dbtp(loud, sr) <= -1.0
    assert np.max(np.abs(loud)) < 1.0


def test_short_signal_falls_back_to_ungated() -> None:
    rng = np.random.default_rng(2)
    x = _voiced(0.25, 16000, 200.0, rng)
    m = measure(x, 16000)
    assert m.method == "ungated"
    assert -40 < m.lufs < 0
    assert measure(np.zeros(1000, np.float32), 16000).method == "silent"
