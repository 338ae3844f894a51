"""The edge measure's compiled loops (:mod:`duetflow.audio.edge_kernels`) give the bits of the
scipy / numpy / Python path they replace: compared as integers, not within a tolerance, on random,
tied, digitally silent and edge-case inputs, and end to end (envelopes, floors, gaps) with the
kernels and without them (``kernels.edge_kernels`` returning None, as where numba is missing)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt
import pytest
from scipy.ndimage import median_filter

from duetflow.audio import calibration, edges, kernels

SR = 16_000


def noise(kind: str, n: int, level_db: float, rng: np.random.Generator) -> npt.NDArray[np.float32]:
    """A floor of ``kind`` (white, pink, brown) at ``level_db`` dBFS (the calibration's own)."""
    x = calibration._floor_noise(kind, n, SR, level_db, rng)
    return np.asarray(x, dtype=np.float32)


compiled = pytest.mark.skipif(
    kernels.edge_kernels() is None, reason="numba missing: the fallback is the reference itself"
)


@pytest.fixture
def without_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernels, "edge_kernels", lambda: None)


def _bits(a: npt.NDArray[np.float64]) -> npt.NDArray[np.uint64]:
    return np.ascontiguousarray(a, dtype=np.float64).view(np.uint64)


def _levels(rng: np.random.Generator) -> Iterator[npt.NDArray[np.float64]]:
    for n in (*range(1, 45), 100, 1000, 18_000):
        yield rng.normal(-50.0, 6.0, n)
        yield np.round(rng.normal(-50.0, 2.0, n))  # many ties
        yield np.where(rng.random(n) < 0.3, -200.0, rng.normal(-60.0, 10.0, n))
        yield np.repeat(rng.normal(-40.0, 8.0, n), 7)[:n]  # runs of equal values
    yield np.full(500, -200.0)
    yield np.concatenate([np.full(300, -200.0), rng.normal(-30, 3, 300), np.full(300, -90.0)])
    yield np.linspace(-90.0, 0.0, 777)  # monotone: every step moves the window's extreme
    yield np.linspace(0.0, -90.0, 777)


@compiled
def test_the_running_median_is_scipys_median_filter_bit_for_bit() -> None:
    rng = np.random.default_rng(30)
    for x in _levels(rng):
        got = edges.running_median(x)
        want = median_filter(x, size=edges._FLICKER_FRAMES, mode="nearest")
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(_bits(got), _bits(want)), len(x)
        # a strided view and a float32 input go the same way
        assert np.array_equal(
            edges.running_median(x[::2]), median_filter(x[::2], size=21, mode="nearest")
        )


def test_a_nan_leaves_the_median_to_scipy() -> None:
    x = np.random.default_rng(1).normal(-50.0, 5.0, 200)
    x[57] = np.nan
    got = edges.running_median(x)
    want = median_filter(x, size=edges._FLICKER_FRAMES, mode="nearest")
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    assert np.array_equal(_bits(got[ok]), _bits(want[ok]))


def test_the_quiet_walk_is_the_quiet_run_both_ways() -> None:
    rng = np.random.default_rng(7)
    for trial in range(4000):
        n = int(rng.integers(1, 300))
        db = np.where(rng.random(n) < rng.random(), -60.0, -40.0) + rng.normal(0, 1, n)
        if trial % 5 == 0:
            db[rng.random(n) < 0.1] = np.nan  # never under a level: breaks a run
        m = int(rng.integers(1, 6))
        o = int(rng.integers(0, n))
        back = db[: o + 1][::-1]
        fwd = db[o:]
        assert edges._quiet_walk(db, o, o + 1, -1, -50.0, m) == edges._quiet_run(back, -50.0, m)
        assert edges._quiet_walk(db, o, n - o, 1, -50.0, m) == edges._quiet_run(fwd, -50.0, m)


