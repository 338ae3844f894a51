"""Room tone's colour (:mod:`duetflow.audio.tone_colour`) on constructed beds.

Beds of different colour are matched to one target envelope; their tilt is then read by the
cue audit's own instrument (:func:`duetflow.fairness.cues.spectral_tilt`) and, independently,
by a second estimator written here (a least-squares slope of Welch band powers in octave bands,
unweighted), and their level by plain mean power.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.signal import butter, lfilter, sosfilt, welch

from duetflow.audio.bandlimit import lowpass
from duetflow.audio.io import to_pcm16
from duetflow.audio.tone_colour import MAX_ENVELOPE_DB, pass_band_hz, tilt_db_oct, to_envelope
from duetflow.fairness.cues import band_edge, energy_frequency, power_spectrum, spectral_tilt

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
        (room(0.7, 8.0, 5, None), room(0.9, 8.0, 6, None), -3.5),
    ],
    ids=["power-law", "room-full-band"],
)
def test_two_beds_of_different_tilt_come_out_with_one_tilt(
    a: np.ndarray, b: np.ndarray, target: float
) -> None:
    assert abs(audit_tilt(a) - audit_tilt(b)) > 1.5  # they really differ, by both instruments
    assert abs(octave_slope(a) - octave_slope(b)) > 1.5
    ya, own_a = to_envelope(a, SR, target)
    yb, _ = to_envelope(b, SR, target)
    assert own_a == pytest.approx(audit_tilt(a), abs=1e-6)  # the bed's own, as the audit reads
    # the audit's own instrument reads the target on both
    assert abs(audit_tilt(ya) - target) < 0.2 and abs(audit_tilt(yb) - target) < 0.2
    # a second estimator reads them alike (within 0.3 dB/oct; before: > 1.5 apart)
    assert abs(octave_slope(ya) - octave_slope(yb)) < 0.3, (octave_slope(ya), octave_slope(yb))
    # the level is the bed's own (the floor rule's), within 0.1 dB
    assert abs(level_db(ya) - level_db(a)) < 0.1 and abs(level_db(yb) - level_db(b)) < 0.1
    assert ya.dtype == np.float32 and len(ya) == len(a)


def _written(y: np.ndarray, db: float = -56.0) -> np.ndarray:
    """``y`` laid at ``db`` dBFS and written as 16-bit PCM, read back."""
    g = np.sqrt(10 ** (db / 10) / np.mean(np.square(y, dtype=np.float64)))
    return to_pcm16(y * np.float32(g)).astype(np.float64) / 32768.0


def _pause_cues(y: np.ndarray) -> tuple[float, float, float]:
    """The audit's tilt, 99 % and 85 % energy frequencies of a bed taken as one pause."""
    psd = power_spectrum(np.asarray(y, np.float64), SR, [(0.0, len(y) / SR)])
    return (spectral_tilt(psd, SR), energy_frequency(psd, SR, 0.99),
            energy_frequency(psd, SR, 0.85))  # fmt: skip


def test_band_limited_rooms_of_different_colour_read_alike_once_written() -> None:
    """The demo's English: beds low-passed at 4 kHz, laid at -56 dBFS in a 16-bit file. A dark
    and a bright room, and one whose top is darker (a second-order roll-off from 2.5 kHz, as
    DailyTalk's pauses), matched in the pass band (to 3.75 kHz), read alike by the audit's
    tilt (within 0.3 dB/oct) and 85 % roll-off (100 Hz) once written, and by the octave-band
    slope; the 99 % frequency, which lies in the low-pass's transition band (above the matched
    band), comes within 150 Hz (from over 300 Hz apart)."""
    top = butter(2, 2500.0, fs=SR, output="sos")  # a darker top: second order from 2.5 kHz
    darker = lowpass(sosfilt(top, room(0.8, 8.0, 14, None)).astype(np.float32), SR, 4000.0)
    beds = [room(0.5, 8.0, 12), room(0.93, 8.0, 13), darker]
    before = [_pause_cues(_written(b)) for b in beds]
    assert max(t for t, _, _ in before) - min(t for t, _, _ in before) > 1.5, before
    assert max(f for _, f, _ in before) - min(f for _, f, _ in before) > 300.0, before
    after_beds = [to_envelope(b, SR, -3.9, hi_hz=pass_band_hz(4000.0))[0] for b in beds]
    after = [_pause_cues(_written(y)) for y in after_beds]
    tilts, f99, f85 = zip(*after, strict=True)
    assert max(tilts) - min(tilts) < 0.3, after
    assert max(f99) - min(f99) < 150.0, after
    assert max(f85) - min(f85) < 100.0, after
    slopes = [octave_slope(y) for y in after_beds]
    assert max(slopes) - min(slopes) < 0.3, slopes
    for b, y in zip(beds, after_beds, strict=True):
        assert abs(level_db(y) - level_db(b)) < 0.1


