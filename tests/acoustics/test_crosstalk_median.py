"""The crosstalk leak's median (:func:`duetflow.acoustics.source_acoustics._median`) is
``numpy.median`` bit for bit, compiled or not, odd and even counts, ties, NaN; the compiled
crosstalk marking (:func:`duetflow.audio.walk_kernels.crosstalk`) is the numpy path's."""

from __future__ import annotations

import numpy as np
import pytest

from duetflow.acoustics import source_acoustics
from duetflow.audio import edges, kernels

SR = 16_000


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


def _views(rng: np.random.Generator, n0: int, n1: int) -> list[source_acoustics.TrackView]:
    out = []
    for n in (n0, n1):
        db = rng.normal(-45.0, 12.0, n)
        if rng.random() < 0.3:
            db = np.round(db)  # ties
        if rng.random() < 0.1:
            db[int(rng.integers(0, n))] = np.nan
        env = edges.Envelope(db, 40, SR)
        an = edges.Analysis(env, env)
        ones = np.ones(n, dtype=bool)
        out.append(source_acoustics.TrackView(np.zeros(n * 40, np.float32), SR, an, ones, ones))
    return out


def test_crosstalk_is_the_numpy_path(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(32)
    cases = []
    for _ in range(300):
        n0, n1 = int(rng.integers(20, 900)), int(rng.integers(20, 900))
        own = [
            [(float(a), float(a + rng.uniform(0, 8000))) for a in rng.uniform(0, 36000, 4)]
            for _ in range(2)
        ]
        floors = [
            None if rng.random() < 0.2 else edges.Floor(-60.0 + rng.normal(0, 5), -62.0, 1.0)
            for _ in range(2)
        ]
        cases.append((n0, n1, own, floors, int(rng.integers(0, 2**31))))

    def measure() -> list[object]:
        out: list[object] = []
        for n0, n1, own, floors, seed in cases:
            views = _views(np.random.default_rng(seed), n0, n1)
            source_acoustics.mark_crosstalk(views, own, floors)
            out += [None if v.blocked is None else v.blocked.tobytes() for v in views]
        return out

    fast = measure()
    monkeypatch.setattr(kernels, "edge_kernels", lambda: None)
    slow = measure()
    assert sum(b is not None for b in fast) > 100
    assert fast == slow