def _signals() -> Iterator[tuple[str, npt.NDArray[np.float32]]]:
    rng = np.random.default_rng(3)
    n = SR * 3
    t = np.arange(n) / SR
    speech = (0.3 * np.sin(2 * np.pi * 220 * t) * (t % 1.0 < 0.55)).astype(np.float32)
    yield "speech over pink", speech + noise("pink", n, -55.0, rng)
    yield "speech over brown", speech + noise("brown", n, -45.0, rng)
    silent = speech.copy()
    silent[(t % 1.0) >= 0.55] = 0.0  # digital silence between the turns
    yield "speech and digital silence", silent
    yield "all digital silence", np.zeros(n, np.float32)
    rumble = (0.9 * np.sin(2 * np.pi * 40 * t)).astype(np.float32)
    lead = np.concatenate([rumble[: SR // 2], np.zeros(SR // 3, np.float32), speech[: 2 * SR]])
    yield "loud low rumble, then silence, then speech", lead
    clipped = np.clip(speech * 8.0, -1.0, 1.0) + noise("white", n, -60.0, rng)
    yield "clipped speech", clipped.astype(np.float32)
    yield "short", speech[:37]


def _floors(an: edges.Analysis, rng: np.random.Generator) -> list[object]:
    n = len(an.edge)
    out: list[object] = [edges.estimate_floor(an)]
    for _ in range(40):
        a = int(rng.integers(0, max(1, n)))
        b = int(rng.integers(a, n + 1)) if n else 0
        mask = np.zeros(n, dtype=bool)
        mask[a:b] = True
        whole = edges.estimate_floor(an, mask)
        assert edges._floor_in(an, a, b) == whole  # the stretch without a mask: the same floor
        out.append(whole)
        out.append(edges._quietest(an, a, b, 16))
    return out


def _measure(x: npt.NDArray[np.float32]) -> list[object]:
    an = edges.analyse(x, SR)
    got: list[object] = [an.edge.db.tobytes(), an.level.db.tobytes(), an.edge.blocks.tobytes()]
    got.append(an.edge_median.tobytes())
    got += _floors(an, np.random.default_rng(11))
    turns = [("A", 0.0, 0.56), ("B", 1.0, 1.56), ("A", 2.0, 2.56)]
    got.append(edges.change_gaps(x, SR, turns))
    got.append(edges.change_gaps(x, SR, turns, floor_db=-60.0))
    local = edges.analyse_around(x, SR, 0.9 * SR, 2.6 * SR)
    got += [local.edge.db.tobytes(), local.level.db.tobytes()]
    return got


@compiled
@pytest.mark.parametrize("name", [name for name, _ in _signals()])
def test_envelopes_floors_and_gaps_are_the_same_without_the_kernels(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    x = dict(_signals())[name]
    fast = _measure(x)
    monkeypatch.setattr(kernels, "edge_kernels", lambda: None)
    slow = _measure(x)
    assert fast == slow


def test_the_envelope_without_kernels_is_the_running_sum_definition(without_kernels: None) -> None:
    # the fallback path on its own: a window is the mean of its own four hop blocks, a window
    # of four all-zero blocks is digital silence
    x = np.concatenate([np.zeros(SR // 4, np.float32), np.full(SR // 4, 0.5, np.float32)])
    an = edges.analyse(x, SR)
    p = an.level.blocks
    w = (((p[:-3] + p[1:-2]) + p[2:-1]) + p[3:]) / 4
    want = np.where(w > 0, 10.0 * np.log10(np.where(w > 0, w, 1.0)), edges._SILENT_DB)
    assert np.array_equal(an.level.db, np.maximum(want, edges._SILENT_DB))


@compiled
def test_the_longest_zero_run_is_the_numpy_count(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(4)
    cases = [np.zeros(1), np.ones(5), np.array([0.0, -0.0, 1.0, 0.0]), np.zeros(1000)]
    for _ in range(500):
        n = int(rng.integers(1, 400))
        x = rng.standard_normal(n)
        x[rng.random(n) < rng.random()] = 0.0
        x[rng.random(n) < 0.05] = -0.0
        cases += [x, x.astype(np.float32)]
    got = [edges.longest_zero_run(x) for x in cases]
    monkeypatch.setattr(kernels, "edge_kernels", lambda: None)
    assert got == [edges.longest_zero_run(x) for x in cases]


def _floor_bits(f: object) -> object:
    """A floor as the bit patterns of its numbers (``==`` on floats hides a -0.0)."""
    if not isinstance(f, edges.Floor):
        return f
    return (f.db.hex(), f.hp_db.hex(), f.spread_db.hex(), f.digital)


@compiled
def test_the_selection_is_numpys_partition() -> None:
    ek = kernels.edge_kernels()
    rng = np.random.default_rng(5)
    for x in _levels(rng):
        for k in {0, len(x) // 2, (3 * len(x)) // 4, len(x) - 1, int(0.99 * (len(x) - 1))}:
            a = x.copy()
            got = ek.kth(a, len(a), k)
            assert float(got).hex() == float(np.partition(x, k)[k]).hex(), (len(x), k)
            assert np.array_equal(np.sort(a), np.sort(x))  # a permutation of the values
            for q in (50, 75, 99):  # the rank of edges.quantiles
                assert ek._rank(len(x), float(q)) == min(
                    len(x) - 1, max(0, int(q / 100.0 * (len(x) - 1)))
                )


def _analyses(rng: np.random.Generator) -> Iterator[edges.Analysis]:
    for _, x in _signals():
        yield edges.analyse(x, SR)
    # envelopes built directly: ties, digital frames in places, runs of equal values
    for n in (1, 3, 4, 5, 21, 22, 60, 400, 5000, 18_000):
        for lv in [*list(_levels(rng))[-8:], rng.normal(-55.0, 4.0, n)]:
            lv = np.resize(lv, n)
            hv = lv - np.abs(rng.normal(3.0, 2.0, n))
            hv[rng.random(n) < 0.1] = -61.0  # ties in the edge envelope
            env = edges.Envelope(hv.copy(), 40, SR)
            yield edges.Analysis(env, edges.Envelope(lv.copy(), 40, SR))
    # frames exactly at the trimmed level's upper reach (q50 + 4.5 * 0.05): kept, not events
    for n in (30, 300):
        lv = np.full(n, -50.0)
        lv[::5] = -50.0 + 4.5 * 0.05
        lv[::7] = -20.0
        hv = lv - 2.0
        hv[::3] = -52.0 + 4.5 * 0.05
        yield edges.Analysis(edges.Envelope(hv, 40, SR), edges.Envelope(lv, 40, SR))


@compiled
def test_floors_of_stretches_and_masks_are_the_same_without_the_kernels(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the compiled floor (selection, quantiles, flicker against the running median at the
    # frames used) against the numpy path, on fresh analyses (no cached whole median) and on
    # stretches, sparse and dense masks, runs, digital shares at and around a fifth
    rng = np.random.default_rng(8)
    cases = []
    for an in _analyses(rng):
        n = len(an.edge)
        for _ in range(12):
            a = int(rng.integers(0, n + 1))
            b = int(rng.integers(a, n + 1))
            mask = np.zeros(n, dtype=bool)
            kind = int(rng.integers(0, 4))
            if kind == 0:
                mask[a:b] = True
            elif kind == 1:
                mask[a:b] = rng.random(b - a) < rng.random()
            elif kind == 2:  # runs
                mask[a:b] = (np.arange(b - a) // int(rng.integers(1, 30))) % 2 == 0
            else:
                mask = rng.random(n) < 0.5
            cases.append((an, a, b, mask, int(rng.integers(4, 40))))

    def measure() -> list[object]:
        out: list[object] = []
        for an, a, b, mask, width in cases:
            fresh = edges.Analysis(an.edge, an.level)  # no whole median cached
            out.append(_floor_bits(edges._floor_in(fresh, a, b)))
            out.append(_floor_bits(edges.estimate_floor(fresh, mask)))
            out.append(_floor_bits(edges._quietest(fresh, a, b, width)))
        return out

    fast = measure()
    monkeypatch.setattr(kernels, "edge_kernels", lambda: None)
    slow = measure()
    assert len(fast) == 3 * len(cases) > 1000
    assert sum(isinstance(f, tuple) and not f[3] for f in fast) > 500  # measured floors
    assert fast == slow


@compiled
def test_a_nan_leaves_the_floor_to_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(9)
    lv = rng.normal(-55.0, 3.0, 300)
    hv = lv - 3.0
    hv[150] = np.nan  # a used frame of (100, 200)
    hv[40] = np.nan  # in the running median's reach of (45, 70) only
    lv[230] = np.nan  # a used frame's level, (200, 260)
    an = edges.Analysis(edges.Envelope(hv, 40, SR), edges.Envelope(lv, 40, SR))
    ek = kernels.edge_kernels()
    res = np.empty(4)
    spans = ((100, 200), (45, 70), (200, 260))
    for a, b in spans:
        status, _ = ek.floor_stats(lv, hv, a, b, edges._NO_MASK, False, 21, -90.0, 0.2, 4, res)
        assert status == -1
    status, _ = ek.floor_stats(lv, hv, 60, 100, edges._NO_MASK, False, 21, -90.0, 0.2, 4, res)
    assert status == 2  # clear of every NaN's reach
    got = [repr(_floor_bits(edges._floor_in(an, a, b))) for a, b in spans]
    monkeypatch.setattr(kernels, "edge_kernels", lambda: None)
    fresh = edges.Analysis(an.edge, an.level)
    assert got == [repr(_floor_bits(edges._floor_in(fresh, a, b))) for a, b in spans]


@compiled
def test_speech_extents_are_the_same_without_the_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    # the core frames (audible frames' 98th percentile, the core level, the first and last
    # core frame) in one compiled pass against the numpy path: measured signals and built
    # envelopes with digital frames, NaN, blocked frames, ties at the core level
    rng = np.random.default_rng(12)
    cases = []
    for an in _analyses(rng):
        n = len(an.edge)
        hop = an.edge.hop
        lv = an.level.db
        floors = [edges.DIGITAL_FLOOR, edges.Floor(-60.0, -63.0, 2.0), edges.Floor(-45.0, -47.0)]
        for _ in range(10):
            a = float(rng.uniform(-50, n * hop))
            b = a + float(rng.uniform(0, n * hop / 2))
            blocked = rng.random(n) < rng.random() * 0.3 if rng.random() < 0.3 else None
            f = floors[int(rng.integers(0, 3))]
            target = None if rng.random() < 0.5 else float(rng.uniform(-80, -40))
            cases.append((an, f, (a, b), blocked, target))
        if n > 40:  # a frame exactly at the core level of a loud peak, and a NaN frame
            db = lv.copy()
            db[n // 2] = np.nan
            db[n // 3] = np.max(db[np.isfinite(db)]) - edges.CORE_BELOW_PEAK_DB
            odd = edges.Analysis(edges.Envelope(db, hop, SR), edges.Envelope(db, hop, SR))
            cases.append((odd, floors[1], (0.0, n * hop), None, None))

    # frames exactly at the core level (the peak less CORE_BELOW_PEAK_DB) are core frames
    db = np.array(
        [-70.0] * 20 + [-45.0] + [-70.0] * 9 + [-20.0] * 50 + [-70.0] * 9 + [-45.0] + [-70.0] * 20
    )
    tie = edges.Analysis(edges.Envelope(db, 40, SR), edges.Envelope(db, 40, SR))
    cases.append((tie, floors[1], (0.0, len(db) * 40.0), None, None))

    def measure() -> list[str]:
        out = []
        for an, f, hint, blocked, target in cases:
            e = edges.speech_extent(
                an, f, hint, blocked=blocked, onset_floor_db=target, offset_floor_db=target
            )
            out.append(
                "None"
                if e is None
                else repr([x.hex() for x in (e.start, e.end, e.peak_db, e.core_db)])
            )
        return out

    fast = measure()
    monkeypatch.setattr(kernels, "edge_kernels", lambda: None)
    slow = measure()
    assert sum(x != "None" for x in fast) > 300 and sum(x == "None" for x in fast) > 50
    assert fast == slow


@compiled
def test_a_pauses_step_and_dip_are_the_same_without_the_kernels(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the medians of a pause's halves (edges._median) and its quietest 20 ms (the minimum of
    # windowed sums of hop blocks, inside measure_gap) against numpy's, NaN included
    rng = np.random.default_rng(13)
    arrays = list(_levels(rng))
    nan = rng.normal(-50.0, 3.0, 40)
    nan[7] = np.nan
    arrays.append(nan)
    ek = kernels.edge_kernels()
    got_med = [float(edges._median(v)).hex() for v in arrays]
    blocks = [np.power(10.0, v / 10.0) for v in arrays] + [np.abs(nan)]
    got_min = [float(ek.window_min(p, w)).hex() for p in blocks for w in (1, 2, 8) if len(p) >= w]
    monkeypatch.setattr(kernels, "edge_kernels", lambda: None)
    assert got_med == [float(edges._median(v)).hex() for v in arrays]
    want_min = []
    for p in blocks:
        c = np.concatenate(([0.0], np.cumsum(p)))
        want_min += [float(np.min(c[w:] - c[:-w])).hex() for w in (1, 2, 8) if len(p) >= w]
    assert got_min == want_min


@compiled
def test_the_selection_leaves_the_values_partitioned() -> None:
    # floor_stats takes the 75th percentile from the part after the median's rank
    ek = kernels.edge_kernels()
    rng = np.random.default_rng(6)
    for x in _levels(rng):
        n = len(x)
        for k in {0, n // 2, n - 1}:
            a = x.copy()
            v = ek.kth(a, n, k)
            assert np.all(a[:k] <= v) and np.all(a[k:] >= v) and a[k] == v