def test_the_module_reads_tilt_as_the_audit_does() -> None:
    for y in (power_law(-3.0, 4.0, 5), room(0.9, 4.0, 6), room(0.5, 4.0, 7, None)):
        assert tilt_db_oct(y, SR) == pytest.approx(audit_tilt(y), abs=1e-6)


def test_matching_is_byte_reproducible_and_a_bed_on_the_target_barely_moves() -> None:
    x, hi = room(0.9, 5.0, 8), pass_band_hz(4000.0)
    a, own_a = to_envelope(x, SR, -7.4, hi_hz=hi)
    b, own_b = to_envelope(x.copy(), SR, -7.4, hi_hz=hi)
    assert own_a == own_b and a.tobytes() == b.tobytes()
    again, own = to_envelope(a, SR, -7.4, hi_hz=hi)
    assert abs(own + 7.4) < 0.2 and abs(tilt_db_oct(again, SR, hi) + 7.4) < 0.2
    assert np.corrcoef(again, a)[0, 1] > 0.995


def test_the_band_edge_and_the_texture_stay() -> None:
    """Only the colour changes: the bed's band limit stays where it was (the audit's band edge
    within 50 Hz, the energy above the renderer's low-pass more than 40 dB down)."""
    x = room(0.85, 6.0, 9, 3000.0)
    y, _ = to_envelope(x, SR, -7.4, hi_hz=pass_band_hz(3000.0))
    f, p0 = welch(x.astype(np.float64), fs=SR, nperseg=2048)
    _, p1 = welch(y.astype(np.float64), fs=SR, nperseg=2048)

    def out_of_band_db(p: np.ndarray) -> float:
        return float(10 * np.log10(p[f > 3600].sum() / p[f < 3000].sum()))

    assert out_of_band_db(p1) < -40.0 and out_of_band_db(p0) < -40.0

    def edge(z: np.ndarray) -> float:
        return band_edge(power_spectrum(z.astype(np.float64), SR, [(0.0, len(z) / SR)]), SR)

    assert abs(edge(y) - edge(x)) < 50.0, (edge(x), edge(y))


def test_unmeasurable_beds_are_left_alone_and_the_gain_is_bounded() -> None:
    short = room(0.9, 0.03, 10)  # under one frame
    y, own = to_envelope(short, SR, -7.4)
    assert y is short and np.isnan(own)
    silent = np.zeros(SR, np.float32)
    y, own = to_envelope(silent, SR, -7.4)
    assert np.isnan(own) and not y.any()
    # a bed with nothing above 2 kHz is not boosted there by more than MAX_ENVELOPE_DB
    dull = lowpass(room(0.5, 6.0, 11, None), SR, 2000.0)
    y, _ = to_envelope(dull, SR, 0.0, hi_hz=pass_band_hz(4000.0))
    f, p0 = welch(dull.astype(np.float64), fs=SR, nperseg=2048)
    _, p1 = welch(y.astype(np.float64), fs=SR, nperseg=2048)
    band = (f > 2600) & (f < 3600)
    boost = 10 * np.log10(p1[band].sum() / p0[band].sum()) - (level_db(y) - level_db(dull))
    assert boost < MAX_ENVELOPE_DB + 10.0  # bounded (plus the level restored over the band)


def _rumble(x: np.ndarray, db: float, corner_hz: float = 90.0) -> np.ndarray:
    """``x`` with its spectrum under ``corner_hz`` raised (or lowered) by ``db``: a room's
    rumble (or a recording's high-pass), the rest of the spectrum as it was."""
    spec = np.fft.rfft(x.astype(np.float64))
    f = np.fft.rfftfreq(x.size, 1 / SR)
    shelf = 10 ** (db * (1.0 / (1.0 + (f / corner_hz) ** 4)) / 20)
    return np.fft.irfft(spec * shelf, n=x.size).astype(np.float32)


