"""A recording's effective bandwidth, measured once on its first SPAN_S seconds.

Constructed truth: noise band-limited (by zeroing its spectrum) to a known edge in the measured
span and broadband after it, read back against scipy's own Welch periodogram (the independent
instrument, not duetflow's block implementation).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import soundfile as sf
from scipy.signal import welch

from duetflow.acoustics import source_bandwidth as sb

SR = 16000


def band_noise(n: int, hi_hz: float, seed: int, level: float = 0.05) -> np.ndarray:
    """White noise with nothing above ``hi_hz`` (spectrum zeroed there)."""
    x = np.random.default_rng(seed).normal(0, level, n)
    spec = np.fft.rfft(x)
    spec[np.fft.rfftfreq(n, 1 / SR) > hi_hz] = 0
    return np.fft.irfft(spec, n).astype(np.float32)


def f99(x: np.ndarray) -> float:
    f, p = welch(np.asarray(x, dtype=np.float64), fs=SR, nperseg=2048)
    c = np.cumsum(p)
    return float(f[np.searchsorted(c, 0.99 * c[-1])])


def recording(path: Path, narrow_hz: tuple[float, float], total_s: float = 80.0) -> np.ndarray:
    """Two channels: band-limited to ``narrow_hz[ch]`` over the first SPAN_S, broadband after."""
    head, tail = int(sb.SPAN_S * SR), int((total_s - sb.SPAN_S) * SR)
    chans = [
        np.concatenate([band_noise(head, hz, seed=ch), band_noise(tail, SR / 2, seed=10 + ch)])
        for ch, hz in enumerate(narrow_hz)
    ]
    x = np.stack(chans, axis=1)
    sf.write(path, x, SR, subtype="FLOAT")
    return x


def test_measures_the_first_span_of_each_track_joined(tmp_path: Path) -> None:
    p = tmp_path / "rec.wav"
    x = recording(p, (2500.0, 3500.0))
    head = int(sb.SPAN_S * SR)
    got = sb.recording_bandwidth_hz([(str(p), 0), (str(p), 1)], SR)
    truth = f99(np.concatenate([x[:head, 0], x[:head, 1]]))
    assert got is not None and abs(got - truth) < 1e-6, (got, truth)
    # the constructed edge: 99 % of the energy of two flat bands (2.5 and 3.5 kHz) lies below
    # ~3.48 kHz; the broadband rest of the recording (read by a window later in it) is not seen
    assert 3400.0 < got < 3500.0, got
    assert f99(x[head:, 0]) > 7500.0
    # one channel alone, and the file's channels averaged
    one = sb.recording_bandwidth_hz([(str(p), 0)], SR)
    assert one is not None and abs(one - f99(x[:head, 0])) < 1e-6 and one < 2500.0
    mono = sb.recording_bandwidth_hz([(str(p), None)], SR)
    assert mono is not None and abs(mono - f99(x[:head].mean(axis=1))) < 1e-3


def test_cached_per_recording_and_measured_again_when_rewritten(tmp_path: Path) -> None:
    p = tmp_path / "rec.wav"
    recording(p, (2000.0, 2000.0))
    tracks = [(str(p), 0), (str(p), 1)]
    first = sb.recording_bandwidth_hz(tracks, SR)
    assert first is not None and first < 2000.0
    calls = []
    real = sb.energy_bandwidth_hz

    def counting(x: np.ndarray, sr: int) -> float | None:
        calls.append(len(x))
        return real(x, sr)

    sb.energy_bandwidth_hz = counting  # type: ignore[assignment]
    try:
        assert sb.recording_bandwidth_hz(tracks, SR) == first  # cached: nothing measured
        assert calls == []
        st = os.stat(p)
        recording(p, (6000.0, 6000.0))  # rewritten: measured again
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
        again = sb.recording_bandwidth_hz(tracks, SR)
        assert len(calls) == 1 and calls[0] == 2 * int(sb.SPAN_S * SR)
        assert again is not None and 5800.0 < again < 6000.0
        # another rate is another measurement
        sb.recording_bandwidth_hz(tracks, 8000)
        assert len(calls) == 2
    finally:
        sb.energy_bandwidth_hz = real  # type: ignore[assignment]


def test_short_and_silent_recordings(tmp_path: Path) -> None:
    short = tmp_path / "short.wav"
    sf.write(short, np.full(100, 0.1, np.float32), SR)
    assert sb.recording_bandwidth_hz([(str(short), None)], SR) is None
    silent = tmp_path / "silent.wav"
    sf.write(silent, np.zeros(SR * 2, np.float32), SR)
    assert sb.recording_bandwidth_hz([(str(silent), None)], SR) is None
    assert sb.BandwidthRecord(None, 4000.0).as_provenance() == {
        "source_hz": None,
        "limit_hz": 4000.0,
    }
    assert sb.BandwidthRecord(3456.789, None).as_provenance() == {
        "source_hz": 3456.8,
        "limit_hz": None,
    }
