"""BS.1770 loudness (duetflow.audio.bs1770) against pyloudnorm and against constructed truth.

pyloudnorm is an independent implementation (its own filter code, a per-block Python loop); it
is given the whole signal, and the module follows its block count (a partial trailing block when
50 ms or more of a hop is left), so both must use the same blocks. The gate tests
use tones whose levels are set analytically, with the K-weighting gain at the tone's frequency
taken from pyloudnorm's own filter stages, so no expected value comes from the code under test.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np
import pyloudnorm
import pytest
from scipy.signal import sosfilt, sosfreqz

from duetflow.audio import bs1770
from duetflow.audio import loudness as ld
from duetflow.demo.voice import FEMALE, MALE, room_tone, speech

RATES = (8000, 11025, 16000, 22050, 24000, 32000, 44100, 48000)
#: the contract is 0.001 LU; both sides are float64, so a slipped block boundary shows far below it
TOL_LU = 1e-6


def _stages(rate: int) -> tuple[pyloudnorm.IIRfilter, pyloudnorm.IIRfilter]:
    """pyloudnorm's K-weighting stages, through its public IIRfilter class."""
    return (
        pyloudnorm.IIRfilter(4.0, 1 / np.sqrt(2), 1500.0, rate, "high_shelf"),
        pyloudnorm.IIRfilter(0.0, 0.5, 38.0, rate, "high_pass"),
    )


