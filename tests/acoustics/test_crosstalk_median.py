"""The crosstalk leak's median (:func:`duetflow.acoustics.source_acoustics._median`) is
``numpy.median`` bit for bit, compiled or not, odd and even counts, ties, NaN."""

from __future__ import annotations

import numpy as np
import pytest

from duetflow.acoustics import source_acoustics
from duetflow.audio import kernels


@pytest.mark.parametrize("with_kernels", [True, False])
def test_the_leak_median_is_numpys(with_kernels: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not with_kernels:
        monkeypatch.setattr(kernels, "edge_kernels", lambda: None)
    rng = np.random.default_rng(31)
    for trial in range(3000):
        n = int(rng.integers(1, 300))
        v = rng.normal(-20.0, 8.0, n)
        if trial % 3 == 0:
            v = np.round(v)  # ties
        if trial % 50 == 0:
            v[int(rng.integers(0, n))] = np.nan
        got = source_acoustics._median(v)
        want = float(np.median(v))
        assert (np.isnan(got) and np.isnan(want)) or got.hex() == want.hex(), n
