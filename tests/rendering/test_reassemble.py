"""Re-assembling only around the moves (the mixdown's correction passes) against assembling whole.

The straightforward path, :func:`assemble` of the whole file at the new shifts, is the reference:
on constructed clips (overlapping across items, reaching past the file's ends, scalar, per-sample
and no background, with and without stems) moved by random corrections, forward and back, the
incremental path must give the same bytes.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from duetflow.audio.mix import fade_envelope
from duetflow.rendering import assembly as asm
from duetflow.rendering import mixdown as md
from duetflow.rendering.assembly import Clip, assemble
from duetflow.rendering.mixdown import as_written


def _case(
    rng: np.random.Generator, n_stems: int
) -> tuple[list[Clip], list[tuple[int, int]], int, np.ndarray]:
    groups = int(rng.integers(1, 8))
    clips, spans, pos = [], [], int(rng.integers(-300, 400))
    for g in range(groups):
        e0, e1 = pos, pos + int(rng.integers(50, 2000))
        spans.append((e0, e1))
        for _ in range(int(rng.integers(1, 4))):
            at = e0 - int(rng.integers(0, 300))
            n = e1 - at + int(rng.integers(0, 300))
            env = fade_envelope(n, int(rng.integers(0, 200)))
            data = (rng.normal(size=n) * 0.1).astype(np.float32) * env
            kind = int(rng.integers(0, 3))
            fp: float | np.ndarray = (
                0.0
                if kind == 0
                else float(rng.uniform(0, 1e-3))
                if kind == 1
                else rng.uniform(0, 1e-3, n).astype(np.float32)
            )
            stem = int(rng.integers(0, n_stems)) if n_stems and rng.random() < 0.8 else None
            clips.append(Clip(g, stem, data, env, at, e0 - at, e1 - at, fp))
        pos = e1 + int(rng.integers(-200, 1500))  # pauses and overlaps
    n0 = max(b for _, b in spans) + int(rng.integers(-200, 500))
    noise = rng.normal(size=n0).astype(np.float32)
    return clips, spans, max(n0, 1), noise


def _layout(spans: list[tuple[int, int]], shifts: list[int], n0: int) -> asm.Layout:
    n = n0 + shifts[-1]
    return asm.Layout(shifts, n, asm.bed_cuts(spans, shifts, n))


def test_reassembly_equals_whole_assembly() -> None:
    rng = np.random.default_rng(18)
    copied = 0
    for trial in range(300):
        n_stems = (0, 2)[trial % 2]
        clips, spans, n0, noise = _case(rng, n_stems)
        power = float(rng.uniform(0, 2e-3))
        bed = None if trial % 5 == 0 else noise
        shifts = [0] * len(spans)
        old = _layout(spans, shifts, n0)
        done = assemble(clips, shifts, n0, bed, power, n_stems)
        for _ in range(int(rng.integers(1, 4))):  # correction passes, each on the one before
            deltas = [0] * len(spans)
            for k in range(1, len(spans)):
                if rng.random() < 0.4:
                    deltas[k] = int(rng.integers(-400, 400))
            shifts = [a + b for a, b in zip(shifts, itertools.accumulate(deltas), strict=True)]
            new = _layout(spans, shifts, n0)
            if new.n <= 0:
                break
            moved_bed = asm.shift_bed(bed, spans, shifts, new.n) if bed is not None else None
            out, stems, same = asm.reassemble(clips, old, new, done, moved_bed, power, n_stems)
            want, want_stems = assemble(clips, shifts, new.n, moved_bed, power, n_stems)
            assert out.tobytes() == want.tobytes()
            if n_stems:
                assert stems is not None and want_stems is not None
                assert stems.tobytes() == want_stems.tobytes()
            else:
                assert stems is None
            copied += sum(b - a for a, b, _ in same)
            # the written form follows the same copies
            written = as_written(done[0], -1.5)
            assert (
                md._rewrite(out, -1.5, written, same).tobytes() == as_written(out, -1.5).tobytes()
            )
            old, done = new, (out, stems)
    assert copied > 0  # the copying path was taken, not only the assembling one


def test_a_part_of_the_assembly_is_that_part_of_the_whole() -> None:
    rng = np.random.default_rng(5)
    for trial in range(200):
        n_stems = (0, 2)[trial % 2]
        clips, spans, n0, noise = _case(rng, n_stems)
        shifts = [int(rng.integers(-100, 100)) for _ in spans]
        whole, whole_stems = assemble(clips, shifts, n0, noise, 1e-3, n_stems)
        lo = int(rng.integers(0, n0))
        hi = int(rng.integers(lo, n0 + 1))
        part, part_stems = assemble(clips, shifts, n0, noise, 1e-3, n_stems, lo=lo, hi=hi)
        assert part.tobytes() == whole[lo:hi].tobytes()
        if n_stems:
            assert part_stems is not None and whole_stems is not None
            assert part_stems.tobytes() == whole_stems[lo:hi].tobytes()


def test_subtract_against_a_sample_mask() -> None:
    rng = np.random.default_rng(1)
    for _ in range(500):
        edges = np.sort(rng.integers(0, 100, size=2 * int(rng.integers(0, 5))))
        spans = [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2], strict=True) if b > a]
        spans = [s for i, s in enumerate(spans) if i == 0 or s[0] >= spans[i - 1][1]]
        holes = []
        for _ in range(int(rng.integers(0, 6))):
            a = int(rng.integers(-10, 110))
            holes.append((a, a + int(rng.integers(0, 30))))
        holes.sort()
        mask = np.zeros(130, dtype=bool)
        for a, b in spans:
            mask[a:b] = True
        for a, b in holes:
            mask[max(a, 0) : max(b, 0)] = False
        got = np.zeros(130, dtype=bool)
        for a, b in asm._subtract(spans, holes):
            assert b > a and not got[a:b].any()
            got[a:b] = True
        np.testing.assert_array_equal(got, mask)


def test_assembly_is_the_same_without_the_compiled_bed(monkeypatch: pytest.MonkeyPatch) -> None:
    # the bed under the clips (sqrt(max(floor - have, 0)) * tone, added) in one compiled pass
    # (duetflow.audio.sample_kernels.top_up) against numpy's five in-place calls
    from duetflow.audio import kernels

    if kernels.sample_kernels() is None:
        pytest.skip("numba missing: the fallback is the reference itself")
    rng = np.random.default_rng(19)
    cases = []
    for trial in range(200):
        n_stems = (0, 2)[trial % 2]
        clips, _spans, n0, noise = _case(rng, n_stems)
        stem_noise = [rng.normal(size=n0).astype(np.float32) for _ in range(n_stems)]
        power = float(rng.choice([0.0, 1e-4, 2e-3]))
        lo = int(rng.integers(0, n0))
        hi = int(rng.integers(lo, n0 + 1))
        cases.append((clips, n0, noise, power, n_stems, stem_noise, lo, hi))

    def run() -> list[bytes]:
        got = []
        for clips, n0, noise, power, n_stems, stem_noise, lo, hi in cases:
            shifts = [0] * (1 + max(c.group for c in clips))
            for a, b in ((0, None), (lo, hi)):
                out, stems = assemble(
                    clips, shifts, n0, noise, power, n_stems, lo=a, hi=b,
                    stem_noise=stem_noise or None,
                )  # fmt: skip
                got.append(out.tobytes() + (b"" if stems is None else stems.tobytes()))
        return got

    fast = run()
    monkeypatch.setattr(kernels, "sample_kernels", lambda: None)
    assert fast == run()
