"""Signals with known speech edges, for calibrating :mod:`duetflow.audio.edges` by construction.

Every utterance is a sum of *components*, each a unit-power carrier times an amplitude envelope
written in closed form: a voiced harmonic complex (syllabic modulation, a raised-cosine attack),
optional aspiration before the voicing (a breathy onset: speech), and one ending:

* ``abrupt``: the voicing releases in 5–20 ms;
* ``decay``: the voicing decays exponentially 20–35 dB under its level over 50–150 ms, then
  releases in 10 ms;
* ``fricative``: the voicing releases and a fricative noise 20–35 dB under the voiced level,
  50–150 ms long, ends the word;
* ``reverb``: the voicing releases and a reverberant tail 8–15 dB under it decays
  exponentially (T60 0.15–0.6 s, so 100–300 ms above a typical floor) until it is far below
  any floor.

A quiet plateau (a fricative, aspiration, the last level of a decay) is drawn at least 6 dB
clear of the floor, above or below: a sound that hovers within a few dB of a floor has no edge
that a listener, or any energy measure on a 10 ms scale, can place to ±10 ms. Decays and tails
pass through the floor's level as they do in rooms.

Some utterances are preceded by a **breath intake** (band noise at -55…-45 dBFS, 0.2–0.45 s,
ending 30–150 ms before the attack). A breath is not speech: it carries no word, and a
listener hears the word start at the voicing.

Floors: digital zero, white, pink, brown (1/f², rolled off below 60 Hz as a room's rumble
is), and 50 or 60 Hz hum with harmonics over a weak pink floor, from -75 to -45 dBFS; sample
rates 8–48 kHz. The sum is quantised to 16 bits as a file would hold it.

**Truth** is physical and computed from the construction alone: the speech power at a sample is
the sum of its components' squared envelopes (carriers have unit power); an utterance's onset is
the first sample where that power reaches the floor's power and its offset the sample after the
last one (a tail that sinks into the floor ends, for a listener, where it meets the floor).
Where the floor is digital silence the absolute floor of the edge module stands in
(:data:`duetflow.audio.edges.ABSOLUTE_FLOOR_DB`). No envelope of the signal is measured.

It lives in ``audio/`` next to the module it calibrates: pure signal construction (numpy and
:mod:`duetflow.audio.edges` only, no config, no model, no files), used by the calibration and
rendering tests and by bench/, never by the pipeline or the demo corpora.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from duetflow.audio.edges import ABSOLUTE_FLOOR_DB

F64 = npt.NDArray[np.float64]

FLOOR_KINDS = ("digital", "white", "pink", "brown", "hum50", "hum60")
ONSETS = ("sharp", "soft", "breathy", "breath")
ENDINGS = ("abrupt", "decay", "fricative", "reverb")
SAMPLE_RATES = (8000, 11025, 16000, 22050, 24000, 44100, 48000)
_TAIL_FLOOR_DB = -130.0
#: Quiet plateaus (a fricative, aspiration, the end of a decay) lie at least this far above or
#: below the floor.
CLEARANCE_DB = 6.0  # tails are generated until they are this far down (dBFS)


def _amp(db: float) -> float:
    return float(10.0 ** (db / 20.0))


def _band_noise(n: int, sr: int, lo_hz: float, hi_hz: float, rng: np.random.Generator) -> F64:
    """Unit-power noise band-limited to ``[lo_hz, hi_hz]`` (clipped below Nyquist)."""
    if n <= 0:
        return np.zeros(0)
    spec = np.fft.rfft(rng.standard_normal(n))
    f = np.fft.rfftfreq(n, 1.0 / sr)
    hi_hz = min(hi_hz, 0.45 * sr)
    lo_hz = min(lo_hz, 0.5 * hi_hz)
    spec[(f < lo_hz) | (f > hi_hz)] = 0
    x = np.fft.irfft(spec, n)
    return x / (math.sqrt(float(np.mean(x * x))) + 1e-30)


def _harmonic(n: int, sr: int, f0: float, rng: np.random.Generator) -> F64:
    """Unit-power voiced carrier: harmonics of a drifting f0 with a vowel-like spectral shape."""
    t = np.arange(n) / sr
    drift = 1.0 + 0.04 * np.sin(2 * np.pi * float(rng.uniform(0.3, 1.2)) * t + rng.uniform(0, 6))
    phase = 2 * np.pi * np.cumsum(f0 * drift) / sr
    formants = (float(rng.uniform(400, 800)), float(rng.uniform(1000, 2200)), 2800.0)
    x = np.zeros(n)
    total = 0.0
    k = 1
    while k * f0 < min(4500.0, 0.45 * sr):
        fk = k * f0
        w = 1.0 / k**0.6
        w *= sum(1.0 / (1.0 + ((fk - fm) / 150.0) ** 2) for fm in formants) + 0.1
        x += w * np.sin(k * phase + float(rng.uniform(0, 2 * np.pi)))
        total += w * w / 2
        k += 1
    return x / math.sqrt(total)


def _floor_noise(kind: str, n: int, sr: int, level_db: float, rng: np.random.Generator) -> F64:
    if kind == "digital" or n <= 0:
        return np.zeros(max(n, 0))
    f = np.fft.rfftfreq(n, 1.0 / sr)
    f[0] = f[1] if n > 1 else 1.0
    if kind in ("white", "pink", "brown"):
        spec = np.fft.rfft(rng.standard_normal(n))
        if kind == "pink":
            spec /= np.sqrt(np.maximum(f, 20.0))
        elif kind == "brown":
            spec /= np.maximum(f, 60.0)
        x = np.fft.irfft(spec, n)
    else:
        base = 50.0 if kind == "hum50" else 60.0
        t = np.arange(n) / sr
        x = np.zeros(n)
        for h, g in ((1, 1.0), (2, 0.5), (3, 0.35), (5, 0.15)):
            x += g * np.sin(2 * np.pi * base * h * t + float(rng.uniform(0, 2 * np.pi)))
        x /= math.sqrt(float(np.mean(x * x)))
        pink = np.fft.irfft(np.fft.rfft(rng.standard_normal(n)) / np.sqrt(np.maximum(f, 20.0)), n)
        x += 0.3 * pink / math.sqrt(float(np.mean(pink * pink)))
    x -= float(np.mean(x))
    return x * (_amp(level_db) / math.sqrt(float(np.mean(x * x))))


def _raised(n: int) -> F64:
    """Raised-cosine rise of ``n`` samples from 0 (exclusive) to 1 (exclusive)."""
    if n <= 0:
        return np.zeros(0)
    return 0.5 - 0.5 * np.cos(np.pi * (np.arange(n) + 0.5) / n)


@dataclass(frozen=True)
class Utterance:
    """One constructed utterance in the signal: truth edges and a loose annotation (samples)."""

    onset: int
    offset: int
    hint: tuple[int, int]
    onset_kind: str
    ending: str
    level_db: float


@dataclass(frozen=True)
class Construction:
    """A constructed signal and its truth."""

    samples: npt.NDArray[np.float32]  # 16-bit quantised mix
    sr: int
    floor_kind: str
    floor_db: float  # the truth's floor level (the absolute floor for digital silence)
    utterances: tuple[Utterance, ...]
    speech: F64 = field(repr=False)  # the speech components alone (no breath, no floor)
    powers: tuple[tuple[int, F64], ...] = field(default=(), repr=False)  # per utterance:
    # (first sample, its speech power sample by sample, from the envelopes)

    def edges_at(self, k: int, floor_power: float, gain: float = 1.0) -> tuple[int, int]:
        """Utterance ``k``'s truth edges were its speech heard ``gain`` (power ratio) louder
        over a floor of ``floor_power``: the first and one past the last sample where its own
        envelope power reaches it."""
        at, power = self.powers[k]
        above = np.flatnonzero(power * gain >= floor_power)
        return at + int(above[0]), at + int(above[-1]) + 1


@dataclass
class _Piece:
    speech: F64  # speech waveform, relative timeline
    power: F64  # speech power (sum of squared component envelopes)
    breath: F64  # breath waveform (not speech)
    attack: int  # sample where the voicing attack starts


def _clear(delta: float, lo: float, hi: float, level_db: float, floor_db: float) -> float:
    """``delta`` (dB under ``level_db``), moved within ``[lo, hi]`` so that the quiet part it
    sets lies at least :data:`CLEARANCE_DB` above or below the floor (see the module doc)."""
    quiet = level_db - delta
    if abs(quiet - floor_db) >= CLEARANCE_DB:
        return delta
    for d in sorted((level_db - floor_db - CLEARANCE_DB, level_db - floor_db + CLEARANCE_DB),
                    key=lambda d: abs(d - delta)):  # fmt: skip
        if lo <= d <= hi:
            return d
    return delta


def _utterance(
    sr: int,
    rng: np.random.Generator,
    level_db: float,
    onset: str,
    ending: str,
    core_s: float,
    floor_db: float,
) -> _Piece:
    amp = _amp(level_db)
    pre = int(0.6 * sr)  # room for aspiration and breath before the attack
    attack = int(
        float(rng.uniform(0.005, 0.015) if onset != "soft" else rng.uniform(0.02, 0.05)) * sr
    )
    core = int(core_s * sr)
    # ending lengths
    release = int(float(rng.uniform(0.005, 0.02)) * sr)
    tail = int(1.5 * sr)  # enough for the slowest tail to sink under -130 dBFS
    n = pre + attack + core + release + tail
    t0 = pre
    a_v = np.zeros(n)
    a_v[t0 : t0 + attack] = _raised(attack)
    c0, c1 = t0 + attack, t0 + attack + core
    depth = float(rng.uniform(3.0, 12.0))
    rate = float(rng.uniform(3.0, 5.5))
    tt = np.arange(core) / sr
    mod = -depth * (0.5 - 0.5 * np.cos(2 * np.pi * rate * tt + float(rng.uniform(0, 6.28))))
    a_v[c0:c1] = 10.0 ** (mod / 20.0)
    end_level = a_v[c1 - 1]
    comps: list[tuple[F64, F64]] = []  # (carrier, amplitude envelope)
    end_db = level_db + 20.0 * math.log10(max(float(end_level), 1e-9))
    if ending == "decay":
        delta = _clear(float(rng.uniform(20.0, 35.0)), 20.0, 35.0, end_db, floor_db)
        dur = int(float(rng.uniform(0.05, 0.15)) * sr)
        k = np.arange(dur) / dur
        a_v[c1 : c1 + dur] = end_level * 10.0 ** (-delta * k / 20.0)
        r = int(0.01 * sr)
        a_v[c1 + dur : c1 + dur + r] = end_level * _amp(-delta) * _raised(r)[::-1]
    else:
        rel = release if ending == "abrupt" else int(float(rng.uniform(0.01, 0.02)) * sr)
        a_v[c1 : c1 + rel] = end_level * _raised(rel)[::-1]
        if ending == "fricative":
            delta = _clear(float(rng.uniform(20.0, 35.0)), 20.0, 35.0, level_db, floor_db)
            dur = int(float(rng.uniform(0.05, 0.15)) * sr)
            r = int(0.01 * sr)
            f0_ = c1 - int(0.01 * sr)
            a_f = np.zeros(n)
            a_f[f0_ : f0_ + r] = _raised(r)
            a_f[f0_ + r : f0_ + dur - r] = 1.0
            a_f[f0_ + dur - r : f0_ + dur] = _raised(r)[::-1]
            comps.append((_band_noise(n, sr, 2500.0, 7500.0, rng), a_f * _amp(-delta)))
        elif ending == "reverb":
            below = float(rng.uniform(8.0, 15.0))
            t60 = float(rng.uniform(0.15, 0.6))
            span = int((_TAIL_FLOOR_DB - (level_db - below)) / (-60.0 / t60) * sr)
            span = min(span, n - c1)
            r = int(0.005 * sr)
            a_r = np.zeros(n)
            a_r[c1 : c1 + r] = _raised(r)
            k = np.arange(span - r) / sr
            a_r[c1 + r : c1 + span] = 10.0 ** (-60.0 / t60 * k / 20.0)
            a_r *= end_level * _amp(-below)
            comps.append((_band_noise(n, sr, 150.0, 3500.0, rng), a_r))
    if onset == "breathy":
        dur = int(float(rng.uniform(0.03, 0.08)) * sr)
        r = int(0.01 * sr)
        a_h = np.zeros(n)
        s = t0 - dur + r
        a_h[s : s + r] = _raised(r)
        a_h[s + r : t0 + r] = 1.0
        a_h[t0 + r : t0 + 2 * r] = _raised(r)[::-1]
        below = _clear(float(rng.uniform(15, 25)), 15.0, 25.0, level_db, floor_db)
        comps.append((_band_noise(n, sr, 500.0, 5000.0, rng), a_h * _amp(-below)))
    comps.insert(0, (_harmonic(n, sr, float(rng.uniform(90.0, 260.0)), rng), a_v))
    speech = np.zeros(n)
    power = np.zeros(n)
    for carrier, env in comps:
        speech += carrier * env * amp
        power += (env * amp) ** 2
    breath = np.zeros(n)
    if onset == "breath":
        dur = int(float(rng.uniform(0.2, 0.45)) * sr)
        gap = int(float(rng.uniform(0.03, 0.15)) * sr)
        end = t0 - gap
        r = int(0.05 * sr)
        a_b = np.zeros(n)
        a_b[end - dur : end - dur + r] = _raised(r)
        a_b[end - dur + r : end - r] = 1.0
        a_b[end - r : end] = _raised(r)[::-1]
        level = float(rng.uniform(-55.0, -45.0))
        breath = _band_noise(n, sr, 400.0, 2500.0, rng) * a_b * _amp(level)
    return _Piece(speech, power, breath, t0)


def _truth(power: F64, floor_power: float) -> tuple[int, int]:
    above = np.flatnonzero(power >= floor_power)
    return int(above[0]), int(above[-1]) + 1


def construct(
    seed: int,
    *,
    sr: int | None = None,
    floor_kind: str | None = None,
    floor_db: float | None = None,
    gaps_s: tuple[float, ...] | None = None,
    n_utterances: int = 3,
) -> Construction:
    """A seeded signal of ``n_utterances`` utterances separated by known acoustic gaps.

    Unset parameters are drawn from the seed: sample rate from :data:`SAMPLE_RATES`, floor kind
    from :data:`FLOOR_KINDS`, floor level from -75…-45 dBFS (at least 20 dB under the speech),
    gaps (truth offset → next truth onset) from 0.15–0.8 s. Annotations (``Utterance.hint``) are
    loose: they start up to 0.2 s early or 0.05 s late and end up to 0.1 s early or 0.2 s late,
    never reaching into the neighbour's speech.
    """
    rng = np.random.default_rng(seed)
    sr = sr or int(rng.choice(SAMPLE_RATES))
    floor_kind = floor_kind or str(rng.choice(FLOOR_KINDS))
    levels = [float(rng.uniform(-22.0, -10.0)) for _ in range(n_utterances)]
    if floor_db is None:
        floor_db = float(rng.uniform(-75.0, min(-45.0, min(levels) - 20.0)))
    truth_floor = ABSOLUTE_FLOOR_DB if floor_kind == "digital" else floor_db
    fp = 10.0 ** (truth_floor / 10.0)
    if gaps_s is None:
        gaps_s = tuple(float(rng.uniform(0.15, 0.8)) for _ in range(n_utterances - 1))
    pieces, truths = [], []
    for k in range(n_utterances):
        onset = str(rng.choice(ONSETS))
        if onset == "breath" and k > 0 and gaps_s[k - 1] < 0.55:
            onset = "sharp"  # a breath needs room in the pause before it
        ending = str(rng.choice(ENDINGS))
        core_s = float(rng.uniform(0.6, 1.6))
        p = _utterance(sr, rng, levels[k], onset, ending, core_s, truth_floor)
        pieces.append((p, onset, ending))
        truths.append(_truth(p.power, fp))
    # place: the first onset after a lead-in, each next onset a gap after the previous offset
    lead = int(0.8 * sr)
    starts = [lead - truths[0][0]]
    for k in range(1, n_utterances):
        off = starts[k - 1] + truths[k - 1][1]
        starts.append(off + int(round(gaps_s[k - 1] * sr)) - truths[k][0])
    total = max(s + len(p.speech) for s, (p, _, _) in zip(starts, pieces, strict=True))
    total = max(total, starts[-1] + truths[-1][1] + int(0.8 * sr))
    speech = np.zeros(total)
    breath = np.zeros(total)
    for s, (p, _, _) in zip(starts, pieces, strict=True):
        m = min(len(p.speech), total - s)
        speech[s : s + m] += p.speech[:m]
        breath[s : s + m] += p.breath[:m]
    x = speech + breath + _floor_noise(floor_kind, total, sr, floor_db, rng)
    q = np.clip(np.round(x * 32767.0), -32768, 32767) / 32767.0
    utts: list[Utterance] = []
    for k, (s, (_, onset, ending)) in enumerate(zip(starts, pieces, strict=True)):
        on, off = s + truths[k][0], s + truths[k][1]
        room_before = (on - (starts[k - 1] + truths[k - 1][1])) if k else on
        room_after = (starts[k + 1] + truths[k + 1][0] - off) if k + 1 < n_utterances else sr
        h0 = on - int(min(float(rng.uniform(-0.05, 0.2)) * sr, 0.4 * room_before))
        h1 = off + int(min(float(rng.uniform(-0.1, 0.2)) * sr, 0.4 * room_after))
        utts.append(Utterance(on, off, (h0, h1), onset, ending, levels[k]))
    powers = tuple((s, p.power) for s, (p, _, _) in zip(starts, pieces, strict=True))
    return Construction(
        q.astype(np.float32), sr, floor_kind, truth_floor, tuple(utts), speech, powers
    )
