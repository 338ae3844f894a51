"""The edge walk compiled in one call (:mod:`duetflow.audio.walk_kernels`) gives the bits of the
Python path of :func:`duetflow.audio.edges.speech_extent` it replaces: compared as bit
patterns, not within a tolerance, on measured signals and built envelopes with steep edges,
digital blocks, blocked frames, NaN and ties, with the kernels and without them
(``kernels.edge_kernels`` returning None, as where numba is missing)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from duetflow.audio import edges, kernels

SR = 16_000

compiled = pytest.mark.skipif(
    edges.walk_kernels() is None, reason="numba missing: the fallback is the reference itself"
)


@compiled
def test_the_block_level_is_pythons() -> None:
    # 10 * log10 of a block's power: the C library's log10 in both
    from duetflow.audio import walk_kernels as wk

    rng = np.random.default_rng(21)
    values = np.concatenate(
        [10.0 ** rng.uniform(-25, 1, 20_000), [0.0, 1e-300, 5e-324, 1.0, 10.0, 1e-7]]
    )
    for v in values.tolist():
        assert wk._db(v).hex() == edges._db(v).hex()


def _blocks(rng: np.random.Generator, n: int) -> np.ndarray:
    p = 10.0 ** (rng.normal(-6.0, 0.3, n))
    kind = int(rng.integers(0, 4))
    if kind == 0:  # a steep onset / offset
        at = int(rng.integers(0, n + 1))
        p[at:] *= 10.0 ** rng.uniform(1, 4)
    elif kind == 1:  # digital silence, then sound
        at = int(rng.integers(0, n + 1))
        p[:at] = 0.0
        p[at : at + 1] *= rng.uniform(0, 1)
    elif kind == 2:  # sound, then digital silence
        at = int(rng.integers(0, n + 1))
        p[at:] = 0.0
    else:  # ties
        p = np.round(p * 1e6) / 1e6
    return p


@compiled
def test_the_steep_edge_is_sharpen_bit_for_bit() -> None:
    from duetflow.audio import walk_kernels as wk

    rng = np.random.default_rng(22)
    checked = moved = 0
    for _ in range(6000):
        n = int(rng.integers(0, 60))
        p = _blocks(rng, n)
        start = int(rng.integers(0, 3)) * 40
        env = edges.Envelope(np.zeros(max(0, n - 3)), 40, SR, start, p)
        edge = float(start + rng.uniform(-2, n + 2) * 40)
        edge_db = float(rng.uniform(-75, -45))
        rising = bool(rng.random() < 0.5)
        want = edges._sharpen(env, edge, edge_db, rising=rising)
        got = wk.sharpen(
            p, start, 40, edge, edge_db, edges._power(edge_db + edges._BLOCK_GUARD_DB),
            edges._power(edge_db), edges._RING_HOPS, rising,
        )  # fmt: skip
        assert float(got).hex() == float(want).hex()
        checked += 1
        moved += want != edge
    assert moved > 300, (checked, moved)


def _extent_bits(e: edges.Extent | None) -> object:
    if e is None:
        return None
    return tuple(float(v).hex() for v in (e.start, e.end, e.peak_db, e.core_db))


def _cases(rng: np.random.Generator) -> list[tuple[object, ...]]:
    cases: list[tuple[object, ...]] = []
    t = np.arange(3 * SR) / SR
    for shape in range(6):
        x = 0.3 * np.sin(2 * np.pi * 220 * t) * ((t % 1.0) < 0.55)
        if shape % 2:  # a soft fade-out instead of a steep end
            x *= np.where((t % 1.0) < 0.45, 1.0, np.exp(-((t % 1.0) - 0.45) * 60))
        noise = rng.normal(0, 10 ** (-55 / 20), len(t)) if shape < 4 else np.zeros(len(t))
        x = (x + noise).astype(np.float32)
        an = edges.analyse(x, SR)
        floors = [edges.DIGITAL_FLOOR, edges.Floor(-58.0, -61.0, 2.0), edges.Floor(-70, -72.0)]
        n = len(an.edge)
        for _ in range(60):
            a = float(rng.uniform(-0.2, 3.0)) * SR
            hint = (a, a + float(rng.uniform(0.0, 1.2)) * SR)
            bounds = None
            if rng.random() < 0.7:
                lo = hint[0] - float(rng.uniform(0, 0.5)) * SR
                bounds = (lo, hint[1] + float(rng.uniform(0, 0.5)) * SR)
                if rng.random() < 0.3:  # integer bounds stay integers where they hold
                    bounds = (int(bounds[0]), int(bounds[1]))
            blocked = rng.random(n) < 0.2 if rng.random() < 0.3 else None
            target = None if rng.random() < 0.5 else float(rng.uniform(-80, -50))
            f = floors[int(rng.integers(0, 3))]
            cases.append((an, f, hint, bounds, blocked, target))
    # NaN frames and exact ties at the core level
    db = np.array([-70.0] * 20 + [-45.0] + [-70.0] * 9 + [-20.0] * 50 + [-70.0] * 30)
    db[60] = np.nan
    tie = edges.Analysis(edges.Envelope(db, 40, SR), edges.Envelope(db, 40, SR))
    cases.append((tie, edges.Floor(-60.0, -63.0, 2.0), (0.0, 4000.0), None, None, None))
    return cases


@compiled
def test_speech_extents_are_the_python_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(23)
    cases = _cases(rng)

    def measure() -> list[object]:
        out: list[object] = []
        for an, f, hint, bounds, blocked, target in cases:
            e = edges.speech_extent(
                an, f, hint, bounds=bounds, blocked=blocked, onset_floor_db=target,
                offset_floor_db=None if target is None else target - 3.0,
            )  # fmt: skip
            out.append(_extent_bits(e))
            if e is not None:  # an integer bound that holds stays an integer
                out.append((isinstance(e.start, int), isinstance(e.end, int)))
        return out

    fast = measure()
    monkeypatch.setattr(kernels, "edge_kernels", lambda: None)
    slow = measure()
    assert sum(x is not None for x in fast) > 300
    assert fast == slow


def test_the_walk_falls_back_without_the_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernels, "edge_kernels", lambda: None)
    assert edges.walk_kernels() is None
    x = np.zeros(SR, np.float32)
    x[SR // 4 : SR // 2] = 0.3
    e = edges.speech_extent(edges.analyse(x, SR), edges.DIGITAL_FLOOR, (0.2 * SR, 0.6 * SR))
    assert e is not None and math.isclose(e.start, SR / 4, abs_tol=40)


@compiled
def test_the_peak_of_blocked_frames_is_core_frames_of_the_frames_as_read() -> None:
    # blocked frames read as digital silence without a copy: core_frames of np.where's copy
    from duetflow.audio import walk_kernels as wk

    ek = kernels.edge_kernels()
    rng = np.random.default_rng(24)
    for _ in range(3000):
        n = int(rng.integers(1, 1500))
        db = rng.normal(-40.0, 12.0, n)
        if rng.random() < 0.3:
            db = np.round(db)  # ties at the core level
        db[rng.random(n) < 0.1] = edges._SILENT_DB
        if rng.random() < 0.1:
            db[int(rng.integers(0, n))] = np.nan
        blocked = rng.random(n) < rng.random() * 0.5
        a = int(rng.integers(0, n))
        b = int(rng.integers(a, n + 1))
        base = float(rng.uniform(-70, -30))
        want, got = np.empty(4), np.empty(4)
        w = ek.core_frames(np.where(blocked, edges._SILENT_DB, db)[a:b], base, 25.0, -200.0, want)
        g = wk.peak_frames(db, blocked, True, a, b, base, 25.0, got)
        assert g == w
        if w == 1:
            assert got.tobytes() == want.tobytes()
        w = ek.core_frames(db[a:b], base, 25.0, -200.0, want)
        g = wk.peak_frames(db, edges._NO_MASK, False, a, b, base, 25.0, got)
        assert g == w
        if w == 1:
            assert got.tobytes() == want.tobytes()


@compiled
def test_a_pivot_above_the_peak_selects_from_every_frame() -> None:
    # the frames sampled for the pivot are the loudest: the peak lies under it
    from duetflow.audio import walk_kernels as wk

    ek = kernels.edge_kernels()
    n = 640
    db = np.full(n, -50.0) + np.linspace(0.0, 1.0, n)
    at = (np.arange(wk._SAMPLE) * n) // wk._SAMPLE
    db[at] = -10.0 + np.arange(wk._SAMPLE)
    want, got = np.empty(4), np.empty(4)
    assert ek.core_frames(db, -60.0, 25.0, -200.0, want) == 1
    assert wk.peak_frames(db, edges._NO_MASK, False, 0, n, -60.0, 25.0, got) == 1
    assert got.tobytes() == want.tobytes()
    assert want[0] < db[at[wk._SAMPLE_RANK]]  # the fallback was taken


def _gap_bits(g: edges.GapMeasure | None) -> object:
    if g is None:
        return None
    f = g.floor
    nums = (g.offset, g.onset, f.db, f.hp_db, f.spread_db, g.step_db, g.dip_db)
    return (*(float(v).hex() for v in nums), f.digital, g.zero_run)


@compiled
def test_gaps_are_the_python_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    # the pause's quietest floor, its step, dip and zero run in compiled calls against the
    # Python path: room tone, digital silence, zeros inside room tone, a NaN in the pause
    rng = np.random.default_rng(25)
    cases = []
    t = np.arange(4 * SR) / SR
    for shape in range(5):
        on = (t % 1.0) < 0.5 + 0.1 * rng.random()
        x = 0.3 * np.sin(2 * np.pi * 180 * t) * on
        if shape != 1:
            x = x + rng.normal(0, 10 ** (-55 / 20), len(t)) * (1.0 + (t > 2.0))  # a step
        if shape == 2:
            x[int(1.7 * SR) : int(1.75 * SR)] = 0.0  # zeros in a pause
        x = x.astype(np.float32)
        an = edges.analyse(x, SR)
        if shape == 3:
            lvdb = an.level.db.copy()
            lvdb[int(1.8 * SR / an.level.hop)] = np.nan
            an = edges.Analysis(an.edge, edges.Envelope(lvdb, an.level.hop, SR, 0, an.level.blocks))
        for k in range(3):
            a1 = (k + 0.5) * SR + float(rng.uniform(-400, 400))
            b0 = (k + 1.0) * SR + float(rng.uniform(-400, 400))
            prev, nxt = (k * SR + 100.0, a1), (b0, (k + 1.5) * SR)
            for floor, floor_db in ((None, None), (None, -55.0), (edges.DIGITAL_FLOOR, None)):
                cases.append((x, an, prev, nxt, floor, floor_db))

    def measure() -> list[object]:
        return [
            _gap_bits(edges.measure_gap(x, SR, p, q, analysis=an, floor=f, floor_db=fd))
            for x, an, p, q, f, fd in cases
        ]

    fast = measure()
    monkeypatch.setattr(kernels, "edge_kernels", lambda: None)
    slow = measure()
    assert sum(g is not None for g in fast) > 30
    assert fast == slow
