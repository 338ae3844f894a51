"""The cue audit's block-wise power spectrum against the frame-by-frame definition, bit for bit."""

from __future__ import annotations

import numpy as np

from duetflow.fairness.cues import FRAME, power_spectrum


def _reference(x: np.ndarray, sr: int, spans: list[tuple[float, float]]) -> np.ndarray:
    """Each frame wholly inside a span (hop FRAME/2) cut out one by one, 256 to a sum."""
    frames = []
    for s, e in spans:
        a, b = max(0, round(s * sr)), min(len(x), round(e * sr))
        frames += [x[i : i + FRAME] for i in range(a, b - FRAME + 1, FRAME // 2)]
    if not frames:
        return np.zeros(0)
    win = np.hanning(FRAME)
    total = np.zeros(FRAME // 2 + 1)
    for i in range(0, len(frames), 256):
        block = np.stack(frames[i : i + 256]) * win
        total += (np.abs(np.fft.rfft(block, axis=1)) ** 2).sum(axis=0)
    return total / len(frames)


def test_same_bits_as_frame_by_frame() -> None:
    rng = np.random.default_rng(7)
    sr = 16000
    x = rng.standard_normal(sr * 30) * np.linspace(0.01, 1.0, sr * 30)
    cases = [
        [(0.0, 30.0)],  # > 256 frames: several blocks
        [
            (0.5, 9.7),
            (10.01, 10.03),
            (10.2, 21.9),
            (22.0, 22.05),
            (23.3, 31.0),
        ],  # blocks span spans
        [(1.0, 1.01), (-0.2, 0.02)],  # none wholly inside
        [],
    ]
    for spans in cases:
        got, want = power_spectrum(x, sr, spans), _reference(x, sr, spans)
        assert got.shape == want.shape
        assert np.array_equal(got, want), spans
    assert power_spectrum(x, sr, cases[1]).size == FRAME // 2 + 1
