"""A small DailyTalk corpus in the real layout (see shared reference §1.9).

``dailytalk/metadata.json`` + ``dailytalk/data/<d>/{turn}_{speaker}_d{d}.wav|.txt``: 44.1 kHz
mono 16-bit per-turn clips, speaker 0 male / 1 female, ``"no emotion"`` for neutral, metadata
text equal to the ``.txt``. Each clip is leading room tone + speech + trailing room tone, so the
clip timeline has realistic 0.1–0.7 s gaps (DailyTalk has no overlaps). Per scale unit: six
good dialogues (one with a same-speaker pair, one imbalanced) and seven broken ones.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from duetflow.audio.io import write_audio
from duetflow.demo.plan import ENGLISH
from duetflow.demo.voice import random_voice, room_tone, speech
from duetflow.records.dialogue import dialogue_id
from duetflow.seeding import rng_for

CORPUS = "dailytalk"
#: folder under the samples root (``duetflow samples make`` reads it via the entry point)
FOLDER = "dailytalk"
SR = 44100
ROOM_DB = -56.0
EMOTIONS = ("no emotion", "no emotion", "no emotion", "happiness", "surprise", "sadness")
ACTS = ("inform", "question", "directive", "commissive")
TOPICS = ("ordinary_life", "work", "tourism", "relationship", "health")

#: broken dialogues per unit: offset within the unit -> expected rejection reason
BROKEN = {
    6: "truncated_audio",
    7: "bad_audio",
    8: "wrong_sample_rate",
    9: "bad_encoding",
    10: "duplicate_id",
    11: "path_escape",
    12: "missing_file",
}
PER_UNIT = 13


def _sequence(kind: str, n: int, first: int) -> list[int]:
    if kind == "imbalanced":  # A A A B ...
        return [first if i % 4 != 3 else 1 - first for i in range(n)]
    seq = [first if i % 2 == 0 else 1 - first for i in range(n)]
    if kind == "same_speaker_pair":  # one consecutive same-speaker pair, like d604 turns 8-9
        k = n // 2
        seq = seq[:k] + [seq[k - 1]] + [1 - s for s in seq[k:-1]]
    return seq


def generate(root: Path, seed: int = 0, scale: int = 1) -> dict[str, Any]:
    """Write ``root/dailytalk``; return truth records by dialogue id plus ``broken`` items."""
    base = root / "dailytalk"
    data = base / "data"
    data.mkdir(parents=True, exist_ok=True)
    meta: dict[str, dict[str, dict[str, Any]]] = {}
    dialogues: dict[str, Any] = {}
    broken: list[dict[str, Any]] = []
    voice_rng = rng_for(seed, CORPUS, "voices")
    voices = {
        0: random_voice(voice_rng, "M", "dailytalk-0"),
        1: random_voice(voice_rng, "F", "dailytalk-1"),
    }
    index = 0
    duplicate_extra: list[tuple[Path, int]] = []
    for unit in range(scale):
        for k in range(PER_UNIT):
            d = unit * PER_UNIT + k
            rng = rng_for(seed, CORPUS, d)
            if k < 6:
                kind = {0: "same_speaker_pair", 4: "imbalanced"}.get(k, "balanced")
                n = int(rng.integers(9, 13))
                first = 1 if k == 5 else int(rng.integers(2))
            else:
                kind, n, first = "balanced", 5, 0
            seq = _sequence(kind, n, first)
            ddir = data / str(d)
            ddir.mkdir(parents=True, exist_ok=True)
            topic = TOPICS[int(rng.integers(len(TOPICS)))]
            dmeta: dict[str, dict[str, Any]] = {}
            truth_turns = []
            t = 0.0
            for i, spk in enumerate(seq):
                lead = float(rng.uniform(0.05, 0.25))
                dur = float(rng.uniform(1.2, 4.2)) if k < 6 else float(rng.uniform(0.8, 1.6))
                trail = float(rng.uniform(0.05, 0.45))
                n_lead, n_sp, n_trail = (int(round(x * SR)) for x in (lead, dur, trail))
                total = n_lead + n_sp + n_trail
                clip = room_tone(total / SR, SR, ROOM_DB, rng)
                clip[n_lead : n_lead + n_sp] += speech(n_sp / SR, SR, voices[spk], rng)
                text = ENGLISH[int(rng.integers(len(ENGLISH)))]
                emotion = EMOTIONS[int(rng.integers(len(EMOTIONS)))]
                act = ACTS[int(rng.integers(len(ACTS)))]
                stem = f"{i}_{spk}_d{d}"
                write_audio(ddir / f"{stem}.wav", clip, SR)
                (ddir / f"{stem}.txt").write_text(text + "\n", encoding="utf-8")
                dmeta[str(i)] = {
                    "index": index,
                    "speaker": spk,
                    "text": text,
                    "turn": i,
                    "emotion": emotion,
                    "act": act,
                    "topic": topic,
                }
                index += 1
                truth_turns.append(
                    {
                        "speaker": str(spk),
                        "start": round(t, 6),
                        "end": round(t + total / SR, 6),
                        "speech_start": round(t + n_lead / SR, 6),
                        "speech_end": round(t + (n_lead + n_sp) / SR, 6),
                        "backchannel": False,
                        "labels": {"emotion": emotion, "act": act},
                        "text": text,
                    }
                )
                t += total / SR
            meta[str(d)] = dmeta
            did = dialogue_id(CORPUS, f"d{d}")
            if k in BROKEN:
                reason = BROKEN[k]
                path = _break(root, ddir, d, seq, reason, rng)
                if reason == "duplicate_id":
                    duplicate_extra.append((ddir, d))
                broken.append({"corpus": CORPUS, "item_id": did, "reason": reason, "path": path})
                continue
            main = [s for s in seq]
            dialogues[did] = {
                "corpus": CORPUS,
                "source_id": f"d{d}",
                "shape": "imbalanced" if kind == "imbalanced" else "balanced",
                "expected": "kept",
                "speakers": [str(seq[0]), str(1 - seq[0])],
                "turns": truth_turns,
                "interruptions": [],
                "backchannels": [],
                "terminal_overlaps": [],
                "imbalanced": kind == "imbalanced",
                "utterance_share": {
                    str(s): round(main.count(s) / len(main), 4) for s in (seq[0], 1 - seq[0])
                },
                "topic": topic,
                "duration_s": round(t, 6),
                "same_speaker_pairs": sum(seq[i] == seq[i + 1] for i in range(len(seq) - 1)),
            }
    (base / "metadata.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    return {"dialogues": dialogues, "broken": broken}


def _break(
    root: Path, ddir: Path, d: int, seq: list[int], reason: str, rng: np.random.Generator
) -> str:
    """Damage dialogue ``d`` so the adapter must reject it with ``reason``; return the path."""
    stem = f"2_{seq[2]}_d{d}"
    wav = ddir / f"{stem}.wav"
    rel = f"data/{d}/{stem}.wav"
    if reason == "truncated_audio":
        blob = wav.read_bytes()
        wav.write_bytes(blob[: len(blob) // 2])
    elif reason == "bad_audio":
        wav.write_bytes(b"")
    elif reason == "wrong_sample_rate":
        write_audio(wav, speech(1.0, 22050, random_voice(rng, "M"), rng), 22050)
    elif reason == "bad_encoding":
        txt = ddir / f"{stem}.txt"
        txt.write_bytes("Caf\u00e9 au lait, s'il vous pla\u00eet.\n".encode("latin-1"))
        rel = f"data/{d}/{stem}.txt"
    elif reason == "duplicate_id":
        other = ddir / f"2_{1 - seq[2]}_d{d}.wav"  # turn 2 exists twice, once per speaker
        other.write_bytes(wav.read_bytes())
        (ddir / f"2_{1 - seq[2]}_d{d}.txt").write_text("Again.\n", encoding="utf-8")
        rel = f"data/{d}/{other.name}"
    elif reason == "path_escape":
        outside = root / "_outside" / "escape.wav"
        outside.parent.mkdir(parents=True, exist_ok=True)
        outside.write_bytes(wav.read_bytes())
        wav.unlink()
        os.symlink(os.path.relpath(outside, ddir), wav)
    elif reason == "missing_file":
        wav.unlink()
    return rel
