"""Two-speaker recordings with speech edges known by construction, annotated with known slack,
in the on-disk shapes of the real corpora (shared/reference/corpora.md):

* ``iemocap``: one 16 kHz 16-bit stereo WAV, one speaker per channel, each channel holding the
  other speaker's voice at -14 dB (crosstalk) over its own room tone;
* ``ramc``: one 16 kHz 16-bit mono WAV, both speakers mixed (MagicData-RAMC), a non-party
  ``G00000000`` noise segment;
* ``dailytalk``: one 22.05 kHz mono WAV per turn, each clip padded with 100–400 ms of floor
  before and after the speech (its turn is the whole clip, laid end to end);
* ``studio``: one 48 kHz mono FLAC mix with hum under the room tone, turns as an RTTM would
  give them;
* ``studio_tracks``: a 48 kHz FLAC per party (mic + system line-out), the mic picking up the
  loudspeaker at -30 dB.

Speech is :func:`duetflow.demo.voice.speech` (voiced from its first sample to its last), so a
turn's true extent is where its signal was placed. Annotations are the truth widened by slack:
per boundary U[20, 250] ms in separable layouts; in mono mixes one typical slack per dialogue
(drawn in [60, 200] ms) with ±30 ms of jitter per boundary, as one annotator's habit (the slack
correction can only undo a dialogue's typical slack, docs/turn-taking.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from duetflow.audio.io import resample
from duetflow.demo.voice import FEMALE, MALE, room_tone, speech
from duetflow.records.dialogue import (
    AudioSource,
    Category,
    Dialogue,
    MixedMonoSource,
    MultichannelSource,
    PerSpeakerSource,
    PerTurnSource,
    Speaker,
    Turn,
    TurnKind,
)
from duetflow.tts.espeak import speak

LAYOUTS = ("iemocap", "ramc", "dailytalk", "studio", "studio_tracks")
#: the layouts whose timeline can hold overlaps (a clip-per-turn corpus lays clips end to end)
OVERLAPPING = ("iemocap", "ramc", "studio", "studio_tracks")
MONO = ("ramc", "studio")
RATES = {"iemocap": 16000, "ramc": 16000, "dailytalk": 22050, "studio": 48000,
         "studio_tracks": 48000}  # fmt: skip
LEVELS = {"A": -20.0, "B": -26.0}
#: room tone per layout (dBFS RMS)
FLOOR_DB = {"iemocap": -55.0, "ramc": -52.0, "dailytalk": -60.0, "studio": -52.0,
            "studio_tracks": -58.0}  # fmt: skip


@dataclass(frozen=True)
class Planned:
    """One turn: true speech ``[start, start + dur]`` (s) on the dialogue timeline."""

    speaker: str
    start: float
    dur: float

    @property
    def end(self) -> float:
        return self.start + self.dur


def plan(
    seed: int, *, terminal: int = 3, interruption: bool = False, n: int = 10
) -> tuple[list[Planned], list[int]]:
    """Alternating turns of 2.2–4 s with pauses of 0.35–0.9 s; ``terminal`` speaker changes are
    true terminal overlaps of 80–250 ms; with ``interruption`` one change is a mid-turn
    floor-taking interruption (the host talks on 0.6–1.0 s over the listener, then stops
    mid-word). Returns the turns and the indices of the turns that start inside the previous
    one (the interrupter last)."""
    rng = np.random.default_rng(seed)
    kinds = ["pause"] * (n - 1)
    picks = rng.choice(np.arange(1, n - 1), size=terminal + int(interruption), replace=False)
    for k in picks[:terminal]:
        kinds[int(k)] = "terminal"
    if interruption:
        kinds[int(picks[-1])] = "interruption"
    out = [Planned("A", 0.8, float(rng.uniform(2.2, 4.0)))]
    overlapped: list[int] = []
    interrupter = -1
    for k, kind in enumerate(kinds):
        prev = out[-1]
        who = "B" if prev.speaker == "A" else "A"
        dur = float(rng.uniform(2.2, 4.0))
        if kind == "pause":
            start = prev.end + float(rng.uniform(0.35, 0.9))
        elif kind == "terminal":
            start = prev.end - float(rng.uniform(0.08, 0.25))
            overlapped.append(k + 1)
        else:  # the listener comes in; the host talks on 0.6–1.0 s, then stops mid-word
            start = prev.end - float(rng.uniform(0.6, 1.0))
            interrupter = k + 1
        out.append(Planned(who, round(start, 4), round(dur, 4)))
    return out, overlapped + ([interrupter] if interruption else [])


def _slacks(layout: str, n: int, rng: np.random.Generator, per_boundary: bool) -> np.ndarray:
    """(n, 2) slack before / after each turn (s)."""
    if layout in MONO and not per_boundary:
        base = float(rng.uniform(0.06, 0.2))
        return np.clip(base + rng.uniform(-0.03, 0.03, size=(n, 2)), 0.02, 0.25)
    return rng.uniform(0.02, 0.25, size=(n, 2))


def _floor(n: int, sr: int, level: float, rng: np.random.Generator, hum: bool) -> np.ndarray:
    x = room_tone(n / sr, sr, level, rng)[:n].astype(np.float64)
    if hum:
        t = np.arange(n) / sr
        x += 10 ** ((level - 4) / 20) * np.sqrt(2) * np.sin(2 * np.pi * 50 * t + 0.3)
    return x


@dataclass(frozen=True)
class Built:
    dialogue: Dialogue
    truth: list[tuple[float, float]]  # true speech extent of each turn (dialogue timeline)


SENTENCES = (
    "Well, I think we should go to the market tomorrow morning.",
    "Yes, that sounds fine to me, as long as we are back by noon.",
    "Did you hear what happened to the old bridge last week?",
    "No, I have not heard anything about it at all.",
    "They closed it for repairs, so the buses take the long way now.",
    "That explains why I was so late for work on Thursday.",
    "Shall we ask your sister whether she wants to come along?",
    "Sure, she loves fresh strawberries and she has a car.",
    "Then it is settled, we leave at seven sharp.",
    "Perfect, I will bring some coffee for the drive.",
    "Remember to take the shopping list from the kitchen table.",
    "I always forget it, so I took a photo of it this time.",
)


def espeak_signals(items: list[Planned], sr: int) -> list[np.ndarray]:
    """Real speech for ``items`` from eSpeak NG (one sentence each, a voice per speaker), at
    ``sr`` and each speaker's level; an item's ``dur`` is replaced by its sentence's length."""
    waves = {}
    for who, variant in (("A", "en-us+m3"), ("B", "en-us+f3")):
        texts = [SENTENCES[k % len(SENTENCES)] for k, p in enumerate(items) if p.speaker == who]
        got, rate = speak(texts, variant, 165, 50)
        waves[who] = iter([resample(np.asarray(w, np.float32), rate, sr) for w in got])
    sigs = []
    for p in items:
        x = next(waves[p.speaker]).astype(np.float64)
        nz = np.flatnonzero(np.abs(x) > 1e-5)
        x = x[nz[0] : nz[-1] + 1]
        x *= 10 ** (LEVELS[p.speaker] / 20) / np.sqrt(np.mean(x**2))
        sigs.append(x)
    return sigs


