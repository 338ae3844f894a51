"""The room tone's cuts where a gap correction moved the items apart (:func:`shift_bed`).

A corrected gap moves the items after it; the bed is cut at mid-gap and moves with them. Butted,
the two stretches of noise make a step, a click whose broadband energy the cue audit reads in the
pause's spectrum: above the band (its tilt) and under 100 Hz (its roll-off). PH dialogues have
about four times as many corrections as HH and HM (docs/fairness.md, *The pause colour*), so the
clicks marked PH. Here a band-limited bed is cut as a correction cuts it and read by the audit's
own instrument (:mod:`duetflow.fairness.cues`) and by a second one (sample steps).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.signal import lfilter

from duetflow.audio.bandlimit import lowpass
from duetflow.audio.io import to_pcm16
from duetflow.fairness.cues import energy_frequency, power_spectrum, spectral_tilt
from duetflow.rendering import assembly
from duetflow.rendering.assembly import CUT_FADE_HALF, shift_bed

SR = 16000


def bed(seconds: float, seed: int) -> np.ndarray:
    """A room-like bed at unit power, low-passed at 4 kHz as the demo's English beds are."""
    rng = np.random.default_rng(seed)
    y = lfilter([1.0], [1.0, -0.9], rng.standard_normal(int(seconds * SR)))
    y = lowpass((y / np.sqrt(np.mean(y * y))).astype(np.float32), SR, 4000.0)
    return y / np.float32(np.sqrt(np.mean(np.square(y, dtype=np.float64))))


def _written(y: np.ndarray) -> np.ndarray:
    """At the demo's floor (-56 dBFS) in a 16-bit file, read back."""
    return to_pcm16(y * np.float32(10 ** (-56 / 20))).astype(np.float64) / 32768.0


def _cut_pauses(seed: int, n_cuts: int = 40) -> tuple[np.ndarray, list[tuple[float, float]]]:
    """A bed cut at the middle of ``n_cuts`` 200 ms gaps, each moved by 2-40 ms (a corrected
    gap), and the audit's pauses around each cut (30 ms in from gaps' ends, as the audit)."""
    rng = np.random.default_rng(seed)
    x = bed(36.0, seed)
    spans, shifts, at, s = [], [], int(0.3 * SR), 0
    for _ in range(n_cuts + 1):
        spans.append((at, at + int(0.6 * SR)))
        shifts.append(s)
        at += int(0.8 * SR)
        s += int(rng.integers(32, 640))
    n = len(x) - 2 * SR
    y = shift_bed(x, spans, shifts, n)
    pauses = []
    for (_, e0), (s1, _), sh0, sh1 in zip(spans, spans[1:], shifts, shifts[1:], strict=False):
        a, b = e0 + sh0, s1 + sh1
        pauses.append(((a + 0.03 * SR) / SR, (b - 0.03 * SR) / SR))
    return _written(y), pauses


def _pause_colour(y: np.ndarray, pauses: list[tuple[float, float]]) -> tuple[float, float, float]:
    psd = power_spectrum(y, SR, pauses)
    f = np.arange(psd.size) * SR / 1024
    above = float(10 * np.log10(psd[(f > 4500) & (f < 7000)].mean() / psd[f < 3500].mean()))
    return spectral_tilt(psd, SR), energy_frequency(psd, SR, 0.85), above


def test_a_moved_bed_is_crossfaded_at_its_cuts_not_butted(monkeypatch: pytest.MonkeyPatch) -> None:
    """40 cuts of a bed: the pauses holding them read as the uncut bed's by the audit's tilt
    (0.3 dB/oct), 85 % roll-off (40 Hz) and level above the band (2 dB); butted (the cut's
    crossfade off, as before this step) they read 10 dB brighter above the band and their tilt
    1.0-1.5 dB/oct higher (the PH pauses' tilt on the scale-16 demo, -7.2 against HH's and
    HM's -7.6...-7.8 dB/oct)."""
    y, pauses = _cut_pauses(1)
    uncut = _written(bed(36.0, 1))
    ref = _pause_colour(uncut, pauses)
    got = _pause_colour(y, pauses)
    assert abs(got[0] - ref[0]) < 0.3, (got, ref)
    assert abs(got[1] - ref[1]) < 40.0, (got, ref)
    assert abs(got[2] - ref[2]) < 2.0, (got, ref)
    monkeypatch.setattr(assembly, "CUT_FADE_HALF", 0)
    butted, _ = _cut_pauses(1)
    hard = _pause_colour(butted, pauses)
    assert hard[2] - ref[2] > 6.0, (hard, ref)  # the clicks, above the band
    assert hard[0] - ref[0] > 0.8, (hard, ref)


def test_the_crossfade_keeps_the_floor_and_the_rest_of_the_bed() -> None:
    """Power across the crossfades within 1 dB of the bed's (over many cuts, small moves of
    highly correlated noise among them); every sample outside them is the bed's, moved; the
    largest sample step at a cut no larger than the bed's own; byte-reproducible."""
    x = bed(30.0, 2)
    rng = np.random.default_rng(3)
    spans, shifts, at, s = [], [], SR // 4, 0
    for _ in range(60):
        spans.append((at, at + SR // 4))
        shifts.append(s)
        at += int(0.45 * SR)
        s += int(rng.integers(1, 400))
    n = len(x) - 2 * SR
    y = shift_bed(x, spans, shifts, n)
    again = shift_bed(x.copy(), spans, list(shifts), n)
    assert y.tobytes() == again.tobytes()
    cuts = assembly.bed_cuts(spans, shifts, n)
    h = CUT_FADE_HALF
    fades = np.concatenate([y[c - h : c + h] for c in cuts[:-1]]).astype(np.float64)
    assert abs(10 * np.log10(np.mean(fades**2))) < 1.0
    lo = 0
    for k, (sh, hi) in enumerate(zip(shifts, cuts, strict=True)):
        a = lo + (h if k else 0)
        b = hi - (h if k < len(shifts) - 1 else 0)
        np.testing.assert_array_equal(y[a:b], x[a - sh : b - sh])
        lo = hi
    own_step = np.abs(np.diff(x.astype(np.float64))).max()
    for c in cuts[:-1]:
        assert np.abs(np.diff(y[c - h - 1 : c + h + 1].astype(np.float64))).max() <= own_step
