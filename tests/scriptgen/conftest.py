"""Fixtures for the script-generation tests: a rendered work directory's tables (no audio)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from duetflow.records.manifest import (
    DIALOGUES,
    REJECTION_SCHEMA,
    REJECTIONS,
    RENDERED_DIALOGUE_SCHEMA,
    RENDERED_TURN_SCHEMA,
    TURNS,
    write_table,
)

HH_EN = [
    ("a", "Did you see the new timetable for the buses?"),
    ("b", "No, did they change it again this month?"),
    ("a", "yeah"),  # a backchannel-only turn: dropped from the script
    ("a", "They moved the morning bus ten minutes earlier."),
    ("b", "That is annoying, I will have to leave before seven."),
    ("a", "Maybe we could share a ride on Mondays instead."),
    ("b", "Good idea, let me ask my sister about the car."),
]
HH_ZH = [
    ("g1", "你周末一般都做什么呀？"),
    ("g2", "我一般去公园跑步，然后在家看看书。"),
    ("g1", "跑步挺好的，你一般跑多远？"),
    ("g2", "五公里左右吧，天气好的话跑十公里。"),
]


def _dialogue(did: str, src: str, category: str, lang: str, topic: str, turns: Any) -> Any:
    spk = list(dict.fromkeys(s for s, _ in turns))
    row = {
        "dialogue_id": did,
        "source_id": src,
        "corpus": "fixture",
        "category": category,
        "language": lang,
        "topic": topic,
        "source_topic": f"raw-{topic}",
        "speaker_a": spk[0],
        "speaker_b": spk[1],
        "audio_path": f"audio/{did}.flac",
        "sha256": "0" * 64,
        "duration_s": 30.0,
        "sample_rate": 16000,
        "num_channels": 1,
        "n_turns": len(turns),
        "loudness_lufs_a": -23.0,
        "loudness_lufs_b": -23.0,
        "gain_db_a": 0.0,
        "gain_db_b": 0.0,
        "gap_ms_min": 200.0,
        "gap_ms_max": 200.0,
        "provenance": "{}",
    }
    trows = [
        {
            "dialogue_id": did,
            "turn_index": i,
            "speaker": s,
            "kind": "backchannel" if text == "yeah" else "turn",
            "start_s": 2.0 * i,
            "end_s": 2.0 * i + 1.5,
            "orig_start_s": 2.0 * i,
            "orig_end_s": 2.0 * i + 1.5,
            "text": text,
        }
        for i, (s, text) in enumerate(turns)
    ]
    return row, trows


@pytest.fixture
def hh_workdir(tmp_path: Path) -> Path:
    """Two kept HH windows (en, zh) and one HM dialogue, which rewrite must skip."""
    wd = tmp_path / "rendered"
    parts = [
        _dialogue("fx__d1__w000_00000000", "d1", "HH", "en", "ordinary_life", HH_EN),
        _dialogue("fx__s7", "s7", "HM", "en", "tourism", HH_EN),
        _dialogue("fx__r3__w001_00030000", "r3", "HH", "zh", "work", HH_ZH),
    ]
    write_table(wd / DIALOGUES, RENDERED_DIALOGUE_SCHEMA, [p[0] for p in parts])
    write_table(wd / TURNS, RENDERED_TURN_SCHEMA, [t for p in parts for t in p[1]])
    write_table(wd / REJECTIONS, REJECTION_SCHEMA, [])
    return wd
