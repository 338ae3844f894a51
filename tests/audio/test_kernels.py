"""The compiled IIR kernels give scipy's bits: every sample compared as integers, not within a
tolerance, on random, constructed and edge-case signals, in the dtypes the measures use."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from scipy.signal import butter, lfilter, sosfilt

from duetflow.audio import kernels
from duetflow.audio.bs1770 import k_weighting_sos

pytestmark = pytest.mark.skipif(
    not kernels.compiled_available(), reason="numba missing: the kernels are scipy itself"
)


def _bits(a: npt.NDArray[np.floating]) -> npt.NDArray[np.integer]:
    a = np.ascontiguousarray(a)
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def _same(x: npt.NDArray[np.floating], y: npt.NDArray[np.floating]) -> None:
    assert x.dtype == y.dtype and x.shape == y.shape
    # every number (infinities included) by its bits; a NaN only as a NaN: its sign bit is
    # whichever operand x86 propagated (measured: scipy's C and the kernel differ there)
    nan = np.isnan(x)
    assert np.array_equal(nan, np.isnan(y)), "NaNs at other samples"
    mismatch = np.flatnonzero((_bits(x) != _bits(y)) & ~nan)
    assert len(mismatch) == 0, f"{len(mismatch)} samples differ, first at {mismatch[:5]}"


def _signals(dtype: type[np.floating]) -> Iterator[tuple[str, npt.NDArray[np.floating]]]:
    rng = np.random.default_rng(30)
    tiny = np.finfo(dtype).tiny
    yield "empty", np.zeros(0, dtype)
    yield "one sample", np.array([0.7], dtype)
    yield "two samples", np.array([-1.0, 1.0], dtype)
    yield "zeros", np.zeros(5000, dtype)
    yield "impulse", np.eye(1, 4000, 17, dtype=dtype)[0]
    yield "step", np.ones(4000, dtype)
    yield "full scale square", np.where(np.arange(8000) % 40 < 20, 1.0, -1.0).astype(dtype)
    yield "white", (rng.standard_normal(48_000) * 0.1).astype(dtype)
    yield "loud white", (rng.standard_normal(20_000) * 1e4).astype(dtype)
    yield "denormals", (rng.standard_normal(6000) * tiny * 8).astype(dtype)
    yield (
        "denormal tail",
        np.concatenate([rng.standard_normal(500), np.zeros(20_000)]).astype(dtype),
    )
    burst = rng.standard_normal(800) * 0.3
    yield "speech then digital silence", np.concatenate([burst, np.zeros(50_000)]).astype(dtype)
    yield (
        "silence, speech, silence, -0.0",
        np.concatenate(
            [np.zeros(3000), burst, np.zeros(40_000), -np.zeros(5000), burst, np.zeros(9000)]
        ).astype(dtype),
    )
    yield "speech then a constant", np.concatenate([burst, np.full(30_000, 0.25)]).astype(dtype)
    yield (
        "constant then tiny steps",
        np.concatenate(
            [np.full(20_000, 1e-3), np.full(20_000, 1e-3 + 1e-9), np.full(5000, tiny)]
        ).astype(dtype),
    )
    t = np.arange(16_000 * 3) / 16_000
    yield (
        "hum + speechlike",
        (
            0.01 * np.sin(2 * np.pi * 50 * t) + 0.3 * np.sin(2 * np.pi * 220 * t) * (t % 1 < 0.6)
        ).astype(dtype),
    )
    yield "long (10 min at 16 kHz)", (rng.standard_normal(16_000 * 600) * 0.05).astype(dtype)
    yield "strided", (rng.standard_normal(20_000) * 0.1).astype(dtype)[::3]
    yield "inf and nan", np.array([0.1, np.inf, 0.2, 0.3, np.nan, 0.1] + [0.0] * 10, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("sr", [8000, 16_000, 44_100, 48_000])
def test_highpass_equals_lfilter_bit_for_bit(dtype: type[np.floating], sr: int) -> None:
    b64, a64 = butter(2, 100.0, "highpass", fs=sr)
    b, a = np.asarray(b64, dtype), np.asarray(a64, dtype)  # as the edge measure builds them
    for name, x in _signals(dtype):
        with np.errstate(invalid="ignore", over="ignore"):
            got = kernels.lfilter(b, a, x)
            want = lfilter(b, a, x)
        assert got.dtype == want.dtype == dtype, name
        _same(got, want)


def test_other_orders_and_unnormalised_coefficients() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal(30_000)
    cases = [
        butter(1, 0.1),
        butter(4, 0.05),
        butter(6, [0.1, 0.3], "bandpass"),
        (np.array([0.2, 0.3]), np.array([2.0, -0.5, 0.25])),  # a0 != 1, len(b) < len(a)
        (np.array([1.0, -0.5, 0.1, 0.05]), np.array([3.0, 0.4])),  # len(b) > len(a)
    ]
    for b, a in cases:
        for dtype in (np.float32, np.float64):
            xs = x.astype(dtype)
            bs, as_ = np.asarray(b, dtype), np.asarray(a, dtype)
            _same(kernels.lfilter(bs, as_, xs), lfilter(bs, as_, xs))
    # mixed dtypes promote as scipy does (float32 signal, float64 coefficients)
    b, a = butter(2, 0.01, "highpass")
    xs = x.astype(np.float32)
    _same(kernels.lfilter(b, a, xs), lfilter(b, a, xs))
    # FIR (len(a) == 1) is scipy's convolution, so it goes to scipy
    _same(kernels.lfilter([0.5, 0.5], [1.0], xs), lfilter([0.5, 0.5], [1.0], xs))


@pytest.mark.parametrize("sr", [8000, 16_000, 44_100, 48_000])
def test_k_weighting_equals_sosfilt_bit_for_bit(sr: int) -> None:
    sos = k_weighting_sos(sr)
    for dtype in (np.float32, np.float64):
        for name, x in _signals(dtype):
            if len(x) == 0:  # scipy's sosfilt fails on an empty signal; the kernel returns one
                assert np.asarray(kernels.sosfilt(sos, x)).shape == (0,)
                continue
            with np.errstate(invalid="ignore", over="ignore"):
                got = kernels.sosfilt(sos, x)
                want = sosfilt(sos, x)
            assert got.dtype == want.dtype == np.float64, name
            _same(got, want)


def test_sosfilt_carries_state_across_chunks_like_scipy() -> None:
    rng = np.random.default_rng(2)
    sos = k_weighting_sos(48_000)
    x = rng.standard_normal(100_000) * 0.2
    zi_got = zi_want = np.zeros((len(sos), 2))
    for start in range(0, len(x), 12_345):
        piece = x[start : start + 12_345]
        got = kernels.sosfilt(sos, piece, zi=zi_got)
        want = sosfilt(sos, piece, zi=zi_want)
        assert isinstance(got, tuple) and isinstance(want, tuple)
        _same(got[0], want[0])
        _same(got[1], want[1])
        zi_got, zi_want = got[1], want[1]
    # the caller's state is not written to
    zi = rng.standard_normal((len(sos), 2))
    keep = zi.copy()
    kernels.sosfilt(sos, x[:100], zi=zi)
    _same(zi, keep)
    # a six-section design of another shape
    sos6 = butter(12, [0.05, 0.2], "bandpass", output="sos")
    _same(np.asarray(kernels.sosfilt(sos6, x)), sosfilt(sos6, x))


def test_inputs_are_not_modified() -> None:
    x = np.linspace(-1, 1, 1000, dtype=np.float32)
    keep = x.copy()
    b, a = butter(2, 0.05, "highpass")
    kernels.lfilter(np.asarray(b, np.float32), np.asarray(a, np.float32), x)
    kernels.sosfilt(k_weighting_sos(16_000), x)
    _same(x, keep)


def test_scipy_fallback_is_selected_by_the_environment() -> None:
    """``DUETFLOW_KERNELS=scipy`` turns the compiled path off (the same output, for the bench's
    comparison): the flag is read once per process, so a fresh interpreter checks it."""
    code = (
        "from duetflow.audio import kernels; import sys; "
        "sys.exit(0 if not kernels.compiled_available() else 1)"
    )
    env = {**os.environ, kernels.KERNELS_ENV: "scipy"}
    assert subprocess.run([sys.executable, "-c", code], env=env, timeout=120).returncode == 0


MEASURES = r"""
import sys
import numpy as np
from duetflow.audio import bs1770, edges
rng = np.random.default_rng(7)
out = {}
for sr in (16_000, 44_100):
    n = sr * 20  # 20 s: the K-weighting's chunked path as well
    t = np.arange(n) / sr
    x = (rng.standard_normal(n) * 0.003 + 0.3 * np.sin(2 * np.pi * 180 * t) * (t % 2 < 1.2))
    x = x.astype(np.float32)
    a = edges.analyse(x, sr)
    k = bs1770.k_weighted_energy(x, sr)
    out[f"edge{sr}"], out[f"level{sr}"] = a.edge.db, a.level.db
    out[f"hops{sr}"], out[f"total{sr}"] = k.hops, np.array([k.total])
    out[f"around{sr}"] = edges.analyse_around(x, sr, 5.0 * sr, 6.0 * sr).edge.db
