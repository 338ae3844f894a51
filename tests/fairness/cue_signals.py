"""Constructed dialogues with known cues: voiced 'speech' turns over a room tone.

Each dialogue: lead-in, four alternating turns (harmonic voices with a syllable envelope and a
little breath noise, full band up to the Nyquist frequency), gaps of 180-230 ms, a tail, over
pink-ish room tone at about -60 dBFS. Everything varies a little per dialogue (seeded by its
id), so a category is a distribution, not one point. The planted differences are the ones the
issue names: a band-limit of the channel (voice and room tone low-passed as the renderer does), an
overlap at a speaker change, a 6 dB floor step; and a voice change through the same channel (the
voices low-passed, the room tone not), which the channel's cues must not take for a band-limit;
and the true-peak ceiling (issue 25): voices with sharper peaks (bursts at a given level), the
file turned down to a ceiling as the renderer does, or clipped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import signal

from duetflow.audio.bandlimit import lowpass
from duetflow.audio.bs1770 import ceiling_gain_db, measure
from duetflow.fairness.cues import DialogueCues, TurnSpan, measure_dialogue
from duetflow.seeding import rng_for

SR = 16000


@dataclass(frozen=True)
class Plant:
    """What to change in a category: the channel's low-pass (Hz: the whole dialogue through the
    renderer's filter), one overlap (s), a floor step (dB), or a duller voice (Hz: the voices
    alone through an 8th-order Butterworth low-pass, the room tone untouched)."""

    lowpass_hz: float | None = None
    overlap_s: float = 0.0
    floor_db: float = 0.0
    voice_lowpass_hz: float | None = None
    speech_lufs: float | None = (
        None  # both voices brought to this BS.1770 loudness, as rendering does
    )
    #: after the loudness: three 2 ms bursts per turn peaking at this level (dBFS), a voice
    #: with sharper peaks (its crest factor)
    burst_dbfs: float | None = None
    #: then the whole file turned down so its true peak is at most this (dBTP), as the
    #: renderer's ``render.true_peak_ceiling_dbtp`` does (a static gain, never clipping)
    ceiling_dbtp: float | None = None
    #: then clipped at full scale (a file written past its ceiling)
    clip: bool = False


def room_tone(rng: np.random.Generator, n: int, level_db: float) -> np.ndarray:
    """Pink-ish noise (white through a one-pole low-pass) at ``level_db`` dBFS RMS."""
    white = rng.standard_normal(n)
    pink = signal.lfilter([1.0], [1.0, -0.9], white)
    return pink / np.sqrt(np.mean(pink**2)) * 10 ** (level_db / 20)


def voice(rng: np.random.Generator, n: int) -> np.ndarray:
    """A harmonic voice (f0 100-220 Hz, harmonics to Nyquist, -6 dB/oct) with syllables."""
    t = np.arange(n) / SR
    f0 = rng.uniform(100, 220) * (1 + 0.05 * np.sin(2 * np.pi * 0.7 * t))
    phase = 2 * np.pi * np.cumsum(f0) / SR
    x = np.zeros(n)
    for k in range(1, int(SR / 2 / 220)):
        x += np.sin(k * phase + rng.uniform(0, 2 * np.pi)) / k
    syll = 0.5 * (1 - np.cos(2 * np.pi * rng.uniform(3.5, 5.0) * t)) ** 1.0
    breath = 0.05 * rng.standard_normal(n)
    y = (x * (0.2 + 0.8 * syll) + breath) * 0.1
    ramp = min(n // 4, int(0.01 * SR))
    env = np.ones(n)
    env[:ramp] = np.linspace(0, 1, ramp)
    env[n - ramp :] = np.linspace(1, 0, ramp)
    return y * env


def dialogue(
    did: str, category: str, plant: Plant = Plant(), language: str = "en"
) -> tuple[np.ndarray, list[TurnSpan]]:
    """Samples and turns of one constructed dialogue."""
    rng = rng_for(11, did)
    lead = rng.uniform(0.15, 0.25)
    t = lead
    spans = []
    for i in range(4):
        length = rng.uniform(1.0, 1.6)
        if i > 0:
            gap = rng.uniform(0.18, 0.23)
            if i == 2 and plant.overlap_s > 0:
                gap = -plant.overlap_s
            t += gap
        spans.append(("A" if i % 2 == 0 else "B", t, t + length))
        t += length
    dur = t + rng.uniform(0.15, 0.25)
    n = int(round(dur * SR))
    x = room_tone(rng, n, -60 + rng.uniform(-1, 1) + plant.floor_db)
    turns = []
    voices = []
    for i, (spk, s, e) in enumerate(spans):
        a, b = int(round(s * SR)), int(round(e * SR))
        v = voice(rng, b - a)
        if plant.voice_lowpass_hz is not None:
            sos = signal.butter(8, plant.voice_lowpass_hz, fs=SR, output="sos")
            v = signal.sosfilt(sos, v)
        voices.append((a, b, v))
        turns.append(TurnSpan(spk, "turn", s, e, f"turn {i} " + "word " * int(rng.integers(4, 9))))
    gain = 1.0
    if plant.speech_lufs is not None:
        got = measure(np.concatenate([v for _, _, v in voices]).astype(np.float32), SR).lufs
        gain = 10 ** ((plant.speech_lufs - got) / 20)
    for a, b, v in voices:
        x[a:b] += gain * v
        if plant.burst_dbfs is not None:
            n_b = int(0.002 * SR)
            burst = np.hanning(n_b) * np.sin(2 * np.pi * 1000 * np.arange(n_b) / SR)
            burst *= 10 ** (plant.burst_dbfs / 20) / np.max(np.abs(burst))
            for at in rng.uniform(a, b - n_b, 3).astype(int):
                x[at : at + n_b] += burst
    if plant.lowpass_hz is not None:
        x = lowpass(x, SR, plant.lowpass_hz)
    if plant.ceiling_dbtp is not None:
        x = x * 10 ** (ceiling_gain_db(x.astype(np.float32), SR, plant.ceiling_dbtp) / 20)
    if plant.clip:
        x = np.clip(x, -1.0, 1.0)
    return np.asarray(x, dtype=np.float32), turns


def cues_of(did: str, category: str, plant: Plant = Plant(), language: str = "en") -> DialogueCues:
    x, turns = dialogue(did, category, plant, language)
    return measure_dialogue(
        x,
        SR,
        turns,
        dialogue_id=did,
        corpus="constructed",
        category=category,
        language=language,
        speakers=("A", "B"),
    )


def category(
    name: str, n: int, plant: Plant = Plant(), *, prefix: str = "", language: str = "en"
) -> list[DialogueCues]:
    """``n`` constructed dialogues of one category (ids ``<prefix or name>-<i>``)."""
    tag = prefix or name
    return [cues_of(f"{tag}-{i}", name, plant, language) for i in range(n)]