def test_the_energy_under_100_hz_is_matched_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """The audit's 85 % roll-off of a pause (~1 kHz) counts the energy under 100 Hz, a fifth to
    a third of a pause's power: three rooms alike above 100 Hz but with their own rumble
    (+6 dB, none, -6 dB under 90 Hz) read over 150 Hz apart; matched down to MATCH_LOW_HZ they
    read within 60 Hz, by the audit's roll-off and by a second estimator (the share of Welch
    power under 100 Hz within 1 dB); their level stays. With the match stopping at 100 Hz (the
    gain held below, as before) the roll-offs stay apart."""
    base = room(0.9, 8.0, 21, None)
    beds = [lowpass(_rumble(base, db), SR, 4000.0) for db in (6.0, 0.0, -6.0)]
    hi = pass_band_hz(4000.0)

    def rolloff(y: np.ndarray) -> float:
        return _pause_cues(_written(y))[2]

    def low_share_db(y: np.ndarray) -> float:
        f, p = welch(np.asarray(y, np.float64), fs=SR, nperseg=4096)
        return float(10 * np.log10(p[f < 100].sum() / p.sum()))

    before = [rolloff(b) for b in beds]
    assert max(before) - min(before) > 150.0, before
    after_beds = [to_envelope(b, SR, -3.9, hi_hz=hi)[0] for b in beds]
    after = [rolloff(y) for y in after_beds]
    assert max(after) - min(after) < 60.0, after
    shares = [low_share_db(y) for y in after_beds]
    assert max(shares) - min(shares) < 1.0, shares
    for b, y in zip(beds, after_beds, strict=True):
        assert abs(level_db(y) - level_db(b)) < 0.1
    # the match held at 100 Hz, as before this step, leaves each room's rumble
    monkeypatch.setattr("duetflow.audio.tone_colour.MATCH_LOW_HZ", 100.0)
    held = [rolloff(to_envelope(b, SR, -3.9, hi_hz=hi)[0]) for b in beds]
    assert max(held) - min(held) > 150.0, held


