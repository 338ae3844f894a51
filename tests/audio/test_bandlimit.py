"""The fast Welch periodogram behind ``energy_bandwidth_hz`` gives scipy's bits."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import signal

from duetflow.audio import kernels
from duetflow.audio.bandlimit import energy_bandwidth_hz, welch_density


def _signals() -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    out = []
    for n in (256, 257, 1000, 2047, 2048, 2049, 3071, 4096, 5000, 30001, 16000 * 45):
        out.append(rng.normal(0, 1, n))
        t = np.arange(n)
        out.append(np.sin(t * 0.01) + 1e-4 * rng.normal(0, 1, n) + 0.3)  # DC, a tone, a floor
        quiet = rng.normal(0, 1e-3, n).astype(np.float32).astype(np.float64)
        quiet[: n // 2] = 0.0  # digital silence then noise
        out.append(quiet)
    out.append(np.zeros(4096))
    return out


@pytest.mark.parametrize("path", ["compiled", "numpy"])
@pytest.mark.parametrize("sr", [8000, 16000, 48000])
def test_welch_density_is_scipys_welch_bit_for_bit(
    sr: int, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if path == "numpy":
        monkeypatch.setattr(kernels, "welch_kernels", lambda: None)
    elif kernels.welch_kernels() is None:  # the dev install has numba (extra `fast`)
        pytest.skip("numba missing: welch_density is the numpy path")
    for x in _signals():
        nperseg = min(2048, x.size)
        f0, p0 = signal.welch(x, fs=sr, nperseg=nperseg)
        f1, p1 = welch_density(x, sr, nperseg)
        assert p1.dtype == p0.dtype == np.float64
        assert np.array_equal(f0.view(np.int64), f1.view(np.int64))
        assert np.array_equal(p0.view(np.int64), p1.view(np.int64)), (x.size, sr)


def test_energy_bandwidth_reads_a_band_limited_noise() -> None:
    rng = np.random.default_rng(3)
    x = signal.sosfilt(signal.butter(8, 3000, fs=16000, output="sos"), rng.normal(0, 1, 160000))
    hz = energy_bandwidth_hz(x.astype(np.float32), 16000)
    assert hz is not None and 2800 <= hz <= 3400
    assert energy_bandwidth_hz(np.zeros(4000, np.float32), 16000) is None
    assert energy_bandwidth_hz(np.ones(100, np.float32), 16000) is None
