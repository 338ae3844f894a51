"""The fast Welch periodogram behind ``energy_bandwidth_hz`` gives scipy's bits."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import signal

from duetflow.audio import bandlimit, kernels
from duetflow.audio.bandlimit import energy_bandwidth_hz, lowpass, welch_density


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


def _lowpass_signals() -> list[np.ndarray]:
    """Lengths around scipy's overlap-add blocks (16 kHz, 4 kHz: 1966-sample steps) and its
    fallback to one FFT, noise, tones over a floor, digital silence, subnormals, a spike."""
    rng = np.random.default_rng(11)
    out = []
    lengths = [1, 2, 100, 469, 470, 471, 1000, 2200, 3931, 3932, 3933, 5000, 1966 * 16]
    lengths += [1966 * 16 + 1, 1966 * 17 - 1, 1966 * 33 + 117, 44100, 100_003, 16000 * 46]
    lengths += [int(n) for n in rng.integers(4000, 400_000, 6)]
    for n in lengths:
        out.append(rng.normal(0, 0.1, n).astype(np.float32))
        t = np.arange(n)
        x = (0.3 * np.sin(t * 0.2) + 1e-3 * rng.normal(0, 1, n)).astype(np.float32)
        x[: n // 3] = 0.0  # digital silence, then a tone over a floor
        out.append(x)
    for n in (16000 * 30, 44100 * 20):  # a clip-per-turn track: clips between digital silence
        x = np.zeros(n, np.float32)
        pos = int(rng.integers(0, 4000))
        while pos < n:
            k = int(rng.integers(2000, 60_000))
            x[pos : pos + k] = rng.normal(0, 0.05, min(k, n - pos))
            x[pos + k - 1 : pos + k] = -1e-30  # a tail ending on a tiny negative sample
            pos += k + int(rng.integers(1, 80_000))
        out.append(x)
    spike = np.zeros(50_000, np.float32)
    spike[25_000] = 1.0
    spike[:10] = np.float32(1e-40)  # subnormals
    out.append(spike)
    out.append(np.full(30_000, 0.5, np.float32))
    neg = np.full(100_000, -0.0, np.float32)  # digital silence of negative zeros, one burst
    neg[60_000:61_000] = rng.normal(0, 0.1, 1000)
    out.append(neg)
    return out


_SRS_CUTOFFS = [(16000, 4000.0), (16000, 3000.0), (8000, 3000.0), (44100, 4000.0), (48000, 7000.0)]


@pytest.mark.parametrize(("sr", "cutoff"), _SRS_CUTOFFS)
def test_lowpass_is_scipys_oaconvolve_within_float32_rounding(sr: int, cutoff: float) -> None:
    """scipy's ``oaconvolve`` in float64 against the float32 transforms: every sample within
    2e-6 of the signal's peak (9e-7 the worst when this was written: 120 dB down, under the
    filter's 60 dB stop band by 60 dB), float32 out, digital silence far from any sound
    exactly +0.0 (a clip-per-turn track's silence between its clips stays digital)."""
    h = bandlimit._taps(sr, cutoff)
    for x in _lowpass_signals():
        ref = signal.oaconvolve(np.asarray(x, dtype=np.float64), h, mode="same")
        got = lowpass(x, sr, cutoff)
        assert got.dtype == np.float32 and got.shape == x.shape
        peak = float(np.max(np.abs(x))) or 1.0
        assert np.max(np.abs(got - ref)) <= 2e-6 * peak, (x.size, sr, cutoff)
    x = np.zeros(sr * 20, np.float32)
    x[sr : 2 * sr] = np.random.default_rng(1).normal(0, 0.1, sr)
    got = lowpass(x, sr, cutoff)
    block = bandlimit._oa_block(x.size, h.size) * bandlimit._OA_ROWS
    far = got[4 * sr + 2 * block :]  # groups of blocks holding only silence
    assert far.size > 0 and not np.any(far) and not np.any(np.signbit(far))


@pytest.mark.parametrize(("sr", "cutoff"), _SRS_CUTOFFS)
def test_lowpass_meets_its_spec_zero_phase(sr: int, cutoff: float) -> None:
    """docs/equalisation.md's filter, measured through ``lowpass`` on an impulse: zero phase
    (the response peaks on the impulse and is symmetric about it, to float32 rounding), flat
    within 0.02 dB up to the transition band (``TRANSITION_HZ`` wide, centred on the cutoff),
    -6 dB at the cutoff, and the stop band beyond it ~``STOP_DB`` down (the Kaiser design
    reaches 59.7-59.9 dB)."""
    x = np.zeros(3 * sr, np.float32)
    at = sr + 123
    x[at] = 1.0
    y = lowpass(x, sr, cutoff).astype(np.float64)
    assert int(np.argmax(y)) == at
    assert np.max(np.abs(y[at + 1 : at + 3000] - y[at - 1 : at - 3000 : -1])) < 1e-6
    gain = np.abs(np.fft.rfft(y))
    f = np.fft.rfftfreq(y.size, 1.0 / sr)
    half = bandlimit.TRANSITION_HZ / 2
    db = 20 * np.log10(np.maximum(gain, 1e-300))
    assert np.all(np.abs(db[f <= cutoff - half]) < 0.02)
    assert abs(db[int(np.argmin(np.abs(f - cutoff)))] + 6.02) < 0.05
    assert np.max(db[f >= cutoff + half]) < -bandlimit.STOP_DB + 0.5


def test_lowpass_overlap_add_path_is_taken_and_leaves_the_input() -> None:
    x = np.random.default_rng(2).normal(0, 0.1, 16000 * 10).astype(np.float32)
    before = x.copy()
    h = bandlimit._taps(16000, 4000.0)
    fast = bandlimit._overlap_add_same(x, h)
    assert fast is not None and fast.base is None  # its own array, not a view of a buffer
    assert np.array_equal(x, before)
    assert bandlimit._oa_block(x.size, h.size) == 4096  # powers of two, 16 taps' spans
    assert bandlimit._oa_block(300, h.size) == 1024  # one block: the whole convolution
    assert bandlimit._overlap_add_same(x.reshape(10, -1), h) is None
    assert lowpass(x, 16000, None) is x and lowpass(x, 16000, 7900.0) is x


def _half_silent() -> list[np.ndarray]:
    """Clip-per-turn tracks: clips between digital silence (+0.0 and -0.0), and segments whose
    one sound is their first or last sample, a subnormal, or a NaN."""
    rng = np.random.default_rng(11)
    out = []
    for n, signed in ((16000 * 60, False), (16000 * 20 + 517, True), (48000 * 7, False)):
        x = np.zeros(n)
        t = int(rng.integers(0, 5000))
        while t < n:
            d = int(rng.uniform(0.3, 3.0) * 16000)
            x[t : t + d] = rng.normal(0, 0.05, min(d, n - t))
            t += d + int(rng.uniform(0.5, 4.0) * 16000)
        if signed:
            x[x == 0.0] = -0.0
        out.append(x)
    lone = np.zeros(2048 * 12)
    lone[1024 * 3] = 0.5  # the first sample of segment 3, the last-but-1023 of segment 2
    lone[1024 * 7 - 1] = 0.25  # the last sample of segment 5
    lone[1024 * 10 + 5] = -1e-310  # a subnormal, alone in segments 9 and 10
    lone[1024 * 9 + 5] = -0.0
    out.append(lone)
    nan = np.zeros(2048 * 6)
    nan[5000] = np.nan
    out.append(nan)
    return out


@pytest.mark.parametrize("path", ["compiled", "numpy"])
def test_welch_density_over_digital_silence_is_scipys_bit_for_bit(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Segments of digital silence are not transformed on the compiled path; their power is
    +0.0 in every bin, which is what scipy's transforms give: the same bits as scipy's welch
    (NaNs compared as bit patterns too)."""
    if path == "numpy":
        monkeypatch.setattr(kernels, "welch_kernels", lambda: None)
    elif kernels.welch_kernels() is None:
        pytest.skip("numba missing: welch_density is the numpy path")
    for x in _half_silent():
        for nperseg in (2048, 256, 1000):
            f0, p0 = signal.welch(x, fs=16000, nperseg=nperseg)
            f1, p1 = welch_density(x, 16000, nperseg)
            assert np.array_equal(f0.view(np.int64), f1.view(np.int64))
            assert np.array_equal(p0.view(np.int64), p1.view(np.int64)), (x.size, nperseg)


def test_welch_density_transforms_only_the_segments_that_hold_sound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The skip is taken: on a track that is half digital silence, only the segments holding a
    sample other than zero reach the FFT (counted by a wrapper of scipy's rfft)."""
    if kernels.welch_kernels() is None:
        pytest.skip("numba missing: welch_density is the numpy path")
    x = _half_silent()[0]
    rows = 0
    real_rfft = bandlimit.sp_fft.rfft

    def counting(a: np.ndarray, *args: object, **kw: object) -> np.ndarray:
        nonlocal rows
        rows += a.shape[0]
        return real_rfft(a, *args, **kw)  # type: ignore[no-any-return]

    monkeypatch.setattr(bandlimit.sp_fft, "rfft", counting)
    hop = 1024
    count = (x.size - 1024) // hop
    segs = np.lib.stride_tricks.sliding_window_view(x, 2048)[::hop][:count]
    sounding = int(np.count_nonzero(np.any(segs != 0.0, axis=1)))
    assert 0.2 * count < sounding < 0.9 * count
    welch_density(x, 16000, 2048)
    assert rows == sounding


def test_lowpass_bits_do_not_depend_on_how_many_blocks_go_per_transform(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """pocketfft transforms each row alone (batched rows share only the SIMD registers): the
    group size (``_OA_ROWS``) is a speed setting, every sample the same at 8, 16 and 32 rows,
    on lengths that fill a group, leave a part-filled block and a short last group."""
    rng = np.random.default_rng(3)
    h = bandlimit._taps(16000, 4000.0)
    spec = bandlimit._taps_spectrum(16000, 4000.0, 4096)
    for n in (3862, 3863, 40_000, 123_457, 720_001):
        x = rng.normal(0, 0.1, n).astype(np.float32)
        got = []
        for rows in (8, 16, 32):
            monkeypatch.setattr(bandlimit, "_OA_ROWS", rows)
            got.append(bandlimit._overlap_add_same(x, h, spec if n > 4096 else None))
        assert all(g is not None and g.tobytes() == got[0].tobytes() for g in got), n
