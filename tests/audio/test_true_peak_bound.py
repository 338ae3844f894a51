"""The true-peak shortcuts are proved, not estimated: the meter's overshoot bound is measured on
the meter (soxr VHQ at 4x) and holds on signals built to overshoot, where the 6 dB rule it
replaced did not (a signal whose samples follow the signs of the filter's weights reads 9.1 dB
over its sample peak). Each check compares with the reference meter, the whole signal
oversampled (:func:`duetflow.audio.loudness.true_peak_dbtp`)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import soxr

from duetflow.audio import bs1770
from duetflow.audio import loudness as ld
from duetflow.audio.mix import compiled_kernels

SR = 16000


def _phase_weights(sr: int) -> np.ndarray:
    """The weights of the meter's phase with the largest sum of magnitudes, centre first-aligned
    (``w[m]`` multiplies the sample ``m`` after the output's), from its impulse response."""
    n = 4096
    x = np.zeros(n, np.float32)
    x[n // 2] = 1.0
    y = soxr.resample(x, sr, 4 * sr, quality="VHQ").astype(np.float64)
    k = int(np.argmax([np.abs(y[j::4]).sum() for j in range(4)]))
    return y[k::4][::-1], n // 2  # reversed: the weight each input sample gets


def _matched(n: int, at: int, amplitude: float, sr: int = SR) -> np.ndarray:
    """Samples of ``amplitude`` whose signs follow the heaviest phase's weights around ``at``:
    the meter reads ``amplitude`` times the weights' magnitudes summed (~2.85) there."""
    w, c = _phase_weights(sr)
    x = np.zeros(n, np.float32)
    for i in np.flatnonzero(np.abs(w) > 1e-9):
        j = at + int(i) - (len(w) - 1 - c)
        if 0 <= j < n:
            x[j] = np.sign(w[i]) * amplitude
    return x


def test_the_bound_is_the_meters_own() -> None:
    b = bs1770.meter_bound(SR)
    assert 20 * math.log10(b.gain) == pytest.approx(9.1, abs=0.05)  # not 6 dB
    assert 1.0 < b.smooth_gain < 1.1
    assert 100 < b.reach < int(bs1770._TP_BLOCK_S * SR)  # neighbouring blocks cover it
    x = _matched(2 * SR, SR, 0.1)
    assert 20 * math.log10(10 ** (ld.true_peak_dbtp(x, SR) / 20) / 0.1) == pytest.approx(
        20 * math.log10(b.gain), abs=0.01
    )  # the bound is reached: it is the tightest of its kind


@pytest.mark.parametrize("under_db", [6.5, 8.0, 9.0])
def test_a_signal_built_to_overshoot_is_not_waved_through(under_db: float) -> None:
    """Its samples lie ``under_db`` under the limit, its true peak over it: the 6 dB rule
    answered 'certainly under' from 6 dB down."""
    limit = -1.0
    x = _matched(2 * SR, SR, 10 ** ((limit - under_db) / 20))
    assert 20 * math.log10(float(np.max(np.abs(x)))) <= limit - under_db + 1e-4
    ref = ld.true_peak_dbtp(x, SR)
    assert ref > limit
    assert not bs1770.true_peak_under(x, SR, limit)
    assert bs1770.true_peak_dbtp(x, SR) == pytest.approx(ref, abs=1e-9)


@pytest.mark.parametrize("where", ["start", "middle", "end", "block edge"])
def test_the_true_peak_is_found_in_a_quieter_block(where: str) -> None:
    """A loud plain tone, and 7 dB under it a block built to overshoot: the true peak is the
    quieter block's (the 6 dB rule never oversampled it, and read the tone's)."""
    n = 3 * SR
    t = np.arange(n) / SR
    x = (0.5 * np.sin(2 * np.pi * 200 * t)).astype(np.float32)
    block = int(bs1770._TP_BLOCK_S * SR)
    at = {"start": 20, "middle": n // 2, "end": n - 20, "block edge": 30 * block - 1}[where]
    x[max(0, at - 3000) : at + 3000] = 0.0
    x += _matched(n, at, 0.5 * 10 ** (-7 / 20))
    ref = ld.true_peak_dbtp(x, SR)
    assert ref > 20 * math.log10(0.5) + 1.0, where
    assert bs1770.true_peak_dbtp(x, SR) == pytest.approx(ref, abs=1e-9), where
    for limit in (ref - 0.5, ref + 0.5):
        assert bs1770.true_peak_under(x, SR, limit) == (ref < limit - 0.01), (where, limit)


@pytest.mark.parametrize("seed", range(6))
def test_rough_signals_answer_as_the_full_oversampling(seed: int) -> None:
    """Signals unlike speech (full-band noise, random signs, tones near Nyquist, clipped
    squares, steps), at random levels: both shortcuts agree with the reference meter."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(SR // 2, 3 * SR))
    t = np.arange(n) / SR
    kind = seed % 3
    if kind == 0:
        x = rng.choice([-1.0, 1.0], n) * rng.uniform(0.05, 0.4)
    elif kind == 1:
        x = np.clip(3 * np.sin(2 * np.pi * rng.uniform(3000, 7900) * t), -1, 1) * 0.3
    else:
        x = rng.normal(0, 0.05, n) + 0.4 * (np.arange(n) % 997 < 400)
    x = (x * np.sin(np.pi * t / t[-1]) ** 0.2).astype(np.float32)
    ref = ld.true_peak_dbtp(x, SR)
    assert bs1770.true_peak_dbtp(x, SR) == pytest.approx(ref, abs=1e-9)
    for limit in ref + np.array([-3.0, -0.5, -0.02, 0.02, 0.5, 3.0, 9.0]):
        assert bs1770.true_peak_under(x, SR, float(limit)) == (ref < limit - 0.01), limit


def test_every_block_stays_under_its_bound() -> None:
    """The bound itself, block by block, on the full oversampling of rough signals: no
    oversampled value of a block exceeds what the bound allows it."""
    rng = np.random.default_rng(7)
    block = int(bs1770._TP_BLOCK_S * SR)
    bound = bs1770.meter_bound(SR)
    for trial in range(8):
        n = int(rng.integers(3 * block, 12 * block))
        x = (rng.choice([-1.0, 1.0], n) * rng.uniform(0.01, 0.5, n) ** 3).astype(np.float32)
        x += _matched(n, int(rng.integers(0, n)), float(rng.uniform(0.05, 0.3)))
        up = np.abs(soxr.resample(x, SR, 4 * SR, quality="VHQ").astype(np.float64))
        peaks = bs1770._block_peaks(x, block)
        top = float(peaks.max())
        for k in range(len(peaks)):
            level = float(up[4 * k * block : 4 * min(n, (k + 1) * block)].max())
            # a block that can reach ``level`` is one the shortcut keeps
            assert bs1770._reachable(x, peaks, block, bound, top, level * (1 - 1e-9))[k], (
                trial,
                k,
            )


@pytest.mark.skipif(compiled_kernels() is None, reason="numba missing")
def test_the_rough_part_compiled_is_numpys() -> None:
    rng = np.random.default_rng(1)
    for n in (1, 2, 5, 799, 800, 801, 5000):
        x = rng.normal(0, 0.3, n).astype(np.float32)
        block = 800
        which = np.arange(-(-n // block))
        compiled = bs1770._rough_peaks(x, block, which)
        pad = np.zeros(n + 2, np.float32)
        pad[1:-1] = x
        r = np.abs(np.float32(0.5) * pad[1:-1] - np.float32(0.25) * (pad[:-2] + pad[2:]))
        r[0] = max(r[0], np.float32(0.25) * abs(x[0]))
        r[-1] = max(r[-1], np.float32(0.25) * abs(x[-1]))
        want = np.array([r[k * block : (k + 1) * block].max() for k in which], np.float32)
        assert np.array_equal(compiled, want), n


def _louder_beside_its_samples(sr: int, block: int) -> np.ndarray:
    """A signal silent up to sample ``block`` and free over the next 160, chosen (a linear
    programme) so that the meter's value between samples ``block - 1`` and ``block`` is 1 and
    every sample and every value of the next block is as small as can be: the peak lies in a
    block of zeros, carried there from its neighbour within the filter's reach."""
    from scipy.optimize import linprog

    n = 4096
    x = np.zeros(n, np.float32)
    x[n // 2] = 1.0
    y = soxr.resample(x, sr, 4 * sr, quality="VHQ").astype(np.float64)

    def weight(out: int, j: int) -> float:  # input j's weight in output ``out`` (4x index)
        i = out - 4 * (j - n // 2)
        return float(y[i]) if 0 <= i < len(y) else 0.0

    free = range(block, block + 160)
    p = 4 * (block - 1) + 2
    rows, rhs = [[*(-weight(p, j) for j in free), 0.0]], [-1.0]  # the value at p >= 1
    for q in range(4 * block, 8 * block):  # |each value of the next block| <= t
        w = [weight(q, j) for j in free]
        rows += [[*w, -1.0], [*(-v for v in w), -1.0]]
        rhs += [0.0, 0.0]
    for i in range(len(free)):  # |each sample| <= t
        for sign in (1.0, -1.0):
            r = [0.0] * (len(free) + 1)
            r[i], r[-1] = sign, -1.0
            rows.append(r)
            rhs.append(0.0)
    cost = np.zeros(len(free) + 1)
    cost[-1] = 1.0
    sol = linprog(cost, A_ub=np.array(rows), b_ub=np.array(rhs), bounds=(None, None))
    assert sol.status == 0 and sol.fun < 0.8  # the next block reads < 0.8 of the peak
    out = np.zeros(6 * block, np.float32)
    out[block : block + 160] = sol.x[:-1]
    return out


def test_a_peak_carried_into_a_silent_block_is_found() -> None:
    """The bound of a block counts its neighbours' samples within the filter's reach: a value
    1.5 dB over every sample and every value of the block that holds them, lying in the block
    of zeros beside it, is not waved through (a rule reading each block's own samples was)."""
    block = int(bs1770._TP_UNDER_BLOCK_S * SR)
    x = _louder_beside_its_samples(SR, block) * np.float32(0.5)
    up = np.abs(soxr.resample(x, SR, 4 * SR, quality="VHQ").astype(np.float64))
    ref = ld.true_peak_dbtp(x, SR)
    inside = 20 * math.log10(max(float(up[4 * block : 8 * block].max()), float(np.abs(x).max())))
    assert ref > inside + 1.5  # the peak lies in the silent block
    limit = (ref + inside) / 2
    assert not bs1770.true_peak_under(x, SR, limit)
    assert bs1770.true_peak_dbtp(x, SR) == pytest.approx(ref, abs=1e-9)
