"""Tiny rendered work directories written for real (FLAC files + rows matching the schemas)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from duetflow.audio.io import write_audio
from duetflow.hashing import sha256_file
from duetflow.records.manifest import (
    DIALOGUES,
    REJECTION_SCHEMA,
    REJECTIONS,
    RENDERED_DIALOGUE_SCHEMA,
    RENDERED_TURN_SCHEMA,
    TURNS,
    write_table,
)
from duetflow.seeding import rng_for

SR = 8000
#: rendered length of every fixture dialogue: inside the default window.min_s–max_s (20–60 s);
#: 1.3 s of noise (the turns) then digital silence, so the FLAC stays small
DURATION_S = 20.5


@dataclass(frozen=True)
class Spec:
    """One dialogue to render: id, source recording, category, language."""

    dialogue_id: str
    source_id: str
    category: str = "HH"
    language: str = "en"
    corpus: str = "toy"
    licence: str = "CC-BY-4.0"


def specs(
    n: int, *, prefix: str = "toy", per_source: int = 2, category: str = "HH", start: int = 0
):
    return [
        Spec(
            f"{prefix}__d{i:03d}__w000",
            f"{prefix}__src{i // per_source:03d}",
            category=category,
            corpus=prefix,
        )
        for i in range(start, start + n)
    ]


def fixture_samples(dialogue_id: str, duration_s: float = DURATION_S) -> np.ndarray:
    """The samples :func:`make_workdir` writes for a dialogue (ground truth for decoders):
    1.3 s of a -60 dBFS room with a noise burst where each turn is (so the audio holds the gaps
    the rows say), then silence up to ``duration_s``."""
    rng = rng_for(7, dialogue_id)
    samples = np.zeros(int(round(duration_s * SR)), dtype=np.float32)
    samples[: int(1.3 * SR)] = 0.001 * rng.standard_normal(int(1.3 * SR))
    for turn in _turns(dialogue_id):
        a, b = int(turn["start_s"] * SR), int(turn["end_s"] * SR)
        samples[a:b] += 0.1 * rng.standard_normal(b - a)
    return samples


def _turns(did: str) -> list[dict[str, Any]]:
    # A speaks, 200 ms gap, B speaks, 200 ms gap, A speaks: 1.2 s in all.
    spans = [("A", 0.0, 0.3), ("B", 0.5, 0.8), ("A", 1.0, 1.2)]
    return [
        {
            "dialogue_id": did,
            "turn_index": i,
            "speaker": f"{did}-{spk}",
            "kind": "turn",
            "start_s": s,
            "end_s": e,
            "orig_start_s": s + 3.0,
            "orig_end_s": e + 3.0,
            "text": f"turn {i} of {did}",
        }
        for i, (spk, s, e) in enumerate(spans)
    ]


def make_workdir(
    root: Path,
    items: Sequence[Spec],
    *,
    rejections: Sequence[dict[str, Any]] = (),
    stats: dict[str, Any] | None = None,
    row_overrides: dict[str, dict[str, Any]] | None = None,
    durations: dict[str, float] | None = None,
) -> Path:
    """Write a rendered work directory with one 20.5 s FLAC per dialogue (1.3 s of turns and
    room, see :func:`fixture_samples`); ``durations`` gives some dialogues another length (file
    and row alike)."""
    root.mkdir(parents=True, exist_ok=True)
    rows, turns = [], []
    for sp in items:
        dur = (durations or {}).get(sp.dialogue_id, DURATION_S)
        rel = f"audio/{sp.dialogue_id}.flac"
        write_audio(root / rel, fixture_samples(sp.dialogue_id, dur), SR)
        t = _turns(sp.dialogue_id)
        row = {
            "dialogue_id": sp.dialogue_id,
            "source_id": sp.source_id,
            "corpus": sp.corpus,
            "category": sp.category,
            "language": sp.language,
            "topic": "weather",
            "speaker_a": t[0]["speaker"],
            "speaker_b": t[1]["speaker"],
            "audio_path": rel,
            "sha256": sha256_file(root / rel),
            "duration_s": dur,
            "sample_rate": SR,
            "num_channels": 1,
            "n_turns": len(t),
            "loudness_lufs_a": -23.0,
            "loudness_lufs_b": -23.2,
            "gain_db_a": 1.5,
            "gain_db_b": -0.5,
            "gap_ms_min": 200.0,
            "gap_ms_max": 200.0,
            "provenance": json.dumps({"seed": 7}),
            "licence": sp.licence,
            "source_sample_rate": 2 * SR,
        }
        row.update((row_overrides or {}).get(sp.dialogue_id, {}))
        rows.append(row)
        turns.extend(t)
    write_table(root / DIALOGUES, RENDERED_DIALOGUE_SCHEMA, rows)
    write_table(root / TURNS, RENDERED_TURN_SCHEMA, turns)
    rej = [
        {
            "item_id": "toy__bad",
            "corpus": "toy",
            "source_path": "x.wav",
            "stage": "filter",
            "reason": "balance",
            "detail": "A 80%",
        },
        *rejections,
    ]
    write_table(root / REJECTIONS, REJECTION_SCHEMA, rej)
    if stats is not None:
        (root / "stats.json").write_text(json.dumps(stats))
    return root
