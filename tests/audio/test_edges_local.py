"""A pause measured on the envelopes of its two turns alone equals the whole file's measure.

The renderer's correction passes analyse only the moved changes' two items
(:func:`duetflow.audio.edges.analyse_around`) while every reader of the rows (the schema checks,
``duetflow validate --audio-sample``, the report) analyses the whole file
(:func:`duetflow.audio.edges.change_gaps`). The two must give the same gap, so it is checked here
on constructed signals (:mod:`duetflow.audio.calibration`: quiet tails, reverberant ends,
breaths, white / pink / brown / hum floors and digital silence, 8–48 kHz), each placed after an
unrelated louder recording so that the high-pass filter enters the stretch with a state the
local analysis never saw, at offsets off the hop grid.
"""

from __future__ import annotations

import numpy as np
import pytest

from duetflow.audio import edges
from duetflow.audio.calibration import FLOOR_KINDS, construct
from duetflow.rendering.mixdown import measure_change

#: Agreement asked of the local measure (ms): the two analyses differ by float32 rounding of the
#: high-pass alone (a few 1e-5 dB on a frame of a brown floor, whose high-passed residue is small
#: beside its rumble; nothing on the other floors): edges agree to ~6e-4 ms on brown floors and
#: to float64 rounding elsewhere; a reader's tolerance is a millisecond.
SAME_MS = 0.01


def _signal(seed: int, kind: str) -> tuple[np.ndarray, int, list[tuple[float, float]]]:
    """A construction of four utterances after 1.3 s (plus a few samples off the hop grid) of
    another, louder, with a rumble: the signal and the utterances' annotations (samples)."""
    c = construct(seed, floor_kind=kind, n_utterances=4)
    before = construct(seed + 7919, sr=c.sr, floor_kind="brown", n_utterances=1)
    lead = before.samples[: int(1.3 * c.sr) + seed % 37] * np.float32(1.5)
    t = np.arange(len(lead)) / c.sr
    lead = lead + np.float32(0.05) * np.sin(2 * np.pi * 40.0 * t).astype(np.float32)
    x = np.concatenate([lead, c.samples]).astype(np.float32)
    hints = [(float(u.hint[0] + len(lead)), float(u.hint[1] + len(lead))) for u in c.utterances]
    return x, c.sr, hints


def _same(a: edges.GapMeasure | None, b: edges.GapMeasure | None, sr: int) -> None:
    assert (a is None) == (b is None)
    if a is None or b is None:
        return
    assert a.offset == pytest.approx(b.offset, abs=SAME_MS / 1000 * sr)
    assert a.onset == pytest.approx(b.onset, abs=SAME_MS / 1000 * sr)
    assert a.floor.digital == b.floor.digital
    assert a.floor.db == pytest.approx(b.floor.db, abs=1e-4)
    assert a.floor.spread_db == pytest.approx(b.floor.spread_db, abs=1e-4)
    assert a.step_db == pytest.approx(b.step_db, abs=1e-4)
    assert a.dip_db == pytest.approx(b.dip_db, abs=1e-4)
    assert a.zero_run == b.zero_run


@pytest.mark.parametrize("kind", FLOOR_KINDS)
def test_local_measure_equals_the_whole_files(kind: str) -> None:
    measured = 0
    for seed in range(3):
        x, sr, hints = _signal(seed, kind)
        whole = edges.analyse(x, sr)
        for k in range(len(hints) - 1):
            prev, nxt = hints[k], hints[k + 1]
            local = edges.analyse_around(x, sr, prev[0], nxt[1])
            # really local: it holds the two turns and their reach, not the file
            assert len(local.edge) < len(whole.edge)
            assert local.edge.start % edges.hop_samples(sr) == 0
            for floor_db in (None, -60.0):  # the pause's own floor, or the renderer's level
                a = edges.measure_gap(x, sr, prev, nxt, analysis=whole, floor_db=floor_db)
                b = edges.measure_gap(x, sr, prev, nxt, analysis=local, floor_db=floor_db)
                _same(a, b, sr)
                measured += a is not None
            # the renderer's confirmation (re-measured from the edges found until they hold)
            _same(
                measure_change(x, sr, (int(prev[0]), int(prev[1])), (int(nxt[0]), int(nxt[1])),
                               None, whole),
                measure_change(x, sr, (int(prev[0]), int(prev[1])), (int(nxt[0]), int(nxt[1])),
                               None, local),
                sr,
            )  # fmt: skip
    assert measured >= 10  # the pauses were measured, not skipped


