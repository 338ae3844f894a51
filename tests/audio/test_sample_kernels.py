"""The mixdown's per-sample loops (:mod:`duetflow.audio.sample_kernels`) give the numpy path's
bits: the 16-bit written form (:func:`duetflow.rendering.mixdown.as_written`) and BS.1770's
K-weighted energies, compared as integers with the kernels and without them
(``kernels.sample_kernels`` returning None, as where numba is missing); and the block peaks of
the true peak (:func:`duetflow.audio.bs1770._block_peaks`) as before, without the zero padding."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt
import pytest

from duetflow.audio import bs1770, kernels
from duetflow.rendering import mixdown

compiled = pytest.mark.skipif(
    kernels.sample_kernels() is None, reason="numba missing: the fallback is the reference itself"
)


def _signals() -> Iterator[npt.NDArray[np.float32]]:
    rng = np.random.default_rng(30)
    for n in (0, 1, 2, 3, 799, 800, 801, 2400, 48_017):
        yield (rng.normal(0, 0.3, n)).astype(np.float32)
        yield (rng.normal(0, 2.0, n)).astype(np.float32)  # clipped both ways
    x = rng.normal(0, 0.1, 5000).astype(np.float32)
    x[::7] = -0.0
    x[1::11] = 0.0
    x[2::13] = np.float32(1e-41)  # subnormal
    x[3::17] = np.float32(-1e-41)
    x[4::19] = 1.0  # at and around the clip points
    x[5::23] = np.float32(1.0 - 1.0 / 32768)
    x[6::29] = -1.0
    x[7::31] = np.float32(-1.0000001)
    x[8::37] = np.float32(0.5 / 32768)  # ties of the rounding (half a step: to even)
    x[9::41] = np.float32(1.5 / 32768)
    x[10::43] = np.float32(-2.5 / 32768)
    yield x
    y = x.copy()
    y[100] = np.inf
    y[200] = -np.inf
    y[300] = np.nan
    yield y
    yield np.zeros(1600, np.float32)


def _bits(a: npt.NDArray[np.float32]) -> bytes:
    return np.ascontiguousarray(a, dtype=np.float32).tobytes()


def _measure() -> list[bytes]:
    out = []
    for x in _signals():
        for block in (1, 3, 800):
            if len(x):
                out.append(_bits(bs1770._block_peaks(x, block)))
        for gain_db in (0.0, -0.05, -3.7, -12.0, 0.5):
            out.append(_bits(mixdown.as_written(x, gain_db)))
    return out


@compiled
def test_block_peaks_and_the_written_form_are_the_same_without_the_kernels(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fast = _measure()
    monkeypatch.setattr(kernels, "sample_kernels", lambda: None)
    slow = _measure()
    assert len(fast) == len(slow) > 150
    assert fast == slow


@compiled
def test_the_written_form_rounds_half_to_even_and_keeps_the_sign_of_zero() -> None:
    steps = np.array([0.5, 1.5, 2.5, -0.5, -2.5, -1e-9, 0.0], np.float32) / np.float32(32768)
    got = mixdown.as_written(np.concatenate([steps, np.array([-0.0], np.float32)]), 0.0)
    want = np.array([0.0, 2.0, 2.0, -0.0, -2.0, -0.0, 0.0, -0.0], np.float32) / 32768
    assert _bits(got) == _bits(want)


def _energies() -> list[object]:
    rng = np.random.default_rng(31)
    chunk = bs1770._grid(16_000).chunk
    out: list[object] = []
    for n, m in ((1, 1), (5, 3000), (16_000, 16_000), (chunk + 7, 40_000), (2 * chunk + 1, chunk)):
        for dtype in (np.float32, np.float64):
            x = (rng.normal(0, 0.1, n)).astype(dtype)
            u = (rng.normal(0, 0.01, m)).astype(dtype)
            u[: m // 2] = 0.0  # digital silence: the guard tone keeps the filter normal
            for a, b in ((x, u), (u, x)):
                for e in bs1770.k_weighted_energies([a, b], 16_000):
                    out.append((e.n_samples, e.hops.tobytes(), float(e.total).hex()))
            out.append(bs1770.measure_each([x, u], 16_000))
    return out


@compiled
def test_k_weighted_energies_are_the_same_without_the_kernels(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the filter's input (piece + guard tone, widened) made in one pass and filtered in place
    fast = _energies()
    monkeypatch.setattr(kernels, "sample_kernels", lambda: None)
    slow = _energies()
    assert len(fast) == len(slow) > 40
    assert fast == slow


def test_block_peaks_are_the_zero_padded_maxima() -> None:
    # the former definition: magnitudes padded with zeros to whole blocks, the maximum of each
    for x in _signals():
        for block in (1, 3, 800):
            if not len(x):
                continue
            nb = -(-len(x) // block)
            mag = np.zeros(nb * block, dtype=np.float32)
            np.abs(x, out=mag[: len(x)])
            want = mag.reshape(nb, block).max(axis=1)
            got = bs1770._block_peaks(x, block)
            assert got.dtype == want.dtype and _bits(got) == _bits(want)


def _split(x: npt.NDArray[np.floating], rng: np.random.Generator) -> list[npt.NDArray[np.floating]]:
    """``x`` cut at random places (odd and even, empty pieces among them)."""
    cuts = sorted(rng.integers(0, len(x) + 1, size=int(rng.integers(0, 9))).tolist())
    return [x[a:b] for a, b in zip([0, *cuts], [*cuts, len(x)], strict=True)]


@pytest.mark.parametrize("numba", [True, False])
def test_measuring_pieces_is_measuring_them_joined(
    monkeypatch: pytest.MonkeyPatch, numba: bool
) -> None:
    """A speaker's speech measured from its pieces (the filter input made from them, the
    guard tone's sign by place in the filter's chunk) gives the numbers of the pieces joined."""
    if not numba:
        monkeypatch.setattr(kernels, "sample_kernels", lambda: None)
    rng = np.random.default_rng(32)
    chunk = bs1770._grid(16_000).chunk
    for n, m in ((1, 1), (5, 3000), (16_000, 16_001), (chunk + 7, 40_000), (2 * chunk + 1, 3)):
        for dtype in (np.float32, np.float64):
            x = rng.normal(0, 0.1, n).astype(dtype)
            u = rng.normal(0, 0.01, m).astype(dtype)
            u[: m // 2] = 0.0
            for _ in range(3):
                px, pu = _split(x, rng), _split(u, rng)
                want = bs1770.measure_each([x, u], 16_000)
                assert bs1770.measure_each_joined([px, pu], 16_000) == want
                joined = [np.concatenate(p) if p else np.zeros(0, np.float32) for p in (px, pu)]
                assert bs1770.measure_each(joined, 16_000) == want
    # a speaker with no speech, one alone, and pieces of two dtypes (joined: numpy's cast)
    a = rng.normal(0, 0.1, 9000).astype(np.float32)
    b = rng.normal(0, 0.1, 7000)
    assert bs1770.measure_each_joined([[], [a]], 16_000) == bs1770.measure_each(
        [np.zeros(0, np.float32), a], 16_000
    )
    assert bs1770.measure_each_joined([[a[:10], b]], 16_000) == bs1770.measure_each(
        [np.concatenate([a[:10], b])], 16_000
    )


@compiled
def test_the_int16_of_the_written_form_is_numpys_cast_and_nan_goes_to_numpy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from duetflow.rendering.render import written_pcm16

    xs = [mixdown.as_written(x, g) for x in _signals() for g in (0.0, -3.7)]
    for x in xs:
        if not np.isnan(x).any():  # numpy's cast of NaN is the platform's: not compiled
            want = (x * np.float32(32768.0)).astype(np.int16)
            assert written_pcm16(x).tobytes() == want.tobytes()
    with np.errstate(invalid="ignore"):  # the NaN signal, on numpy's path
        fast = [written_pcm16(x).tobytes() for x in xs]
    monkeypatch.setattr(kernels, "sample_kernels", lambda: None)
    with np.errstate(invalid="ignore"):
        assert [written_pcm16(x).tobytes() for x in xs] == fast


@compiled
def test_a_clips_background_on_its_fades_is_the_same_without_the_kernels(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from duetflow.audio.mix import fade_envelope
    from duetflow.rendering import assembly

    rng = np.random.default_rng(33)
    cases = []
    for n, f in ((1, 1), (7, 3), (800, 80), (9000, 80), (10_000, 3000), (20_000, 8192), (5, 0)):
        env = fade_envelope(n, f)
        if n > 100:
            env[n // 2] = np.float32(0.25)  # under 1 mid-clip: outside the fade windows or not
            env[3] = np.float32(1.5)  # over 1: left alone
        for at in (-n // 2, 0, 37, 30_000 - n // 3):
            fp = np.float32(rng.uniform(1e-6, 1e-3))
            cases.append((assembly.Clip(0, None, env, env, at, 0, n, float(fp)), at))
    base = rng.uniform(0, 1e-3, 30_000).astype(np.float32)

    def run() -> list[bytes]:
        out = []
        for clip, at in cases:
            have = base.copy()
            assembly._place_background(have, clip, at)
            out.append(have.tobytes())
        return out

    fast = run()
    monkeypatch.setattr(kernels, "sample_kernels", lambda: None)
    assert run() == fast


def test_a_faded_clip_is_the_samples_times_envelope_times_gain() -> None:
    """mix.faded scales the whole once and only the ramps through the envelope: the bits of
    ``samples * (fade_envelope * gain)``, at every length against the fade's."""
    from duetflow.audio.mix import fade_envelope, faded

    rng = np.random.default_rng(34)
    for n in (0, 1, 2, 3, 159, 160, 161, 321, 5000):
        for fade_n in (0, 1, 80, 160, 400):
            x = rng.normal(0, 0.3, n).astype(np.float32)
            gain = np.float32(rng.uniform(0.01, 8.0))
            data, env = faded(x, fade_n, gain)
            want_env = fade_envelope(n, fade_n)
            assert env.tobytes() == want_env.tobytes()
            assert data.dtype == np.float32
            assert data.tobytes() == (x * (want_env * gain)).tobytes(), (n, fade_n)
