"""The analysis's one pass (:func:`duetflow.audio.edges._hop_powers`, compiled as
:func:`duetflow.audio.edge_kernels.hop_powers`): the 100 Hz high-pass with a float64 state, cut
into chains side by side, and both envelopes' hop powers summed in float64.

Held against an independent reference (scipy's float64 ``lfilter`` of the whole signal in one
piece, the hop blocks' squares summed by numpy's own reduction): frame levels within
:data:`TOL_DB`, digital silence exactly :data:`edges._SILENT_DB`; and the compiled pass against
the scipy/numpy fallback bit for bit (the same chains, the same operations)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt
import pytest
from scipy.signal import lfilter

from duetflow.audio import edges, kernels

SR = 16_000
#: Frame levels agree with the one-piece float64 reference this closely (dB): the chains' cuts
#: and the sums' order move a level by float64 roundings (~1e-13 dB measured).
TOL_DB = 1e-9

compiled = pytest.mark.skipif(
    kernels.edge_kernels() is None, reason="numba missing: the fallback is the path itself"
)


def _reference(x: npt.NDArray[np.float32], sr: int, start: int, stop: int) -> edges.Analysis:
    """The analysis by its definition, in one piece: the high-pass (float32 coefficients)
    of the whole signal from its start in float64, hop blocks' mean squares in float64."""
    b, a = edges._highpass_ba(sr)
    hop = edges.hop_samples(sr)
    count = (stop - start) // hop
    wide = x.astype(np.float64)
    hp = lfilter(b.astype(np.float64), a.astype(np.float64), wide[:stop])

    def env(y: npt.NDArray[np.float64]) -> edges.Envelope:
        p = np.mean(y[start : start + count * hop].reshape(count, hop) ** 2, axis=1)
        if count < edges.WINDOW_HOPS:
            return edges.Envelope(np.zeros(0), hop, sr, start, np.zeros(0))
        w = np.convolve(p, np.ones(edges.WINDOW_HOPS), "valid") / edges.WINDOW_HOPS
        db = np.full(len(w), edges._SILENT_DB)
        # a window of digital zeros has no power at all (the convolution's roundings may leave
        # a trace of a neighbour's: a window holds power where any of its blocks does)
        live = np.convolve(p > 0, np.ones(edges.WINDOW_HOPS, bool), "valid")
        db[live] = 10.0 * np.log10(np.maximum(w[live], 1e-300))
        return edges.Envelope(np.maximum(db, edges._SILENT_DB), hop, sr, start, p)

    return edges.Analysis(env(hp), env(wide))


def _close(got: edges.Analysis, want: edges.Analysis, what: str) -> None:
    for g, w in ((got.edge, want.edge), (got.level, want.level)):
        assert g.start == w.start and len(g.db) == len(w.db), what
        assert len(g.blocks) == len(w.blocks), what
        if len(w.db) == 0:
            continue
        # a chain started from a zero state _WARMUP_S early differs from the one piece by the
        # transient of the state it missed, decayed below float64 resolution (2**-53) of the
        # signal's scale: powers within 1e-12 of themselves plus 1e-13 of the loudest block
        # (levels likewise, in dB); where the one piece's power is under that, digital
        # silence may read either way
        top = float(w.blocks.max())
        assert np.allclose(g.blocks, w.blocks, rtol=1e-12, atol=1e-13 * top), what
        frames = np.convolve(w.blocks, np.ones(edges.WINDOW_HOPS), "valid") / 4
        use = frames > 1e-13 * top
        tol = TOL_DB + 10.0 * np.log10(1.0 + 1e-13 * top / frames[use])
        assert np.all(np.abs(g.db[use] - w.db[use]) <= tol), what
        assert np.all(g.db[~use] < -100.0), what
    # the broadband blocks are the samples' own: digital silence exactly where it is
    assert np.array_equal(got.level.blocks == 0, want.level.blocks == 0), what


