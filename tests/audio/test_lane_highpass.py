"""The high-pass in parallel lanes with a float64 state (:func:`kernels.lfilter_lanes`): exactly
scipy's float64 lfilter of each lane's stretch, within float32 rounding of one unbroken float64
recursion, and within a stated bound of scipy's float32 lfilter (what it replaced), on signals
unlike the bench's."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.signal import butter, lfilter

from duetflow.audio import edges, kernels

SR = 16000


def _ba(sr: int = SR) -> tuple[np.ndarray, np.ndarray]:
    return edges._highpass_ba(sr)


def _signals() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(30)
    n = SR * 3 + 7  # not divisible by the lanes
    t = np.arange(n) / SR
    clicks = np.zeros(n, np.float32)
    clicks[rng.integers(0, n, 40)] = rng.choice([-1.0, 1.0], 40)
    silence_mid = (rng.standard_normal(n) * 0.3).astype(np.float32)
    silence_mid[n // 4 : 3 * n // 4] = 0.0  # digital silence after a signal: decays to 0
    return {
        "noise": (rng.standard_normal(n) * 0.5).astype(np.float32),
        "tones": (0.4 * np.sin(2 * np.pi * 60 * t) + 0.3 * np.sin(2 * np.pi * 3000 * t)).astype(
            np.float32
        ),
        "full scale square": np.sign(np.sin(2 * np.pi * 37 * t)).astype(np.float32),
        "digital silence": np.zeros(n, np.float32),
        "silence inside": silence_mid,
        "clicks": clicks,
        "quiet": (rng.standard_normal(n) * 1e-30).astype(np.float32),
        "dc": np.full(n, 0.25, np.float32),
        "short": (rng.standard_normal(5) * 0.5).astype(np.float32),
        "one": np.array([0.5], np.float32),
        "empty": np.zeros(0, np.float32),
        "odd": (rng.standard_normal(SR * 2 + 13) * 0.1).astype(np.float32),
    }


def _pieces_reference(b: np.ndarray, a: np.ndarray, x: np.ndarray, lanes: int) -> np.ndarray:
    """scipy's float64 lfilter of each lane's stretch (from its warm start), rounded to float32."""
    bb, aa = b.astype(np.float64), a.astype(np.float64)
    warm = kernels.lane_warmup(tuple(bb.tolist()), tuple(aa.tolist()))
    y = np.empty(len(x), np.float32)
    for w, s, e in kernels.lane_bounds(len(x), warm):
        if e > s:
            y[s:e] = lfilter(bb, aa, x[w:e].astype(np.float64))[s - w :]
    return y


def test_warmup_is_computed_from_the_poles() -> None:
    for sr in (8000, 16000, 24000, 48000):
        b, a = butter(2, edges.HIGHPASS_HZ, "highpass", fs=sr)
        w = kernels.lane_warmup(tuple(b.tolist()), tuple(a.tolist()))
        radius = float(np.max(np.abs(np.roots(a))))
        # the bound decays as radius**n: from 2**-53 (float64) and a modest gain constant
        assert radius**w < 2.0**-53
        assert w < 1.5 * math.log(2.0**-53) / math.log(radius)
    b, a = _ba()
    w16 = kernels.lane_warmup(tuple(map(float, b)), tuple(map(float, a)))
    assert 1200 < w16 < 1700  # ~90 ms at 16 kHz, inside the 100 ms the edge measure warms
    assert w16 < edges._WARMUP_S * SR
    with pytest.raises(ValueError):
        kernels.lane_warmup((1.0, 0.0, 0.0), (1.0, -2.0, 1.0))  # a pole on the unit circle


@pytest.mark.parametrize("name", list(_signals()))
def test_lanes_equal_float64_pieces_exactly(name: str) -> None:
    b, a = _ba()
    x = _signals()[name]
    (y,) = kernels.lfilter_lanes(b, a, [x])
    assert y.dtype == np.float32 and y.shape == x.shape
    # the compiled lanes (or the fallback) are scipy's float64 recursion of each piece, bit for bit
    assert np.array_equal(y, _pieces_reference(b, a, x, kernels.LANES))


@pytest.mark.parametrize("name", list(_signals()))
def test_lanes_against_one_recursion_and_scipy_float32(name: str) -> None:
    b, a = _ba()
    x = _signals()[name]
    (y,) = kernels.lfilter_lanes(b, a, [x])
    peak = float(np.max(np.abs(x))) if len(x) else 0.0
    full64 = lfilter(b.astype(np.float64), a.astype(np.float64), x.astype(np.float64))
    # one unbroken float64 recursion: within float32 rounding (half an ulp of the output plus the
    # lanes' start, below 2**-53 of the peak)
    ulp = np.spacing(np.abs(full64).astype(np.float32)).astype(np.float64)
    assert np.all(np.abs(y - full64) <= 0.5 * ulp + 2.0**-52 * peak + 1e-45)
    # scipy's float32 lfilter (what the edge measure used): within 2e-5 of the peak
    ref32 = lfilter(b, a, x)
    assert np.all(np.abs(y.astype(np.float64) - ref32) <= 2e-5 * peak + 1e-44)
    if name == "silence inside":  # the float64 state leaves true zeros, not a stuck subnormal
        n = len(x)
        assert np.all(y[n // 2 : 3 * n // 4] == 0.0)
    if name == "digital silence":
        assert np.all(y == 0.0)


def test_several_signals_share_the_lanes() -> None:
    b, a = _ba()
    sig = _signals()
    xs = [sig["noise"], sig["odd"], sig["short"], sig["empty"], sig["tones"]]
    ys = kernels.lfilter_lanes(b, a, xs)
    for x, y in zip(xs, ys, strict=True):
        (alone,) = kernels.lfilter_lanes(b, a, [x])
        full64 = lfilter(b.astype(np.float64), a.astype(np.float64), x.astype(np.float64))
        peak = float(np.max(np.abs(x))) if len(x) else 0.0
        assert np.all(np.abs(y - full64) <= 0.5 * np.spacing(np.abs(alone)) + 2.0**-52 * peak)


def test_the_fallback_gives_the_same_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    b, a = _ba()
    sig = _signals()
    xs = [sig["noise"], sig["odd"]]
    fast = kernels.lfilter_lanes(b, a, xs)
    monkeypatch.setattr(kernels, "_lanes", lambda: None)
    slow = kernels.lfilter_lanes(b, a, xs)
    for f, s in zip(fast, slow, strict=True):
        assert np.array_equal(f, s)


def test_rejects_what_it_does_not_filter() -> None:
    b, a = _ba()
    with pytest.raises(ValueError):
        kernels.lfilter_lanes([1.0, 0.0], [1.0, 0.5], [np.ones(4, np.float32)])
    with pytest.raises(ValueError):
        kernels.lfilter_lanes(b, a, [np.ones((2, 4), np.float32)])


def test_analyse_in_lanes(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the lanes switched on (edges.HIGHPASS_LANES), analyse_many still equals analyse bit
    for bit, and both stay within 1e-4 dB of scipy's float32 high-pass on frames with power."""
    rng = np.random.default_rng(3)
    xs = [(rng.standard_normal(SR * 5 + k) * 0.1).astype(np.float32) for k in (0, 3, 11)]
    exact = [edges.analyse(x, SR) for x in xs]
    monkeypatch.setattr(edges, "HIGHPASS_LANES", True)
    many = edges.analyse_many(xs, SR)
    for x, m, e in zip(xs, many, exact, strict=True):
        one = edges.analyse(x, SR)
        assert np.array_equal(one.edge.db, m.edge.db)
        assert np.array_equal(one.level.db, e.level.db)
        assert np.max(np.abs(one.edge.db - e.edge.db)) < 1e-4


def test_analyse_around_equals_the_whole_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(edges, "HIGHPASS_LANES", True)
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(SR * 20) * 0.2).astype(np.float32)
    whole = edges.analyse(x, SR)
    part = edges.analyse_around(x, SR, SR * 8, SR * 12)
    k0 = part.edge.start // part.edge.hop
    n = len(part.edge.db)
    # float64 lanes: the stretch's frames equal the whole file's to float32 rounding
    assert np.max(np.abs(part.edge.db - whole.edge.db[k0 : k0 + n])) < 1e-5
