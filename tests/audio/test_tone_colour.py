"""Room tone's colour (:mod:`duetflow.audio.tone_colour`) on constructed beds.

Two beds of different tilt are shaped to one target; their tilt is then read by the cue audit's
own instrument (:func:`duetflow.fairness.cues.spectral_tilt`) and, independently, by a second
estimator written here (a least-squares slope of Welch band powers in octave bands, unweighted),
and their level by plain mean power.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.signal import lfilter, welch

from duetflow.audio.bandlimit import lowpass
from duetflow.audio.tone_colour import MAX_CORRECTION_DB_OCT, PCM16_STEP, tilt_db_oct, to_tilt
from duetflow.fairness.cues import power_spectrum, spectral_tilt

SR = 16000


def power_law(slope_db_oct: float, seconds: float, seed: int, sr: int = SR) -> np.ndarray:
    """White noise shaped to ``slope_db_oct`` over the whole spectrum (above 50 Hz)."""
    rng = np.random.default_rng(seed)
    n = int(seconds * sr)
    spec = np.fft.rfft(rng.standard_normal(n))
    f = np.maximum(np.fft.rfftfreq(n, 1 / sr), 50.0)
    y = np.fft.irfft(spec * 10 ** (slope_db_oct * np.log2(f / 1000) / 20), n=n)
    return (y / np.sqrt(np.mean(y * y)) * 10 ** (-50 / 20)).astype(np.float32)


def room(pole: float, seconds: float, seed: int, limit_hz: float | None = 4000.0) -> np.ndarray:
    """A room-like bed: first-order low-passed noise, band-limited as the renderer's beds are."""
    rng = np.random.default_rng(seed)
    y = lfilter([1.0], [1.0, -pole], rng.standard_normal(int(seconds * SR)))
    y = (y / np.sqrt(np.mean(y * y)) * 10 ** (-55 / 20)).astype(np.float32)
    return lowpass(y, SR, limit_hz) if limit_hz else y


def audit_tilt(y: np.ndarray, sr: int = SR) -> float:
    """The cue audit's ``pause_tilt_db_oct`` of a bed taken as one pause."""
    return spectral_tilt(power_spectrum(np.asarray(y, np.float64), sr, [(0.0, len(y) / sr)]), sr)


def octave_slope(y: np.ndarray, sr: int = SR) -> float:
    """Second estimator: band powers (Welch, 4096 points) in octaves centred 125 Hz-4 kHz, then
    an unweighted least-squares line of their level (dB) over the octave index."""
    f, p = welch(np.asarray(y, dtype=np.float64), fs=sr, nperseg=4096)
    centres = 125.0 * 2.0 ** np.arange(6)
    levels = [10 * np.log10(p[(f >= c / np.sqrt(2)) & (f < c * np.sqrt(2))].sum()) for c in centres]
    # a band's power grows with its width (an octave is twice the last): per Hz, as a spectrum
    per_hz = np.asarray(levels) - 10 * np.log10(centres)
    return float(np.polyfit(np.log2(centres), per_hz, 1)[0])


def level_db(y: np.ndarray) -> float:
    return float(10 * np.log10(np.mean(np.asarray(y, np.float64) ** 2)))


@pytest.mark.parametrize(
    ("a", "b", "target"),
    [
        (power_law(-4.0, 8.0, 1), power_law(-10.0, 8.0, 2), -7.4),
        # darker and brighter rooms, band-limited at 4 kHz as the demo's English: the audit's
        # tilt band reaches into the stop band, so its tilts run steeper (-10.9, -14.4)
        (room(0.5, 8.0, 3), room(0.93, 8.0, 4), -12.5),
        (room(0.7, 8.0, 5, None), room(0.9, 8.0, 6, None), -3.5),
    ],
    ids=["power-law", "room-4k", "room-full-band"],
)
def test_two_beds_of_different_tilt_come_out_with_one_tilt(
    a: np.ndarray, b: np.ndarray, target: float
) -> None:
    assert abs(audit_tilt(a) - audit_tilt(b)) > 1.5  # they really differ, by both instruments
    assert abs(octave_slope(a) - octave_slope(b)) > 1.5
    ya, da = to_tilt(a, SR, target)
    yb, db = to_tilt(b, SR, target)
    assert da != 0.0 and db != 0.0
    # the audit's own instrument reads the target on both
    assert abs(audit_tilt(ya) - target) < 0.1 and abs(audit_tilt(yb) - target) < 0.1
    # a second estimator reads them alike (within 0.3 dB/oct; before: > 1.5 apart)
    assert abs(octave_slope(ya) - octave_slope(yb)) < 0.3, (octave_slope(ya), octave_slope(yb))
    # the level is the bed's own (the floor rule's), within 0.1 dB
    assert abs(level_db(ya) - level_db(a)) < 0.1 and abs(level_db(yb) - level_db(b)) < 0.1
    assert ya.dtype == np.float32 and len(ya) == len(a)