def speech_extent_truth(sig: np.ndarray, sr: int, floor_db: float) -> tuple[int, int]:
    """Where a clean signal's speech meets a floor (samples): the first and last 5 ms frame
    whose power reaches the floor's (an independent reading of the edge definition)."""
    n = max(1, int(0.005 * sr))
    m = len(sig) // n
    p = np.mean(sig[: m * n].reshape(m, n) ** 2, axis=1)
    loud = np.flatnonzero(p >= 10 ** (floor_db / 10))
    return int(loud[0]) * n, (int(loud[-1]) + 1) * n


def with_durations(items: list[Planned], sigs: list[np.ndarray], sr: int) -> list[Planned]:
    """``items`` re-laid with the signals' lengths, keeping each start's offset from the end
    of the previous item (so planned pauses and overlaps stay)."""
    out: list[Planned] = []
    for k, (p, x) in enumerate(zip(items, sigs, strict=True)):
        if k == 0:
            out.append(Planned(p.speaker, p.start, len(x) / sr))
            continue
        offset = p.start - items[k - 1].end
        out.append(Planned(p.speaker, round(out[-1].end + offset, 4), len(x) / sr))
    return out


def build(
    layout: str,
    items: list[Planned],
    root: Path,
    seed: int,
    did: str = "d",
    signals: list[np.ndarray] | None = None,
    per_boundary_slack: bool = False,
) -> Built:
    """Write ``items`` in ``layout``'s on-disk shape under ``root``; the dialogue as its
    adapter would yield it (annotated turns) and the true extents. ``signals``: the speech of
    each item (default :func:`duetflow.demo.voice.speech`, voiced from its first sample to
    its last; others are placed at the item's start, truth where they reach the floor).
    ``per_boundary_slack``: mono layouts too get independent U[20, 250] ms slack per boundary."""
    sr = RATES[layout]
    rng = np.random.default_rng(seed + 101)
    slack = _slacks(layout, len(items), rng, per_boundary_slack)
    voices = {"A": MALE, "B": FEMALE}
    if signals is None:
        sigs = [speech(p.dur, sr, voices[p.speaker], rng, LEVELS[p.speaker]) for p in items]
        inner = [(0, len(x)) for x in sigs]
    else:
        sigs = [np.asarray(x, np.float32) for x in signals]
        inner = [speech_extent_truth(x, sr, FLOOR_DB[layout]) for x in sigs]
    root.mkdir(parents=True, exist_ok=True)
    speakers = (Speaker("A"), Speaker("B"))
    if layout == "dailytalk":
        turns, truth, paths, pos = [], [], [], 0.0
        for k, (p, sig) in enumerate(zip(items, sigs, strict=True)):
            before, after = (float(v) for v in rng.uniform(0.1, 0.4, size=2))
            nb, na = int(round(before * sr)), int(round(after * sr))
            clip = _floor(nb + len(sig) + na, sr, FLOOR_DB[layout], rng, False)
            clip[nb : nb + len(sig)] += sig
            path = root / f"{k}_{0 if p.speaker == 'A' else 1}_d{seed}.wav"
            sf.write(path, clip.astype(np.float32), sr, subtype="PCM_16")
            dur = len(clip) / sr
            turns.append(Turn(p.speaker, round(pos, 6), round(pos + dur, 6), f"t{k}"))
            truth.append((pos + (nb + inner[k][0]) / sr, pos + (nb + inner[k][1]) / sr))
            paths.append(str(path))
            pos += dur
        source: AudioSource = PerTurnSource(tuple(paths))
        total = pos
    else:
        total = max(p.end for p in items) + 1.5
        n = int(round(total * sr))
        own = {s: np.zeros(n) for s in "AB"}
        for p, sig in zip(items, sigs, strict=True):
            i = int(round(p.start * sr))
            own[p.speaker][i : i + len(sig)] += sig
        truth = [
            ((int(round(p.start * sr)) + i0) / sr, (int(round(p.start * sr)) + i1) / sr)
            for p, (i0, i1) in zip(items, inner, strict=True)
        ]
        turns = [
            Turn(
                p.speaker,
                round(float(max(0.0, a - slack[k, 0])), 3),
                round(float(b + slack[k, 1]), 3),
                f"t{k}",
            )
            for k, (p, (a, b)) in enumerate(zip(items, truth, strict=True))
        ]
        if layout == "iemocap":
            x = np.stack(
                [
                    own["A"]
                    + 10 ** (-14 / 20) * own["B"]
                    + _floor(n, sr, FLOOR_DB[layout], rng, False),
                    own["B"]
                    + 10 ** (-14 / 20) * own["A"]
                    + _floor(n, sr, FLOOR_DB[layout], rng, False),
                ],
                axis=1,
            )
            path = root / f"Ses01F_impro0{seed % 10}.wav"
            sf.write(path, x.astype(np.float32), sr, subtype="PCM_16")
            source = MultichannelSource(str(path), {"A": 0, "B": 1})
        elif layout == "studio_tracks":
            paths = {}
            for s, o in (("A", "B"), ("B", "A")):
                leak = 10 ** (-30 / 20) * own[o] if s == "A" else 0.0
                y = own[s] + leak + _floor(n, sr, FLOOR_DB[layout], rng, s == "A")
                paths[s] = str(root / f"{'mic' if s == 'A' else 'system'}_{seed}.flac")
                sf.write(paths[s], y.astype(np.float32), sr, subtype="PCM_16")
            source = PerSpeakerSource(paths)
        else:
            hum = layout == "studio"
            x = own["A"] + own["B"] + _floor(n, sr, FLOOR_DB[layout], rng, hum)
            if layout == "ramc":  # a non-party noise segment in a long pause, as RAMC marks
                turns.append(
                    Turn("G00000000", round(total - 1.2, 3), round(total - 0.9, 3), "[*]",
                         TurnKind.NONSPEECH)
                )  # fmt: skip
                i = int((total - 1.15) * sr)
                x[i : i + int(0.2 * sr)] += rng.normal(0, 0.01, int(0.2 * sr))
            path = root / (f"CTS-CN-F2F-{seed}.wav" if layout == "ramc" else f"mix_{seed}.flac")
            sf.write(path, x.astype(np.float32), sr, subtype="PCM_16")
            source = MixedMonoSource(str(path))
    d = Dialogue(
        id=f"{layout}__{did}{seed}",
        corpus=layout,
        source_id=f"{did}{seed}",
        category=Category.HH,
        language="en",
        topic="t",
        speakers=speakers,
        turns=tuple(turns),
        source=source,
        duration_s=total,
    )
    return Built(d, truth)