def interval(n: int, rate: int) -> int:
    """End of the last complete 400 ms block: hops k end at floor(k * rate / 10)."""
    ends = [k * rate // 10 for k in range(4, 10 * n // rate + 2) if k * rate // 10 <= n]
    return ends[-1] if ends else 0


def reference(x: np.ndarray, rate: int) -> float:
    return float(pyloudnorm.Meter(rate).integrated_loudness(x.astype(np.float64)))


def reference_ungated(x: np.ndarray, rate: int) -> float:
    y = x.astype(np.float64)
    for stage in _stages(rate):
        y = stage.apply_filter(y)
    return -0.691 + 10 * math.log10(float(np.mean(y * y)))


def k_gain_db(freq: float, rate: int) -> float:
    """pyloudnorm's K-weighting gain at ``freq`` (dB)."""
    z = np.exp(-1j * 2 * np.pi * freq / rate)
    gain = 1.0
    for s in _stages(rate):
        gain *= abs(np.polyval(s.b[::-1], z) / np.polyval(s.a[::-1], z))
    return 20 * math.log10(gain)


def tone(level_lufs: float, seconds: float, rate: int, freq: float = 997.0) -> np.ndarray:
    """A sine whose K-weighted loudness is ``level_lufs`` (mean square A^2 / 2, K gain applied)."""
    amp = math.sqrt(2 * 10 ** ((level_lufs + 0.691 - k_gain_db(freq, rate)) / 10))
    t = np.arange(int(round(seconds * rate))) / rate
    return (amp * np.sin(2 * np.pi * freq * t)).astype(np.float32)


Kind = Callable[[int, np.random.Generator], np.ndarray]
KINDS: dict[str, Kind] = {
    "speech": lambda sr, rng: speech(6.37, sr, FEMALE, rng, -24.0),
    "speech loud+quiet": lambda sr, rng: np.concatenate(
        [speech(2.1, sr, MALE, rng, -18.0), speech(1.93, sr, FEMALE, rng, -36.0)]
    ),
    "white noise": lambda sr, rng: (0.05 * rng.standard_normal(int(4.05 * sr))).astype(np.float32),
    "pink noise": lambda sr, rng: room_tone(3.33, sr, -30.0, rng),
    "sine 50 Hz": lambda sr, rng: tone(-20.0, 2.57, sr, 50.0),
    "sine 997 Hz": lambda sr, rng: tone(-20.0, 2.57, sr),
    "sine 0.45 fs": lambda sr, rng: tone(-20.0, 2.57, sr, 0.45 * sr),
    "0.40 s": lambda sr, rng: speech(0.4, sr, MALE, rng, -22.0),
    "0.47 s": lambda sr, rng: speech(0.47, sr, MALE, rng, -22.0),
    "0.58 s": lambda sr, rng: speech(0.58, sr, FEMALE, rng, -22.0),
    "sparse bursts": lambda sr, rng: _sparse(sr, rng),
    "digital silence between turns": lambda sr, rng: np.concatenate(
        [
            speech(1.2, sr, MALE, rng, -20.0),
            np.zeros(4 * sr, np.float32),
            speech(0.9, sr, MALE, rng),
        ]
    ),
}


def _sparse(rate: int, rng: np.random.Generator) -> np.ndarray:
    x = room_tone(9.0, rate, -95.0, rng)
    for k in range(3):
        burst = speech(0.25, rate, FEMALE, rng, -25.0)
        x[int((1 + 3 * k) * rate) :][: len(burst)] += burst
    return x


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("rate", RATES)
def test_agrees_with_pyloudnorm(rate: int, kind: str) -> None:
    x = KINDS[kind](rate, np.random.default_rng(rate))
    got = bs1770.measure(x, rate)
    assert got.method == "integrated"
    assert abs(got.lufs - reference(x, rate)) <= TOL_LU
    assert bs1770.integrated_lufs(x, rate) == got.lufs


@pytest.mark.parametrize("rate", [11025, 48000])
def test_long_signal_filtered_in_chunks_agrees(rate: int) -> None:
    """Longer than one filtering chunk and cut into chains: neither changes the numbers."""
    rng = np.random.default_rng(7)
    x = np.concatenate(
        [speech(9.0, rate, MALE, rng, -20.0), speech(17.45, rate, FEMALE, rng, -30.0)]
    )
    assert len(x) > bs1770.FILTER_CHUNK_SAMPLES  # two chunks at least
    assert abs(bs1770.integrated_lufs(x, rate) - reference(x, rate)) <= TOL_LU
    energy = bs1770.k_weighted_energy(x, rate)
    y = x.astype(np.float64)
    for stage in _stages(rate):
        y = stage.apply_filter(y)
    assert energy.total == pytest.approx(float(np.dot(y, y)), rel=1e-9)
    assert len(energy.hops) == 10 * len(x) // rate


@pytest.mark.parametrize("rate", RATES)
def test_chained_hop_energies_are_the_unbroken_recursions(rate: int) -> None:
    """Each hop's energy from the chains (each started from a zero state 0.3 s early) is the
    one unbroken float64 recursion's (scipy's ``sosfilt`` over the whole signal, the guard tone
    added), to float64 roundings at the signal's scale: within 1e-13 of the loudest hop's
    energy (a near-silent hop's own is ~1e-19 of it), and within 1e-11 relative on every hop
    within 60 dB of the loudest, on speech, on speech over a quiet room tone, and on a tone
    whose level drops 60 dB at a chain boundary."""
    rng = np.random.default_rng(12)
    n = 30 * rate  # 300 hops: 16 chains
    plan = bs1770._k_plan(10 * n // rate, rate, bs1770._grid(rate).period)
    assert len(plan[0]) == bs1770.K_CHAINS
    t = np.arange(n) / rate
    jump = np.where(np.arange(n) < bs1770.hop_bounds(int(plan[0][3]), rate)[-1], 1.0, 1e-3)
    signals = [
        speech(30.0, rate, MALE, rng, -20.0)[:n],
        (speech(30.0, rate, FEMALE, rng, -25.0)[:n] + room_tone(30.0, rate, -60.0, rng)[:n]),
        (0.3 * np.sin(2 * np.pi * 997.0 * t) * jump),
    ]
    for x in signals:
        for dtype in (np.float32, np.float64):
            xd = np.ascontiguousarray(x[:n], dtype=dtype)
            guard = np.array([bs1770.DENORMAL_GUARD, -bs1770.DENORMAL_GUARD], dtype=dtype)
            y = sosfilt(bs1770.k_weighting_sos(rate), bs1770._guarded(xd, 0, n, guard))
            bounds = bs1770.hop_bounds(10 * n // rate, rate)
            want = np.array([np.dot(y[a:b], y[a:b]) for a, b in itertools.pairwise(bounds)])
            got = bs1770.k_weighted_energy(xd, rate).hops
            assert got.shape == want.shape
            off = np.abs(got - want)
            assert off.max() <= 1e-13 * want.max(), (rate, dtype)
            loud = want >= 1e-6 * want.max()
            assert np.max(off[loud] / want[loud]) < 1e-11, (rate, dtype)


@pytest.mark.parametrize("rate", RATES)
def test_trailing_partial_block_follows_pyloudnorm(rate: int) -> None:
    """Strict BS.1770 counts complete 400 ms blocks only; pyloudnorm (the reference meter)
    rounds the block count, adding a partial trailing block once >= 50 ms of a hop is left.
    The module follows pyloudnorm on every length around that edge."""
    rng = np.random.default_rng(3)
    x = np.concatenate([speech(1.0, rate, MALE, rng, -40.0), speech(0.6, rate, FEMALE, rng, -15.0)])
    end = interval(int(1.2 * rate), rate)  # 1.2 s: nine complete blocks
    base = bs1770.integrated_lufs(x[:end], rate)
    got = {}
    for extra_ms in (1, 40, 49, 51, 60, 99):
        y = x[: end + extra_ms * rate // 1000]
        got[extra_ms] = bs1770.integrated_lufs(y, rate)
        assert abs(got[extra_ms] - reference(y, rate)) <= TOL_LU, extra_ms
    assert got[1] == got[40] == got[49] == base  # under 50 ms: the nine complete blocks
    assert abs(got[60] - base) > 0.1  # a loud last 60 ms now counts, as in pyloudnorm


@pytest.mark.parametrize("rate", [8000, 22050, 48000])
def test_fallback_is_the_ungated_mean_square(rate: int) -> None:
    rng = np.random.default_rng(5)
    short = speech(0.3, rate, MALE, rng, -22.0)  # no complete block
    faint = room_tone(3.0, rate, -85.0, rng)  # every block under -70 LUFS
    for x in (short, faint):
        got = bs1770.measure(x, rate)
        assert got.method == "ungated"
        assert abs(got.lufs - reference_ungated(x, rate)) <= TOL_LU
        assert ld.measure(x, rate) == got
    with pytest.raises(ValueError, match="400 ms block"):
        bs1770.integrated_lufs(short, rate)
    assert bs1770.integrated_lufs(faint, rate) == -math.inf
    silent = bs1770.measure(np.zeros(rate, np.float32), rate)
    assert silent == bs1770.Loudness(bs1770.SILENCE_LUFS, "silent")
    assert bs1770.measure(np.zeros(0, np.float32), rate).method == "silent"
    below_floor = bs1770.measure(
        np.full(100, 1e-9, np.float32), rate
    )  # -180 dB: no more than silence
    assert below_floor == bs1770.Loudness(bs1770.SILENCE_LUFS, "silent")


def model_lufs(hop_lufs: list[float]) -> float:
    """BS.1770 by its definition on stationary hops of known loudness: blocks of four hops,
    -70 LUFS absolute gate, relative gate 10 LU under the mean of the absolutely gated blocks."""
    ms = [10 ** ((v + 0.691) / 10) for v in hop_lufs]
    blocks = [sum(ms[j : j + 4]) / 4 for j in range(len(ms) - 3)]
    gated = [b for b in blocks if -0.691 + 10 * math.log10(b) > -70]
    rel = -0.691 + 10 * math.log10(sum(gated) / len(gated)) - 10
    kept = [b for b in gated if -0.691 + 10 * math.log10(b) > rel]
    return -0.691 + 10 * math.log10(sum(kept) / len(kept))


@pytest.mark.parametrize("rate", [16000, 48000])
def test_relative_gate_drops_blocks_more_than_10_lu_down(rate: int) -> None:
    """60 s at -20 LUFS then 10 s at -20 - q: the quiet part counts at q = 9 LU, not at 11 LU.

    The mean of the blocks is ~ (60 + 10 * 10^(-q/10)) / 70 of the loud part's, so the relative
    gate sits 10.58 LU (q = 9) or 10.61 LU (q = 11) under the loud part.
    """
    loud = tone(-20.0, 60.0, rate)
    for q in (9.0, 11.0):
        x = np.concatenate([loud, tone(-20.0 - q, 10.0, rate)])
        expected = model_lufs([-20.0] * 600 + [-20.0 - q] * 100)
        assert bs1770.integrated_lufs(x, rate) == pytest.approx(expected, abs=0.002)
        assert abs(bs1770.integrated_lufs(x, rate) - reference(x, rate)) <= TOL_LU
    everything = 10 * math.log10((60 + 10 * 10**-0.9) / 70)
    assert model_lufs([-20.0] * 600 + [-29.0] * 100) == pytest.approx(-20 + everything, abs=0.01)
    assert model_lufs([-20.0] * 600 + [-31.0] * 100) == pytest.approx(-20.0, abs=0.011)


def test_absolute_gate_alone_decides() -> None:
    """Blocks 5 LU apart around -70 LUFS: the relative gate keeps both, the absolute one drops
    the -73 LUFS half (ungated, the two halves would read -69.2)."""
    rate = 16000
    x = np.concatenate([tone(-68.0, 20.0, rate), tone(-73.0, 20.0, rate)])
    expected = model_lufs([-68.0] * 200 + [-73.0] * 200)
    assert expected == pytest.approx(-68.0, abs=0.02)
    assert bs1770.measure(x, rate).lufs == pytest.approx(expected, abs=0.002)
    assert abs(bs1770.measure(x, rate).lufs - reference(x, rate)) <= TOL_LU


def test_ebu_tech_3341_gating_cases_in_mono() -> None:
    """EBU Tech 3341 cases 3 and 5, one channel: a 997 Hz tone at -X dBFS reads -X - 3.01 LUFS.

    Case 3: -36 / -23 / -36 dBFS for 10 / 60 / 10 s reads -23 (stereo): the -36 parts are
    under the relative gate. Case 5: -26 / -20 / -26 dBFS for 20 / 20.1 / 20 s reads -23: every
    block passes, energies (not dB) are averaged. Meters must be within 0.1 LU.
    """
    rate = 48000

    def dbfs(level: float, seconds: float) -> np.ndarray:
        t = np.arange(int(seconds * rate)) / rate
        return (10 ** (level / 20) * np.sin(2 * np.pi * 997 * t)).astype(np.float32)

    case3 = np.concatenate([dbfs(-36, 10), dbfs(-23, 60), dbfs(-36, 10)])
    case5 = np.concatenate([dbfs(-26, 20), dbfs(-20, 20.1), dbfs(-26, 20)])
    for x in (case3, case5):
        assert bs1770.integrated_lufs(x, rate) == pytest.approx(-23.0 - 3.01, abs=0.1)
    assert bs1770.integrated_lufs(dbfs(0, 5), rate) == pytest.approx(-3.01, abs=0.1)


def test_k_weighting_against_the_recommendation_tables() -> None:
    """At 48 kHz the shelf is within 0.003 dB of BS.1770 Table 1; the cookbook high pass has
    unity passband gain where Table 2's (b = [1, -2, 1]) has ~+0.043 dB: the documented offset."""
    table1 = [
        1.53512485958697,
        -2.69169618940638,
        1.19839281085285,
        1,
        -1.69065929318241,
        0.73248077421585,
    ]
    table2 = [1.0, -2.0, 1.0, 1, -1.99004745483398, 0.99007225036621]
    freqs = np.geomspace(20.0, 20000.0, 400)
    sos = bs1770.k_weighting_sos(48000)

    def db(s: np.ndarray) -> np.ndarray:
        return 20 * np.log10(np.abs(sosfreqz(s, freqs, fs=48000)[1]))

    assert np.max(np.abs(db(sos[:1]) - db(np.array([table1])))) < 0.003
    offset = db(np.array([table1, table2])) - db(sos)
    assert np.all((offset[freqs >= 500] > 0.040) & (offset[freqs >= 500] < 0.044))
    assert np.max(np.abs(offset)) < 0.05


@pytest.mark.parametrize("rate", [8000, 48000])
def test_digital_silence_keeps_the_filter_out_of_subnormals(rate: int) -> None:
    """Zeros after a sound would let the filter state decay into subnormal floats (tens of times
    slower arithmetic); the guard keeps every output sample normal or exactly zero."""
    rng = np.random.default_rng(11)
    x = np.concatenate([speech(0.5, rate, FEMALE, rng, -20.0), np.zeros(30 * rate, np.float32)])
    for dtype in (np.float32, np.float64):
        xd = x.astype(dtype)
        guard = np.array([bs1770.DENORMAL_GUARD, -bs1770.DENORMAL_GUARD], dtype=dtype)
        y = sosfilt(bs1770.k_weighting_sos(rate), bs1770._guarded(xd, 0, len(x), guard))
        assert len(y) == len(x)
        assert not np.any((y != 0) & (np.abs(y) < np.finfo(np.float64).tiny))
    assert abs(bs1770.integrated_lufs(x, rate) - reference(x, rate)) <= TOL_LU


def test_rejects_what_it_cannot_measure() -> None:
    with pytest.raises(ValueError, match="one channel"):
        bs1770.measure(np.zeros((16000, 2), np.float32) + 0.1, 16000)
    with pytest.raises(ValueError, match="sample rate"):
        bs1770.measure(np.ones(100, np.float32), 0)


@pytest.mark.parametrize("sr", [16000, 24000])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_true_peak_matches_the_full_oversampling(sr: int, seed: int) -> None:
    """Oversampling only the blocks that can hold the true peak gives the full value."""
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