def _signals() -> Iterator[tuple[str, npt.NDArray[np.float32]]]:
    rng = np.random.default_rng(30)
    t = np.arange(SR * 6) / SR
    yield "noise", (rng.standard_normal(SR * 6) * 0.05).astype(np.float32)
    tone = 0.3 * np.sin(2 * np.pi * 180 * t) * (t % 2 < 1.2) + 0.2 * np.sin(2 * np.pi * 50 * t)
    yield "tones, hum", (tone + rng.standard_normal(len(t)) * 1e-3).astype(np.float32)
    yield "digital silence", np.zeros(SR * 3, np.float32)
    gap = (rng.standard_normal(SR * 7) * 0.1).astype(np.float32)
    gap[SR * 2 : SR * 5] = 0.0  # 3 s of zeros: the state decays, then sticks (the skip)
    gap[SR * 5 + 100 : SR * 5 + 900] = -0.0
    yield "sound, 3 s of zeros, sound", gap
    tail = np.concatenate([rng.standard_normal(SR) * 0.2, np.zeros(SR * 4)]).astype(np.float32)
    yield "sound then zeros to the end", tail
    yield "odd length", (rng.standard_normal(SR * 2 + 37) * 0.1).astype(np.float32)
    yield "shorter than a window", (rng.standard_normal(150) * 0.1).astype(np.float32)
    yield "a few windows (one chain)", (rng.standard_normal(SR // 5 + 3) * 0.1).astype(np.float32)
    yield "a constant", np.full(SR * 3, 0.25, np.float32)
    yield "subnormals", np.full(SR, 1e-44, np.float32)


@pytest.fixture(params=["compiled", "fallback"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "fallback":
        monkeypatch.setattr(kernels, "edge_kernels", lambda: None)
    elif kernels.edge_kernels() is None:
        pytest.skip("numba missing")
    return str(request.param)


@pytest.mark.parametrize("name", [n for n, _ in _signals()])
def test_the_whole_analysis_is_the_float64_definition(name: str, path: str) -> None:
    x = dict(_signals())[name]
    _close(edges.analyse(x, SR), _reference(x, SR, 0, len(x)), f"{name} ({path})")


@pytest.mark.parametrize("sr", [16_000, 44_100, 48_000])
def test_stretches_with_their_warm_up_are_the_definition(sr: int, path: str) -> None:
    rng = np.random.default_rng(sr)
    x = (rng.standard_normal(sr * 4) * 0.1).astype(np.float32)
    x[sr : sr + sr // 2] = 0.0
    for start, stop in ((0, sr * 4), (37, sr * 3 + 5), (sr // 50, sr), (sr + 11, sr * 4)):
        for s0, s1 in ((start, stop), (start, start + 201), (start, start + 3)):
            want = _reference(x, sr, s0, s1)
            _close(edges.analyse(x, sr, s0, s1), want, f"{sr} [{s0}, {s1}) ({path})")


def test_the_stretch_around_a_change_equals_the_whole(path: str) -> None:
    rng = np.random.default_rng(4)
    x = (rng.standard_normal(SR * 20) * 0.05).astype(np.float32)
    x[SR * 9 : SR * 10] = 0.0
    whole = edges.analyse(x, SR)
    for a, b in ((SR * 8.5, SR * 11.0), (100.0, SR * 1.0), (SR * 19.0, SR * 20.0)):
        part = edges.analyse_around(x, SR, a, b)
        k = part.edge.start // whole.edge.hop
        for p, w in ((part.edge, whole.edge), (part.level, whole.level)):
            ref = w.db[k : k + len(p.db)]
            assert len(p.db) == len(ref)
            assert np.array_equal(p.db == edges._SILENT_DB, ref == edges._SILENT_DB)
            live = ref > edges._SILENT_DB
            assert np.max(np.abs(p.db[live] - ref[live])) < TOL_DB


@pytest.mark.parametrize("d_hops", [37, -23])
def test_block_powers_carried_over_a_move_are_the_moved_signals(d_hops: int, path: str) -> None:
    """A signal made of another's stretches (one unmoved, one moved by whole hops, one moved by
    part of a hop) and new samples between them: :meth:`edges.BlockPowers.moved` gives its block
    powers (level bit for bit, edge within float64 roundings of the definition) analysing only
    what is not a whole-hop copy, and :meth:`edges.BlockPowers.around` is
    :func:`edges.analyse_around` of it."""
    rng = np.random.default_rng(7)
    hop = edges.hop_samples(SR)
    x = (rng.standard_normal(SR * 12) * 0.05).astype(np.float32)
    x[SR * 2 : SR * 3] = 0.0  # digital silence inside the unmoved stretch
    x[SR * 6 : SR * 7] *= 20.0  # a loud stretch moved with the tail
    d, a, gap = d_hops * hop, SR * 4 + 17, SR // 5
    y = np.concatenate(
        (
            x[:a],
            (rng.standard_normal(gap) * 0.2).astype(np.float32),  # assembled anew
            x[a + gap - d : SR * 9 - d],  # moved by whole hops
            x[SR * 9 + 3 - d : -SR],  # moved by a part of a hop: analysed again
        )
    )
    same = [(0, a, 0), (a + gap, SR * 9, d), (SR * 9, len(y), d - 3)]
    for lo, hi, dd in same:
        assert np.array_equal(y[lo:hi], x[lo - dd : hi - dd])
    calls: list[int] = []
    real = edges._hop_powers

    def counted(seg, warm, count, hop_, sr):  # type: ignore[no-untyped-def]
        calls.append(count)
        return real(seg, warm, count, hop_, sr)

    old = edges.BlockPowers.of(edges.analyse(x, SR))
    assert old is not None
    mp = pytest.MonkeyPatch()
    mp.setattr(edges, "_hop_powers", counted)
    try:
        got = old.moved(y, same)
    finally:
        mp.undo()
    whole = edges.analyse(y, SR)
    assert len(got.edge) == len(whole.edge.blocks) == len(y) // hop
    assert np.array_equal(got.level, whole.level.blocks)
    # within float64 roundings of the signal's scale (the silent stretch's ringing decays far
    # below it, where relative differences mean nothing)
    ref = _reference(y, SR, 0, len(y)).edge.blocks
    assert np.max(np.abs(got.edge - ref)) <= 1e-12 * float(np.max(ref))
    # analysed again: the new samples and 0.1 s after them, and the part-hop stretch
    moved_blocks = (SR * 9 - (a + gap)) // hop
    assert sum(calls) < len(y) // hop - moved_blocks - a // hop + 2 * SR // 10 // hop + 4
    for lo, hi in ((SR * 3.5, SR * 5.5), (SR * 0.01, SR * 1.0), (SR * 9.5, len(y) - 10.0)):
        part, want = got.around(lo, hi), edges.analyse_around(y, SR, lo, hi)
        for p_, w in ((part.edge, want.edge), (part.level, want.level)):
            assert p_.start == w.start and len(p_.db) == len(w.db)
            assert np.array_equal(p_.db == edges._SILENT_DB, w.db == edges._SILENT_DB)
            live = w.db > edges._SILENT_DB
            assert np.max(np.abs(p_.db[live] - w.db[live])) < TOL_DB


def test_many_is_each_alone_bit_for_bit() -> None:
    sigs = [x for _, x in _signals()]
    for got, x in zip(edges.analyse_many(sigs, SR), sigs, strict=True):
        want = edges.analyse(x, SR)
        for g, w in ((got.edge, want.edge), (got.level, want.level)):
            assert g.db.tobytes() == w.db.tobytes() and g.blocks.tobytes() == w.blocks.tobytes()


@compiled
@pytest.mark.parametrize("name", [n for n, _ in _signals()])
def test_compiled_and_fallback_give_the_same_bits(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    x = dict(_signals())[name]
    hop = edges.hop_samples(SR)
    _same_without_kernels(
        x, [(0, len(x)), (hop * 3 + 7, len(x)), (SR // 3, len(x) - 5)], monkeypatch
    )


@pytest.mark.parametrize("count", [0, 4, 199, 200, 203, 839, 840, 1000, 14_017])
@pytest.mark.parametrize("warm", [0, 17, 1600])
def test_the_chains_cover_every_block_once_after_a_full_warm_up(count: int, warm: int) -> None:
    hop = edges.hop_samples(SR)
    pos, pre, blocks, first = edges._chain_plan(count, hop, warm, SR)
    assert len(pos) in (1, *(k for _, k in edges._CHAIN_COUNTS))
    covered = np.zeros(count, int)
    for j in range(len(pos)):
        covered[first[j] : first[j] + blocks[j]] += 1
        # the chain's first written block is at x[warm + first * hop]
        assert pos[j] + warm + pre[j] * hop == warm + first[j] * hop
        assert pos[j] >= 0
        if j:  # a later chain settles from a zero state for at least _WARMUP_S
            assert warm + pre[j] * hop >= edges._WARMUP_S * SR
    assert np.all(covered == 1)
    steps = pre + blocks  # side by side: the same steps but for the last one's remainder
    assert steps.max() - steps.min() < len(pos)


def test_the_change_from_the_float32_recursion_is_small() -> None:
    """What this pass replaced (scipy's float32 lfilter, float32 einsum sums) differs from it
    by that recursion's own roundings: ~1e-3 dB at most on a quiet stretch of a tone."""
    rng = np.random.default_rng(7)
    t = np.arange(SR * 10) / SR
    x = 0.3 * np.sin(2 * np.pi * 180 * t) * (t % 2 < 1.2) + rng.standard_normal(len(t)) * 3e-3
    x = x.astype(np.float32)
    b, a = edges._highpass_ba(SR)
    hop = edges.hop_samples(SR)
    count = len(x) // hop
    y = lfilter(b, a, x)[: count * hop].reshape(count, hop)
    p = np.einsum("ij,ij->i", y, y).astype(np.float64) / hop
    w = np.convolve(p, np.ones(4), "valid") / 4
    old = 10.0 * np.log10(w)
    new = edges.analyse(x, SR).edge.db
    assert 0 < np.max(np.abs(new - old)) < 0.01


def test_long_digital_silence_inside_the_lanes(path: str) -> None:
    """An 80 s signal (32 lanes of 2.5 s): a lane whose sound stops decays into subnormal
    states after ~1.6 s of zeros (then the lanes run one by one, with the skip, until the
    sound returns); a lane that starts in zeros stays at an exact zero state."""
    rng = np.random.default_rng(80)
    x = np.zeros(SR * 80, np.float32)
    x[: SR // 5] = rng.standard_normal(SR // 5) * 0.3  # lane 0: sound, then 2.3 s of zeros
    x[SR * 30 : SR * 31] = rng.standard_normal(SR) * 0.1  # a burst, then zeros past lanes
    x[SR * 70 :] = rng.standard_normal(SR * 10) * 0.01
    x[SR * 75 : SR * 75 + 7] = -0.0
    _close(edges.analyse(x, SR), _reference(x, SR, 0, len(x)), f"80 s ({path})")
    assert len(edges._chain_plan(len(x) // 40, 40, 0, SR)[0]) == 32


@compiled
def test_the_lanes_leave_and_rejoin_the_vector_path_with_the_same_bits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The 32 lanes (80 s: a lane is 2.5 s) run one by one while a lane's state is subnormal
    and side by side again once sound brings every state back: lane 0's state decays to
    subnormal in 2.1 s of zeros and its sound returns, lane 9's decays in 2 s of zeros (while
    lane 0's still is) and returns for its last blocks, lane 5 meets float32 subnormal input;
    compiled and fallback give the same bits, whole and from an offset."""
    rng = np.random.default_rng(32)
    x = (rng.standard_normal(SR * 80) * 0.05).astype(np.float32)
    x[SR // 5 : SR * 23 // 10] = 0.0  # lane 0: ~1.6 s of decay to subnormal, then sound
    x[SR * 13 : SR * 14] = 1e-44  # lane 5: float32 subnormal input
    x[SR * 23 : SR * 25] = 0.0  # lane 9: decays to subnormal, sound for its last blocks
    x[SR * 23 + 5 : SR * 23 + 99] = -0.0
    assert len(edges._chain_plan(len(x) // 40, 40, 0, SR)[0]) == 32
    _same_without_kernels(x, [(0, len(x)), (SR * 3 + 17, len(x) - 11)], monkeypatch)


def _same_without_kernels(
    x: np.ndarray, cases: list[tuple[int, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``edges.analyse`` of each stretch ``[a, b)`` of ``x``: compiled == numpy/scipy, bit for bit
    (both envelopes' dB and hop powers)."""
    fast = [edges.analyse(x, SR, a, b) for a, b in cases]
    monkeypatch.setattr(kernels, "edge_kernels", lambda: None)
    slow = [edges.analyse(x, SR, a, b) for a, b in cases]
    for f, s in zip(fast, slow, strict=True):
        for g, w in ((f.edge, s.edge), (f.level, s.level)):
            assert g.db.tobytes() == w.db.tobytes() and g.blocks.tobytes() == w.blocks.tobytes()