def test_the_module_reads_tilt_as_the_audit_does() -> None:
    for y in (power_law(-3.0, 4.0, 5), room(0.9, 4.0, 6), room(0.5, 4.0, 7, None)):
        assert tilt_db_oct(y, SR) == pytest.approx(audit_tilt(y), abs=1e-6)


def test_shaping_is_byte_reproducible_and_a_bed_at_the_target_is_kept() -> None:
    x = room(0.9, 5.0, 8)
    a, da = to_tilt(x, SR, -7.4)
    b, db = to_tilt(x.copy(), SR, -7.4)
    assert da == db and a.tobytes() == b.tobytes()
    # a bed already at the target: the correction is ~0 and the bed hardly moves
    again, d2 = to_tilt(a, SR, -7.4)
    assert abs(d2) < 0.01
    assert np.max(np.abs(again - a)) < 1e-3 * np.max(np.abs(a))


def test_the_band_edge_and_the_texture_stay() -> None:
    """Only the colour changes: the bed's band limit stays where it was (the energy above the
    renderer's low-pass stays ~60 dB down), and each sample is the same noise (high correlation
    with the original after the same correction is undone)."""
    x = room(0.85, 6.0, 9, 3000.0)
    y, delta = to_tilt(x, SR, -7.4)
    f, p0 = welch(x.astype(np.float64), fs=SR, nperseg=2048)
    _, p1 = welch(y.astype(np.float64), fs=SR, nperseg=2048)

    def out_of_band_db(p: np.ndarray) -> float:
        return float(10 * np.log10(p[f > 3600].sum() / p[f < 3000].sum()))

    assert out_of_band_db(p1) < -40.0 and abs(out_of_band_db(p1) - out_of_band_db(p0)) < 6.0
    back, _ = to_tilt(y, SR, -7.4 - delta)
    assert np.corrcoef(back, x)[0, 1] > 0.999


def test_unmeasurable_or_far_off_beds_are_left_alone() -> None:
    short = room(0.9, 0.03, 10)  # under one frame
    assert to_tilt(short, SR, -7.4) == (short, 0.0)
    silent = np.zeros(SR, np.float32)
    y, d = to_tilt(silent, SR, -7.4)
    assert d == 0.0 and not y.any()
    steep = power_law(-7.4 - MAX_CORRECTION_DB_OCT - 3.0, 4.0, 11)
    y, d = to_tilt(steep, SR, -7.4)
    assert d == 0.0 and y is steep


def test_the_tilt_is_aimed_at_the_written_file_s_pauses() -> None:
    """Band-limited beds laid quiet (-56 dBFS) in a 16-bit file: the rounding noise fills their
    stop band, so the bare bed's tilt is not what the file's pauses read. Aimed at the laid
    tilt, two rooms of different colour read the target in the written (quantised) file."""
    from duetflow.audio.io import to_pcm16

    power = 10 ** (-56 / 10)
    written = []
    for bed in (room(0.5, 8.0, 12), room(0.93, 8.0, 13)):
        y, _ = to_tilt(bed, SR, -7.4, laid_power=power, step=PCM16_STEP)
        laid = y * np.float32(np.sqrt(power / np.mean(np.square(y, dtype=np.float64))))
        pcm = to_pcm16(laid).astype(np.float64) / 32768.0
        written.append(audit_tilt(pcm))
        # the bare bed shaped to the target reads otherwise once written (the stop band)
        bare, _ = to_tilt(bed, SR, -7.4)
        bare_laid = bare * np.float32(np.sqrt(power / np.mean(np.square(bare, dtype=np.float64))))
        assert abs(audit_tilt(to_pcm16(bare_laid).astype(np.float64) / 32768.0) + 7.4) > 1.0
    assert all(abs(t + 7.4) < 0.2 for t in written), written
