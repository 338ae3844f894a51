"""The report's Turing-test design tables, recomputed here from rows written for the test."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from duetflow.config import RunConfig
from duetflow.records.manifest import (
    DIALOGUES,
    REJECTION_SCHEMA,
    REJECTIONS,
    RENDERED_DIALOGUE_SCHEMA,
    RENDERED_TURN_SCHEMA,
    TURNS,
    write_table,
)
from duetflow.report import build_report
from duetflow.report.tables import backend_table, fmt_hours, system_table, topic_table

# (category, language, topic, system, strategy, backend, duration s): the ground truth
ROWS: list[tuple[str, str, str, str | None, str | None, str | None, float]] = [
    ("HM", "en", "tourism", "s2s-a 1.0", "role_playing", None, 30.0),
    ("HM", "en", "tourism", "s2s-a 1.0", "role_playing", None, 40.0),
    ("HM", "en", "work", "s2s-b 2.1", "human_guided_initiation", None, 35.0),
    ("HH", "en", "tourism", None, None, None, 50.0),
    ("HH", "en", "tourism", None, None, None, 45.0),
    ("HH", "en", "work", None, None, None, 44.0),
    ("HH", "zh", "other", None, None, None, 60.0),
    ("PH", "en", "work", None, None, "dia", 46.0),
    ("PH", "en", "work", None, None, "spark", 47.0),
    ("PH", "zh", "tourism", None, None, "spark", 48.0),
]


def _row(i: int, spec: tuple[Any, ...]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    cat, lang, topic, system, strategy, backend, dur = spec
    did = f"d{i:02d}"
    name, version = system.split() if system else (None, None)
    row = {
        "dialogue_id": did, "source_id": did, "corpus": cat.lower(), "category": cat,
        "language": lang, "topic": topic, "source_topic": f"raw {topic}",
        "system_name": name, "system_version": version, "strategy": strategy,
        "opening_line": "Hi." if cat == "HM" else None, "tts_backend": backend,
        "speaker_a": "a", "speaker_b": "b", "audio_path": f"audio/{did}.flac",
        "sha256": "0" * 64, "duration_s": dur, "sample_rate": 16000, "num_channels": 1,
        "n_turns": 2, "loudness_lufs_a": -23.0, "loudness_lufs_b": -23.0, "gain_db_a": 0.0,
        "gain_db_b": 0.0, "gap_ms_min": 200.0, "gap_ms_max": 200.0, "provenance": "{}",
    }  # fmt: skip
    turns = [
        {"dialogue_id": did, "turn_index": k, "speaker": "ab"[k], "kind": "turn",
         "start_s": 1.0 + 2 * k, "end_s": 2.0 + 2 * k, "text": "x"}
        for k in (0, 1)
    ]  # fmt: skip
    return row, turns


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Any:
    wd = tmp_path_factory.mktemp("design") / "wd"
    parts = [_row(i, spec) for i, spec in enumerate(ROWS)]
    write_table(wd / DIALOGUES, RENDERED_DIALOGUE_SCHEMA, [p[0] for p in parts])
    write_table(wd / TURNS, RENDERED_TURN_SCHEMA, [t for p in parts for t in p[1]])
    write_table(wd / REJECTIONS, REJECTION_SCHEMA, [])
    return build_report(wd, wd.parent / "out", RunConfig(), audio_sample=0)


def test_topics_per_category_side_by_side(report: Any) -> None:
    table = {(r["language"], r["topic"]): r for r in topic_table(report.data)}
    want: Counter[tuple[str, str, str]] = Counter()
    secs: Counter[tuple[str, str, str]] = Counter()
    for cat, lang, topic, *_, dur in ROWS:
        want[(lang, topic, cat)] += 1
        secs[(lang, topic, cat)] += dur
    assert set(table) == {(lang, topic) for lang, topic, _ in want}
    for (lang, topic, cat), n in want.items():
        assert table[lang, topic][f"{cat} dialogues"] == n
        assert table[lang, topic][f"{cat} hours"] == fmt_hours(secs[(lang, topic, cat)])
    assert table["en", "work"]["PH dialogues"] == 2 and table["zh", "other"]["HM dialogues"] == 0
    # the unmapped topic sorts last within its language and is counted in a note
    assert [r["topic"] for r in topic_table(report.data) if r["language"] == "zh"][-1] == "other"
    assert any("1 dialogue(s) have topic 'other'" in n for n in report.data.notes)


def test_hm_per_system_and_strategy_and_ph_per_backend(report: Any) -> None:
    systems = {(r["system"], r["strategy"], r["language"]): r["dialogues"]
               for r in system_table(report.data)}  # fmt: skip
    assert systems == {
        ("s2s-a 1.0", "role_playing", "en"): 2,
        ("s2s-b 2.1", "human_guided_initiation", "en"): 1,
    }
    backends = {(r["TTS backend"], r["language"]): (r["dialogues"], r["hours"])
                for r in backend_table(report.data)}  # fmt: skip
    assert backends == {
        ("dia", "en"): (1, fmt_hours(46.0)),
        ("spark", "en"): (1, fmt_hours(47.0)),
        ("spark", "zh"): (1, fmt_hours(48.0)),
    }


def test_design_section_in_page_card_and_json(report: Any) -> None:
    html = report.html.read_text()
    card = report.markdown.read_text()
    assert 'id="design"' in html and "s2s-b 2.1" in html and "human_guided_initiation" in html
    assert "## Turing-test design" in card and "| spark | zh | 1 |" in card
    import json

    data = json.loads(report.json.read_text())
    assert len(data["design"]) == len({spec[:6] for spec in ROWS})
    assert sum(r["dialogues"] for r in data["design"]) == len(ROWS)