def test_local_envelopes_equal_the_whole_files_frame_by_frame() -> None:
    """The frames themselves: same grid, same levels (to float32 rounding of the high-pass),
    the same flicker median wherever a pause's floor reads it."""
    x, sr, hints = _signal(3, "pink")
    whole = edges.analyse(x, sr)
    local = edges.analyse_around(x, sr, hints[1][0], hints[2][1])
    k0 = local.edge.start // edges.hop_samples(sr)
    n = len(local.edge)
    np.testing.assert_array_equal(local.level.db, whole.level.db[k0 : k0 + n])
    np.testing.assert_allclose(local.edge.db, whole.edge.db[k0 : k0 + n], atol=1e-4, rtol=0)
    lo, hi = 40, n - 40
    np.testing.assert_allclose(
        local.edge_median_in(lo, hi), whole.edge_median[k0 + lo : k0 + hi], atol=1e-4, rtol=0
    )
    # the short-stretch median is the whole envelope's, exactly
    np.testing.assert_array_equal(whole.edge_median_in(k0 + lo, k0 + lo + 90),
                                  whole.edge_median[k0 + lo : k0 + lo + 90])  # fmt: skip


def test_the_chunked_walk_for_a_quiet_run_finds_the_first_run_of_the_whole() -> None:
    """The edge walk's quiet-run search walks growing chunks: on random levels (runs of every
    length, cut at every chunk boundary) it finds what a scan of the whole array finds."""

    def scan(quiet: np.ndarray, m: int) -> int | None:  # the definition, sample by sample
        k = 0
        while k < quiet.size:
            if quiet[k]:
                j = k
                while j < quiet.size and quiet[j]:
                    j += 1
                if j - k >= m or j == quiet.size:
                    return k
                k = j
            else:
                k += 1
        return None

    rng = np.random.default_rng(0)
    for trial in range(3000):
        n = int(rng.integers(0, 1200))
        # long loud stretches with short quiet runs, so the first long run lies anywhere
        v = np.where(rng.random(n) < rng.uniform(0.05, 0.6), -60.0, -20.0)
        m = int(rng.integers(1, 6))
        assert edges._quiet_run(v, -50.0, m) == scan(v <= -50.0, m), trial


def test_the_partial_sort_median_is_numpys() -> None:
    rng = np.random.default_rng(1)
    for n in [*range(1, 40), 257, 1000]:
        for _ in range(20):
            v = np.round(rng.normal(-50.0, 8.0, n), int(rng.integers(0, 4)))  # ties too
            assert edges._median(v) == float(np.median(v))


def test_a_floor_estimated_on_its_masks_stretch_is_the_whole_envelopes() -> None:
    """The floor estimate works on the stretch its mask spans: the same floor as the estimate
    written over the whole envelope, for masks of every shape (a pause, scattered frames, most
    of the file, frames at the envelope's ends) on a signal with speech, floor and zeros."""
    from scipy.ndimage import median_filter

    def whole_envelope(an: edges.Analysis, m: np.ndarray) -> edges.Floor | None:
        lv, hv = an.level.db, an.edge.db
        if np.count_nonzero(m) < edges.MIN_FLOOR_FRAMES:
            return None
        digital = lv < edges.DIGITAL_DB
        if np.count_nonzero(digital & m) >= edges.DIGITAL_SHARE * np.count_nonzero(m):
            return edges.DIGITAL_FLOOR
        use = m & ~digital
        level, hp = edges._trimmed_level(lv[use]), edges._trimmed_level(hv[use])
        med = median_filter(hv, size=edges._FLICKER_FRAMES, mode="nearest")
        flicker = edges.quantiles((hv - med)[use], (99,))[0]
        q50 = edges.quantiles(hv[use], (50,))[0]
        return edges.Floor(level, hp, max(0.0, q50 + flicker - hp), False)

    x, sr, _ = _signal(5, "hum60")
    x[len(x) // 3 : len(x) // 3 + sr // 2] = 0.0  # half a second of digital silence
    an = edges.analyse(x, sr)
    n = len(an.edge)
    rng = np.random.default_rng(2)
    for _ in range(200):
        m = np.zeros(n, dtype=bool)
        a = int(rng.integers(0, n))
        b = min(n, a + int(rng.integers(1, n)))
        m[a:b] = rng.random(b - a) < rng.uniform(0.05, 1.0)
        if rng.random() < 0.2:
            m[: int(rng.integers(0, 30))] = True  # the envelope's ends
            m[n - int(rng.integers(0, 30)) :] = True
        # a fresh analysis: a short stretch's median computed on its own, not the cached one
        fresh = edges.analyse(x, sr)
        assert edges.estimate_floor(fresh, m) == whole_envelope(an, m)
    assert edges.estimate_floor(an) == whole_envelope(an, np.ones(n, dtype=bool))
