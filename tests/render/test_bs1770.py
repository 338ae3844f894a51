"""The vectorised BS.1770 gating agrees with pyloudnorm (duetflow.audio.loudness)."""

from __future__ import annotations

import numpy as np
import pytest

from duetflow.audio import bs1770
from duetflow.audio import loudness as ld
from duetflow.samples.voice import FEMALE, speech


@pytest.mark.parametrize("sr", [16000, 24000, 44100])
@pytest.mark.parametrize("seconds", [0.4, 0.45, 1.0, 7.3])
def test_matches_pyloudnorm(sr: int, seconds: float) -> None:
    rng = np.random.default_rng(int(seconds * 10) + sr)
    x = speech(seconds, sr, FEMALE, rng, -27.0)
    x[: len(x) // 3] *= 0.01  # a quiet stretch, so both gates do something
    ref = ld.measure(x, sr)
    got = bs1770.measure(x, sr)
    assert got.method == ref.method
    assert got.lufs == pytest.approx(ref.lufs, abs=1e-6)


def test_fallbacks_match() -> None:
    sr = 16000
    short = np.full(3000, 0.1, np.float32)
    assert bs1770.measure(short, sr) == ld.measure(short, sr)
    assert bs1770.measure(np.zeros(sr, np.float32), sr).method == "silent"
    faint = np.full(sr, 1e-5, np.float32)  # every block under the -70 LUFS gate
    assert bs1770.measure(faint, sr) == ld.measure(faint, sr)


@pytest.mark.parametrize("sr", [16000, 24000])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_true_peak_matches_the_full_oversampling(sr: int, seed: int) -> None:
    """Oversampling only the blocks within 6 dB of the sample peak gives the full value."""
    rng = np.random.default_rng(seed)
    parts = [speech(float(rng.uniform(0.5, 2.0)), sr, FEMALE, rng, -20.0) for _ in range(6)]
    x = np.concatenate([p * np.float32(rng.uniform(0.1, 1.0)) for p in parts])
    x += rng.normal(0, 1e-3, x.shape).astype(np.float32)
    k = int(rng.integers(sr, len(x) - sr))
    x[k : k + 3] = [0.0, 0.9, -0.9]  # an intersample peak between full-scale neighbours
    assert bs1770.true_peak_dbtp(x, sr) == pytest.approx(ld.true_peak_dbtp(x, sr), abs=1e-9)
    assert bs1770.ceiling_gain_db(x, sr, -1.0) == pytest.approx(
        ld.ceiling_gain_db(x, sr, -1.0), abs=1e-9
    )
    assert bs1770.true_peak_dbtp(np.zeros(100, np.float32), sr) == ld.true_peak_dbtp(
        np.zeros(100, np.float32), sr
    )