def _reference_power_spectrum(x: np.ndarray, frame: int) -> np.ndarray:
    """The frames stacked one by one and transformed with numpy (the module's code before its
    frames became views)."""
    x64 = np.asarray(x, dtype=np.float64)
    if x64.size < frame:
        return np.zeros(0)
    hop = frame // 2
    win = np.hanning(frame)
    total = np.zeros(frame // 2 + 1)
    starts = range(0, x64.size - frame + 1, hop)
    n = 0
    for i0 in range(0, len(starts), 256):
        block = np.stack([x64[s : s + frame] for s in starts[i0 : i0 + 256]]) * win
        total += (np.abs(np.fft.rfft(block, axis=1)) ** 2).sum(axis=0)
        n += block.shape[0]
    return total / n


def _reference_to_envelope(
    x: np.ndarray, sr: int, target_db_oct: float, hi_hz: float | None
) -> tuple[np.ndarray, float]:
    """:func:`to_envelope` as it was written before its frames became views: the frames stacked
    one by one, numpy's ``rfft``/``irfft`` of the whole bed."""
    import math

    from duetflow.audio import tone_colour as tc

    psd = _reference_power_spectrum(x, tc.FRAME)
    if psd.size == 0 or not np.any(psd > 0):
        return x, math.nan
    lo, hi = tc._band(sr, hi_hz)
    before = tc._fit(psd, sr, hi_hz)
    if x.size >= tc.LONG_FRAME_MIN_FRAMES * tc.LONG_FRAME:
        psd = _reference_power_spectrum(x, tc.LONG_FRAME)
    low = min(tc.MATCH_LOW_HZ, lo)
    grid = low * 2.0 ** np.arange(0.0, math.log2(hi / low) + 1e-9, 1.0 / 24.0)
    env = tc.envelope_db(psd, sr, grid)
    gain_db = tc.target_db(grid, sr, target_db_oct, hi_hz) - env
    gain_db = np.clip(gain_db - np.median(gain_db), -MAX_ENVELOPE_DB, MAX_ENVELOPE_DB)
    x64 = np.asarray(x, dtype=np.float64)
    fx = np.clip(np.fft.rfftfreq(x64.size, 1.0 / sr), low, hi)
    g = 10.0 ** (np.interp(np.log2(fx), np.log2(grid), gain_db) / 20.0)
    y = np.fft.irfft(np.fft.rfft(x64) * g, n=x64.size)
    p0, p1 = float(np.mean(x64 * x64)), float(np.mean(y * y))
    if p1 > 0:
        y *= math.sqrt(p0 / p1)
    return y.astype(np.float32), before


def test_to_envelope_gives_the_numpy_formulations_values() -> None:
    """The former formulation's values (frames stacked one by one, numpy's transforms of the
    whole bed, in float64) on the bed's first :func:`fast_length` samples: beds whose
    lengths are a large prime times a few small factors (numpy's slow lengths, as the renderer's
    beds often are), powers of two, odd and prime lengths, under and over the long frames'
    threshold, of several colours, with a band edge and without, with digital silence in them,
    all silence, and too short to measure; each spectrum's frame on its own. The shaped bed is
    that part, shaped: its length is the fast length; its samples within 3e-6 of its peak of
    the float64 formulation's (float32 transforms: 1.5e-6 at most here, under gains of up to
    20 dB), the bed's own tilt and both spectra the same
    bits (compared as integers)."""
    from duetflow.audio.tone_colour import LONG_FRAME, fast_length, power_spectrum

    rng = np.random.default_rng(3)
    lengths = [70480, 49160, 48000, 16 * 1021, 16384, 16383, 4099, 4095, 2048, 1500, 1024, 1023]
    lengths += [2 * 104729, 70480]
    cut, worst = 0, 0.0
    for i, n in enumerate(lengths):
        bed = room((0.5, 0.9, 0.99)[i % 3], n / SR + 0.01, 40 + i, 4000.0 if i % 2 else None)
        bed = bed[:n].copy()
        if i % 4 == 1:
            bed[n // 3 : n // 2] = 0.0
        m = fast_length(n)
        cut += m < n
        for tilt, hi in ((-3.9, pass_band_hz(4000.0)), (-7.4, None)):
            y0, own0 = _reference_to_envelope(bed[:m], SR, tilt, hi)
            y1, own1 = to_envelope(bed, SR, tilt, hi_hz=hi)
            assert y1.dtype == y0.dtype == np.float32 and y1.size == m
            assert np.array_equal(np.float64(own0).view(np.int64), np.float64(own1).view(np.int64))
            # float32 transforms against the float64 ones: within their rounding
            assert np.max(np.abs(y1 - y0)) <= 3e-6 * np.max(np.abs(y0)), (n, tilt)
            worst = max(worst, float(np.max(np.abs(y1 - y0)) / np.max(np.abs(y0))))
        for frame in (1024, LONG_FRAME):
            p0 = _reference_power_spectrum(bed, frame)
            p1 = power_spectrum(bed, SR, frame)
            assert np.array_equal(p0.view(np.int64), p1.view(np.int64)), (n, frame)
    assert cut >= 7  # the slow lengths were cut; 48,000, 16,384 and the short ones were not
    assert worst > 1e-8  # float32 transforms, not float64: they differ, by their rounding
    silent = np.zeros(40000, np.float32)
    assert to_envelope(silent, SR, -3.9)[0] is silent
    noise = rng.normal(0, 1e-3, 700).astype(np.float32)
    assert to_envelope(noise, SR, -3.9)[0] is noise


def _is_fast(m: int) -> bool:
    for p in (2, 3, 5, 7, 11):
        while m % p == 0:
            m //= p
    return m == 1


def test_fast_length_is_the_longest_even_fast_length_and_cuts_little() -> None:
    """Against a brute-force search (every length from 4,096 to 300,000, and some long ones):
    the longest even length with no prime factor over 11, never more than 2.02 % shorter (at
    4,096-8,192 samples; 1 % from 32,768); under 4,096 the length itself."""
    from duetflow.audio.tone_colour import FAST_MIN_LENGTH, fast_length

    assert FAST_MIN_LENGTH == 4096
    assert [fast_length(n) for n in (0, 1, 7, 1023, 4095)] == [0, 1, 7, 1023, 4095]
    worst, best = 0.0, 0
    for n in range(FAST_MIN_LENGTH, 300_001):
        if n % 2 == 0 and _is_fast(n):
            best = n
        assert fast_length(n) == best, n
        worst = max(worst, (n - best) / n)
    for n in (2**22 + 1, 10**7 + 3, 3 * 2**24 - 2):
        m = n - n % 2
        while not _is_fast(m):
            m -= 2
        assert fast_length(n) == m, n
    assert 0.02 < worst <= 0.0202, worst
    assert fast_length(70480) == 70400 and fast_length(49160) == 49152


@pytest.mark.parametrize("n", [8998, 70480, 49160, 16 * 1021])
def test_the_gains_clipped_bins_are_worked_out_once(n: int) -> None:
    """The gain's read of the bins clipped to the matched range's ends, worked out once, gives
    the bits of the whole formulation."""
    import math

    from duetflow.audio import tone_colour as tc

    rng = np.random.default_rng(n)
    for low, hi in ((20.0, 3750.0), (20.0, 7200.0), (100.0, 400.0)):
        grid = low * 2.0 ** np.arange(0.0, math.log2(hi / low) + 1e-9, 1.0 / 24.0)
        gain_db = rng.uniform(-20, 20, grid.size)
        f = np.fft.rfftfreq(n, 1.0 / SR)
        want = 10.0 ** (np.interp(np.log2(np.clip(f, low, hi)), np.log2(grid), gain_db) / 20.0)
        got = tc._gain(f, low, hi, grid, gain_db)
        assert np.array_equal(got.view(np.int64), want.view(np.int64))
