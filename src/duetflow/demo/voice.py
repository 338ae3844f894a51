"""A small speech-like signal synthesiser for sample corpora, studio sessions and TTS stand-ins.

No real speech can be shipped, yet VAD, turn analysis, loudness and speaker-similarity code all
need signals that *behave* like speech. :func:`speech` builds one the way a source-filter model
does: a glottal pulse train following a pitch contour (per-syllable targets, declination,
vibrato-free drift), shaped by formant resonators that change vowel every syllable, gated by a
~4 Hz syllable envelope with short fricative bursts and short pauses. WebRTC VAD detects it as
speech, and two :class:`Voice` objects with different F0 and formants are separable by
spectral statistics (MFCC means, speaker encoders).

Everything is deterministic given the ``numpy.random.Generator`` passed in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy.signal import lfilter

from duetflow.audio.io import resample

Signal = npt.NDArray[np.float32]

#: vowel formant ratios relative to a neutral schwa (500, 1500, 2500 Hz): a, e, i, o, u, schwa
_VOWELS: tuple[tuple[float, float, float], ...] = (
    (1.46, 0.73, 0.98),
    (1.06, 1.23, 0.99),
    (0.54, 1.53, 1.20),
    (1.14, 0.56, 0.96),
    (0.60, 0.58, 0.90),
    (1.00, 1.00, 1.00),
)
_BANDWIDTHS = (80.0, 110.0, 160.0)
_SYNTH_RATE = 16000


@dataclass(frozen=True)
class Voice:
    """A synthetic speaker: mean pitch, neutral-vowel formants (F1, F2, F3) and gender."""

    f0_hz: float
    formants: tuple[float, float, float]
    gender: Literal["M", "F"]
    name: str = ""


MALE = Voice(115.0, (500.0, 1450.0, 2450.0), "M", "male")
FEMALE = Voice(215.0, (620.0, 1800.0, 2950.0), "F", "female")


def random_voice(rng: np.random.Generator, gender: Literal["M", "F"], name: str = "") -> Voice:
    """A voice of ``gender`` with pitch (±12%) and formants (±6%) jittered around the preset."""
    base = MALE if gender == "M" else FEMALE
    k = float(rng.uniform(0.94, 1.06))
    f1, f2, f3 = (round(f * k, 1) for f in base.formants)
    return Voice(round(base.f0_hz * float(rng.uniform(0.88, 1.12)), 1), (f1, f2, f3), gender, name)


def db_to_amp(db: float) -> float:
    return float(10 ** (db / 20.0))


def _rms(x: npt.NDArray[np.floating]) -> float:
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64)))) if x.size else 0.0


def _smooth(x: npt.NDArray[np.float64], k: int) -> npt.NDArray[np.float64]:
    """Centred moving average of width ``k`` (edges keep the raw values); O(n) via cumsum."""
    if k <= 1 or len(x) <= k:
        return x.copy()
    c = np.cumsum(np.concatenate([[0.0], x]))
    out = x.copy()
    h = k // 2
    out[h : len(x) - (k - h) + 1] = (c[k:] - c[:-k]) / k
    return out


def _resonator(freq: float, bw: float, sr: int) -> tuple[list[float], list[float]]:
    r = math.exp(-math.pi * bw / sr)
    theta = 2 * math.pi * freq / sr
    a = [1.0, -2 * r * math.cos(theta), r * r]
    gain = (1 - r) * math.sqrt(1 - 2 * r * math.cos(2 * theta) + r * r)
    return [gain], a


def _syllables(duration_s: float, rng: np.random.Generator) -> list[tuple[float, float]]:
    """Syllable (start, end) times covering [0, duration]: ~4 Hz, with short pauses (<0.25 s)."""
    out: list[tuple[float, float]] = []
    t = 0.0
    while True:
        length = float(rng.uniform(0.14, 0.30))
        if duration_s - (t + length) < 0.12:  # last syllable ends exactly at the end
            length = duration_s - t
            out.append((t, duration_s))
            break
        out.append((t, t + length))
        t += length
        t += float(rng.uniform(0.09, 0.22)) if rng.random() < 0.18 else float(rng.uniform(0, 0.02))
        if duration_s - t < 0.12:
            s, _ = out.pop()
            out.append((s, duration_s))
            break
    return out


def speech(
    duration_s: float,
    sr: int,
    voice: Voice,
    rng: np.random.Generator,
    level_dbfs: float = -20.0,
) -> Signal:
    """Speech-like mono float32 signal of ``duration_s`` seconds; voiced from start to end.

    The first syllable starts at sample 0 and the last ends at the last sample (10 ms ramps), so
    the speech region is exactly ``[0, duration_s]``; internal pauses are shorter than 0.25 s,
    i.e. shorter than the usual VAD bridging. ``level_dbfs`` is the RMS over the whole signal.
    """
    n = int(round(duration_s * sr))
    if n <= 0:
        return np.zeros(0, dtype=np.float32)
    if sr > _SYNTH_RATE:  # speech content ends below 8 kHz: synthesise at 16 kHz, upsample
        low = speech(duration_s, _SYNTH_RATE, voice, rng, level_dbfs)
        up = resample(low, _SYNTH_RATE, sr)
        out32 = np.zeros(n, dtype=np.float32)
        out32[: min(n, len(up))] = up[:n]
        return out32
    sylls = [(0.0, duration_s)] if duration_s < 0.12 else _syllables(duration_s, rng)
    t = np.arange(n, dtype=np.float64) / sr

    # pitch: per-syllable targets, smoothed, with phrase declination and slow drift
    targets = np.empty(n, dtype=np.float64)
    for s, e in sylls:
        a, b = int(s * sr), max(int(s * sr) + 1, int(e * sr))
        targets[a:b] = voice.f0_hz * float(rng.uniform(0.88, 1.14))
    last = targets[0]
    edges = [int(s * sr) for s, _ in sylls] + [n]
    for i in range(len(sylls)):  # fill pauses with the previous target
        a, b = edges[i], edges[i + 1]
        seg = targets[a:b]
        gap_start = int(sylls[i][1] * sr)
        if gap_start < b:
            seg[gap_start - a :] = last
        last = seg[0]
    f0 = _smooth(targets, max(1, int(0.06 * sr)))
    drift = 1.0 + 0.03 * np.sin(2 * np.pi * 0.7 * t + float(rng.uniform(0, 6.28)))
    declination = 1.0 - 0.08 * (t % 3.0) / 3.0
    f0 = f0 * drift * declination

    # glottal source: Rosenberg pulse derivative following the pitch contour
    phase = np.cumsum(f0) / sr + float(rng.uniform(0, 1))
    p = phase % 1.0
    g = np.where(
        p < 0.4,
        0.5 * (1 - np.cos(np.pi * p / 0.4)),
        np.where(p < 0.56, np.cos(np.pi * (p - 0.4) / 0.32), 0.0),
    )
    source = np.diff(g, prepend=g[0])
    source = source / (np.std(source) + 1e-12)
    source += 0.08 * rng.standard_normal(n)  # aspiration

    out = np.zeros(n, dtype=np.float64)
    noise = rng.standard_normal(n)
    hp_b, hp_a = [1.0, -1.0], [1.0, -0.6]  # crude high-pass for fricatives
    for s, e in sylls:
        a, b = int(round(s * sr)), min(n, max(int(round(e * sr)), int(round(s * sr)) + 2))
        vowel = _VOWELS[int(rng.integers(len(_VOWELS)))]
        seg = source[a:b]
        for (ratio, bw), fm in zip(
            zip(vowel, _BANDWIDTHS, strict=True), voice.formants, strict=True
        ):
            freq = fm * ratio
            if freq < 0.45 * sr:
                bb, aa = _resonator(freq, bw, sr)
                seg = lfilter(bb, aa, seg)
        m = b - a
        x = np.linspace(0.0, 1.0, m, endpoint=False) + 0.5 / m
        env = np.sin(np.pi * x) ** 0.5
        syl = seg * env
        if rng.random() < 0.55 and m > int(0.08 * sr):  # consonant burst at the onset
            c = int(float(rng.uniform(0.03, 0.07)) * sr)
            burst = lfilter(hp_b, hp_a, noise[a : a + c]) * np.hanning(c) * 0.35
            syl[:c] += burst * (_rms(seg) / (_rms(burst) + 1e-12)) * 0.5
        out[a:b] += syl
    ramp = min(n // 2, int(0.01 * sr))
    if ramp > 0:
        r = np.linspace(0.0, 1.0, ramp)
        out[:ramp] *= r
        out[n - ramp :] *= r[::-1]
    out *= db_to_amp(level_dbfs) / (_rms(out) + 1e-12)
    peak = float(np.max(np.abs(out)))
    if peak > 0.95:
        out *= 0.95 / peak
    return out.astype(np.float32)


def room_tone(duration_s: float, sr: int, level_dbfs: float, rng: np.random.Generator) -> Signal:
    """Low-level pinkish background noise at ``level_dbfs`` RMS (e.g. −60…−50 dBFS)."""
    n = int(round(duration_s * sr))
    if n <= 0:
        return np.zeros(0, dtype=np.float32)
    white = rng.standard_normal(n)
    brown = np.asarray(lfilter([1.0], [1.0, -0.97], white), dtype=np.float64)
    x = 0.5 * white / (np.std(white) + 1e-12) + brown / (np.std(brown) + 1e-12)
    x = x - np.mean(x)
    x *= db_to_amp(level_dbfs) / (_rms(x) + 1e-12)
    tone: Signal = x.astype(np.float32)
    return tone
