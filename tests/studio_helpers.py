"""Small real session folders for adapter tests (a few seconds of audio each)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from duetflow.audio.io import write_audio
from duetflow.demo.voice import FEMALE, MALE, db_to_amp, room_tone, speech

SR = 16000
NO_STATE = {"state_dir": None}  # tests that are not about incremental ingest keep no state
# (speaker index, start, end): user, system, user
PLAN = [(0, 0.3, 1.3), (1, 1.55, 2.6), (0, 2.85, 3.6)]
DURATION = 4.0


def tracks(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = int(DURATION * SR)
    own = [np.zeros(n, np.float32), np.zeros(n, np.float32)]
    for who, a, b in PLAN:
        x = speech(b - a, SR, MALE if who == 0 else FEMALE, rng, level_dbfs=-25.0)
        i = int(round(a * SR))
        own[who][i : i + len(x)] += x
    leak = db_to_amp(-20.0)
    mic_a = own[0] + leak * own[1] + room_tone(DURATION, SR, -60.0, rng)
    mic_b = own[1] + leak * own[0] + room_tone(DURATION, SR, -60.0, rng)
    return mic_a, mic_b


def sidecar(layout: str = "tracks", category: str = "HM", **extra: Any) -> dict[str, Any]:
    roles = ("human", "machine") if category == "HM" else ("human", "human")
    if layout == "tracks":
        files: tuple[tuple[str, int | None], ...] = (("a.wav", None), ("b.wav", None))
    elif layout == "stereo":
        files = (("ab.wav", 0), ("ab.wav", 1))
    else:
        files = (("mix.wav", None), ("mix.wav", None))
    speakers = []
    for i, sid in enumerate(("user", "system") if category == "HM" else ("p1", "p2")):
        sp: dict[str, Any] = {"id": sid, "role": roles[i], "gender": "FM"[i], "file": files[i][0]}
        if files[i][1] is not None:
            sp["channel"] = files[i][1]
        speakers.append(sp)
    data: dict[str, Any] = {
        "session_id": "s1",
        "date": "2025-01-02",
        "language": "en",
        "topic": "tourism",
        "category": category,
        "strategy": "role_playing",
        "opening_line": "Hello there.",
        "layout": layout,
        "speakers": speakers,
    }
    if category == "HM":
        data["system"] = {"name": "s2s", "version": "1.0"}
    data.update(extra)
    return {k: v for k, v in data.items() if v is not None}


def write_session(
    folder: Path,
    layout: str = "tracks",
    category: str = "HM",
    *,
    seed: int = 0,
    transcript: list[dict[str, Any]] | None = None,
    rttm: str | None = None,
    **extra: Any,
) -> Path:
    """A session folder with real audio in ``layout``; returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    a, b = tracks(seed)
    if layout == "tracks":
        write_audio(folder / "a.wav", a, SR)
        write_audio(folder / "b.wav", b, SR)
    elif layout == "stereo":
        write_audio(folder / "ab.wav", np.stack([a, b], axis=1), SR)
    else:
        write_audio(folder / "mix.wav", 0.5 * (a + b), SR)
    if transcript is not None:
        (folder / "transcript.json").write_text(json.dumps({"turns": transcript}), "utf-8")
        extra.setdefault("transcript", "transcript.json")
        # the studio protocol: the human's first turn says the sidecar's opening line
        first = next((t["text"] for t in transcript if t["speaker"] in ("user", "p1")), None)
        if first:
            extra.setdefault("opening_line", first)
    if rttm is not None:
        (folder / "turns.rttm").write_text(rttm, "utf-8")
        extra.setdefault("rttm", "turns.rttm")
    data = sidecar(layout, category, **extra)
    (folder / "session.yaml").write_text(yaml.safe_dump(data, allow_unicode=True), "utf-8")
    return folder


def transcript(texts: tuple[str, str, str], timed: bool = False) -> list[dict[str, Any]]:
    ids = ("user", "system")
    out = []
    for (who, a, b), text in zip(PLAN, texts, strict=True):
        row: dict[str, Any] = {"speaker": ids[who], "text": text}
        if timed:
            row.update(start=a, end=b)
        out.append(row)
    return out
