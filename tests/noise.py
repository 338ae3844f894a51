"""Test room tone: Gaussian noise, pink or white, at an exact RMS level (a seeded generator).

Shared by the tests that build recordings over a floor; it makes inputs, it measures nothing.
"""

from __future__ import annotations

import numpy as np


def noise_at(
    n: int, db: float, rng: np.random.Generator, sr: int, *, pink: bool = True
) -> np.ndarray:
    """``n`` samples of noise whose RMS is ``db`` dBFS (float64).

    Pink: the spectrum falls as 1/sqrt(f) above 20 Hz (flat below, so the lowest bins do not
    dominate); white: flat.
    """
    spec = np.fft.rfft(rng.standard_normal(n))
    if pink:
        spec /= np.sqrt(np.maximum(np.fft.rfftfreq(n, 1 / sr), 20.0))
    x = np.fft.irfft(spec, n)
    return x * (10 ** (db / 20) / np.sqrt(np.mean(x**2)))
