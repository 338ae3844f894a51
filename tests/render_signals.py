"""Small two-speaker recordings for the render tests, in every AudioSource shape.

Speech comes from :mod:`duetflow.demo.voice`. The two speakers
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

from duetflow.demo.voice import FEMALE, MALE, speech
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
#
# An energy instrument written for the tests, independently of duetflow.audio.edges (different
# window, hop, floor estimate and threshold rule, no high-pass, no hysteresis, no
# extrapolation): the textbook measure a listener's stopwatch approximates.

WIN_S = 0.005  # 5 ms windows ...
HOP_S = 0.001  # ... every 1 ms


def _levels(y: np.ndarray, sr: int) -> tuple[np.ndarray, float]:
    """(level in dB of the 5 ms window centred on each 1 ms step, step in seconds)."""
    x = np.asarray(y, dtype=np.float64)
    w, h = max(1, int(round(WIN_S * sr))), max(1, int(round(HOP_S * sr)))
    c = np.concatenate(([0.0], np.cumsum(x * x)))
    starts = np.arange(0, len(x) - w + 1, h)
    p = (c[starts + w] - c[starts]) / w
    return 10 * np.log10(np.maximum(p, 1e-20)), h / sr


def pause_edges(y: np.ndarray, sr: int, end_s: float, start_s: float) -> tuple[float, float, float]:
    """(offset s, onset s, floor dB) of the pause the rows place between ``end_s`` and
    ``start_s``: the pause's floor is the median level of its middle half; speech is at least
    10 ms of windows above the floor + 3 dB or the noise's own 99th percentile + 1 dB, whichever
    is higher; the offset is the last such window's centre before the middle of the pause, the
    onset the first after it."""
    db, step = _levels(y, sr)
    t = np.arange(len(db)) * step + WIN_S / 2  # window centres
    q = end_s + (start_s - end_s) * np.array([0.25, 0.75])
    core = db[(t >= q[0]) & (t <= q[1])]
    floor = float(np.median(core))
    thr = max(floor + 3.0, float(np.percentile(core, 99)) + 1.0)
    run = max(1, int(round(0.010 / step)))
    loud = np.convolve(db > thr, np.ones(run), mode="full") >= run  # loud[k]: k-run+1..k loud
    mid = 0.5 * (end_s + start_s)
    ends = np.flatnonzero(loud[: len(db)])  # last window of a 10 ms loud run
    starts = ends - run + 1  # first window of it
    before = ends[(t[ends] < mid) & (t[ends] > end_s - 0.5)]
    after = starts[(t[np.maximum(starts, 0)] > mid) & (t[np.maximum(starts, 0)] < start_s + 0.5)]
    assert before.size and after.size, f"no speech around the pause at {mid:.3f} s"
    return float(t[before[-1]]), float(t[after[0]]), floor


def change_pauses(rows: list[dict]) -> list[tuple[dict, dict]]:
    """Consecutive main turns of different speakers with a pause between them (row times)."""
    mains = sorted((r for r in rows if r["kind"] == "turn"), key=lambda r: r["start_s"])
    return [
        (a, b)
        for a, b in itertools.pairwise(mains)
        if a["speaker"] != b["speaker"] and b["start_s"] > a["end_s"]
    ]


def measured_change_gaps(y: np.ndarray, sr: int, rows: list[dict]) -> list[float]:
    """The pause (s) the test instrument hears at every speaker change between main turns."""
    out = []
    for a, b in change_pauses(rows):
        off, on, _ = pause_edges(y, sr, a["end_s"], b["start_s"])
        out.append(on - off)
    return out


def segments(y: np.ndarray, sr: int, rows: list[dict], speaker: str) -> np.ndarray:
    """The rendered audio of one speaker's main turns, concatenated."""
    parts = [
        y[int(round(r["start_s"] * sr)) : int(round(r["end_s"] * sr))]
        for r in rows
        if r["speaker"] == speaker and r["kind"] == "turn"
    ]
    return np.concatenate(parts)