np.savez(sys.argv[1], **out)
"""


def test_measures_equal_with_the_scipy_fallback(tmp_path: Path) -> None:
    """The edge envelopes and K-weighted energies the renderer reads are the same bits with
    the kernels and with scipy (``DUETFLOW_KERNELS=scipy``), each in its own interpreter."""
    results = {}
    for mode in ("scipy", "compiled"):
        env = {k: v for k, v in os.environ.items() if k != kernels.KERNELS_ENV}
        if mode == "scipy":
            env[kernels.KERNELS_ENV] = "scipy"
        path = tmp_path / f"{mode}.npz"
        subprocess.run(
            [sys.executable, "-c", MEASURES, str(path)], env=env, check=True, timeout=300
        )
        with np.load(path) as z:
            results[mode] = {k: z[k] for k in z.files}
    assert results["scipy"].keys() == results["compiled"].keys()
    for key, want in results["scipy"].items():
        assert len(want) > 0, key
        _same(results["compiled"][key], want)


def test_paired_measures_equal_the_single_ones() -> None:
    from duetflow.audio import bs1770, edges

    rng = np.random.default_rng(9)
    for sr in (16_000, 44_100):
        t = np.arange(sr * 12) / sr
        a = rng.standard_normal(len(t)) * 0.003 + 0.3 * np.sin(2 * np.pi * 180 * t) * (t % 2 < 1.2)
        b = np.concatenate([a[: sr * 3] * 0.5, np.zeros(sr * 2)])
        sigs = [x.astype(np.float32) for x in (a, b, a[: sr // 5], np.zeros(sr), a[::-1])]
        got = edges.analyse_many(sigs[:3], sr)
        for x, an in zip(sigs[:3], got, strict=True):
            want = edges.analyse(x, sr)
            for g, w in ((an.edge, want.edge), (an.level, want.level)):
                _same(g.db, w.db)
                _same(g.blocks, w.blocks)
        loud = bs1770.measure_each(sigs, sr)
        assert loud == [bs1770.measure(x, sr) for x in sigs]
        energies = bs1770.k_weighted_energies(sigs[:2], sr)
        for x, e in zip(sigs[:2], energies, strict=True):
            one = bs1770.k_weighted_energy(x, sr)
            _same(e.hops, one.hops)
            assert e.total == one.total and e.n_samples == one.n_samples
