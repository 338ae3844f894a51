"""Small two-speaker recordings for the render tests, in every AudioSource shape.

Speech comes from :mod:`duetflow.samples.voice` (WebRTC VAD hears it as speech). The two speakers
are recorded at very different levels, with loose annotations (slack before and after the
speech) and long, uneven pauses, so that every property the renderer promises has something to
fix. Measurement helpers read the rendered audio itself.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from duetflow.audio.vad import voiced_frames
from duetflow.model import (
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
from duetflow.samples.voice import FEMALE, MALE, speech

SR = 16000
LEVELS = {"A": -18.0, "B": -34.0}  # 16 dB apart: the renderer must balance them
NOISE_DB = -58.0
SLACK = (0.15, 0.2)  # annotation slack before / after the real speech


@dataclass(frozen=True)
class Spoken:
    speaker: str
    start: float  # true speech start (s)
    dur: float
    kind: TurnKind = TurnKind.TURN


def script(seed: int = 0, n: int = 8, backchannel: bool = False) -> list[Spoken]:
    """Alternating turns, 0.5–1.3 s pauses, one same-speaker continuation, a backchannel."""
    rng = np.random.default_rng(seed)
    out: list[Spoken] = []
    t, who = 0.6, "A"
    for k in range(n):
        d = float(rng.uniform(1.2, 2.4))
        out.append(Spoken(who, round(t, 3), round(d, 3)))
        if backchannel and k == 1:
            other = "B" if who == "A" else "A"
            out.append(Spoken(other, round(t + 0.6, 3), 0.35, TurnKind.BACKCHANNEL))
        t += d + float(rng.uniform(0.5, 1.3))
        if k != 3:  # turn 3 is followed by the same speaker again
            who = "B" if who == "A" else "A"
    return out


def _voice_track(items: list[Spoken], who: str, total: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = np.zeros(int(total * SR), np.float32)
    for s in items:
        if s.speaker != who:
            continue
        sig = speech(s.dur, SR, MALE if who == "A" else FEMALE, rng, LEVELS[who])
        i = int(round(s.start * SR))
        x[i : i + len(sig)] += sig
    return x


def _turns(items: list[Spoken]) -> tuple[Turn, ...]:
    return tuple(
        Turn(
            s.speaker,
            round(max(0.0, s.start - SLACK[0]), 3),
            round(s.start + s.dur + SLACK[1], 3),
            text=f"t{k}",
            kind=s.kind,
        )
        for k, s in enumerate(items)
    )


def _dialogue(
    did: str, items: list[Spoken], source: AudioSource, total: float, turns=None
) -> Dialogue:
    return Dialogue(
        id=did,
        corpus="test",
        source_id=did,
        category=Category.HH,
        language="en",
        topic="tests",
        speakers=(Speaker("A"), Speaker("B")),
        turns=turns if turns is not None else _turns(items),
        source=source,
        duration_s=total,
    )


def make(
    kind: str, root: Path, items: list[Spoken] | None = None, seed: int = 0, noise: bool = True
) -> Dialogue:
    """A dialogue of ``kind`` (multichannel, per_speaker, per_turn, mixed_mono) under ``root``."""
    items = items or script(seed)
    root.mkdir(parents=True, exist_ok=True)
    total = max(s.start + s.dur for s in items) + 1.0
    a = _voice_track(items, "A", total, seed)
    b = _voice_track(items, "B", total, seed + 1)
    rng = np.random.default_rng(seed + 2)
    if noise:
        amp = 10 ** (NOISE_DB / 20)
        a += rng.normal(0, amp, a.shape).astype(np.float32)
        b += rng.normal(0, amp, b.shape).astype(np.float32)
    did = f"test__{kind}{seed}"
    if kind == "multichannel":
        p = root / f"{did}.wav"
        sf.write(p, np.stack([a, b], axis=1), SR, subtype="PCM_16")
        return _dialogue(did, items, MultichannelSource(str(p), {"A": 0, "B": 1}), total)
    if kind == "per_speaker":
        pa, pb = root / f"{did}_A.flac", root / f"{did}_B.flac"
        sf.write(pa, a, SR, subtype="PCM_16")
        sf.write(pb, b, SR, subtype="PCM_16")
        return _dialogue(did, items, PerSpeakerSource({"A": str(pa), "B": str(pb)}), total)
    if kind == "mixed_mono":
        p = root / f"{did}.wav"
        sf.write(p, a + b, SR, subtype="PCM_16")
        return _dialogue(did, items, MixedMonoSource(str(p)), total)
    if kind == "per_turn":
        # one clip per turn, laid end to end: each clip is the turn's slack + speech
        paths, turns, pos = [], [], 0.0
        voice_rng = np.random.default_rng(seed)
        for k, s in enumerate(items):
            sig = speech(
                s.dur, SR, MALE if s.speaker == "A" else FEMALE, voice_rng, LEVELS[s.speaker]
            )
            lead, tail = (
                np.zeros(int(SLACK[0] * SR), np.float32),
                np.zeros(int(SLACK[1] * SR), np.float32),
            )
            clip = np.concatenate([lead, sig, tail])
            if noise:
                clip += rng.normal(0, 10 ** (NOISE_DB / 20), clip.shape).astype(np.float32)
            p = root / f"{did}_{k}.wav"
            sf.write(p, clip, SR, subtype="PCM_16")
            paths.append(str(p))
            d = len(clip) / SR
            turns.append(Turn(s.speaker, round(pos, 6), round(pos + d, 6), f"t{k}", s.kind))
            pos += d
        return _dialogue(did, items, PerTurnSource(tuple(paths)), pos, tuple(turns))
    raise ValueError(kind)


# --- measuring the rendered audio ---------------------------------------------------------------

FRAME_MS = 10
FRAME_S = FRAME_MS / 1000


def vad_onsets_offsets(y: np.ndarray, sr: int) -> tuple[np.ndarray, np.ndarray]:
    """Speech onsets and offsets (s) by WebRTC VAD in 10 ms frames.

    WebRTC VAD holds speech on for several frames after it ends (built-in hangover), so offsets
    are found as the onsets of the time-reversed signal, where the detector reacts within a frame.
    """
    fwd, _ = voiced_frames(y, sr, 3, FRAME_MS)
    rev, _ = voiced_frames(np.ascontiguousarray(y[::-1]), sr, 3, FRAME_MS)
    on = np.flatnonzero(fwd & ~np.concatenate(([False], fwd[:-1]))) * FRAME_S
    n = len(y) / sr
    rev_on = np.flatnonzero(rev & ~np.concatenate(([False], rev[:-1]))) * FRAME_S
    off = np.sort(n - rev_on)
    return on, off


def measured_change_gaps(y: np.ndarray, sr: int, rows: list[dict]) -> list[float]:
    """Silence (s) the VAD hears at every speaker change between consecutive main turns."""
    on, off = vad_onsets_offsets(y, sr)
    mains = [r for r in rows if r["kind"] == "turn"]
    gaps = []
    for a, b in itertools.pairwise(mains):
        if a["speaker"] == b["speaker"]:
            continue
        mid = (a["end_s"] + b["start_s"]) / 2
        end = off[off <= mid].max()
        start = on[on >= mid].min()
        gaps.append(float(start - end))
    return gaps


def segments(y: np.ndarray, sr: int, rows: list[dict], speaker: str) -> np.ndarray:
    """The rendered audio of one speaker's main turns, concatenated."""
    parts = [
        y[int(round(r["start_s"] * sr)) : int(round(r["end_s"] * sr))]
        for r in rows
        if r["speaker"] == speaker and r["kind"] == "turn"
    ]
    return np.concatenate(parts)
