"""Text from the inputs reaches the dataset card as text, never as markup (issue 24, item 8).

Hostile sidecar text (a system name, a strategy, a topic label, rejection reasons and ids, the
title) is written into real rendered tables, the report is built, and the card is rendered by
an independent Markdown engine (``markdown-it``, CommonMark + tables, HTML enabled as Hugging
Face renders cards): no tag, attribute or link from the data survives, and the text is shown.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

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

markdown_it = pytest.importorskip("markdown_it")

SCRIPT = "<script>alert(1)</script>"
IMG = '<img src=x onerror="alert(2)">'
LINK = "[click](javascript:alert(3))"
FENCE = "```\n<b>out of the fence</b>"


def _row(did: str, system: str, strategy: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    row = {
        "dialogue_id": did, "source_id": did, "corpus": "studio", "category": "HM",
        "language": "en", "topic": "tourism", "source_topic": f"raw {IMG}",
        "system_name": system, "system_version": "1|0", "strategy": strategy,
        "opening_line": SCRIPT, "tts_backend": None,
        "speaker_a": "a", "speaker_b": "b", "audio_path": f"audio/{did}.flac",
        "sha256": "0" * 64, "duration_s": 30.0, "sample_rate": 16000, "num_channels": 1,
        "n_turns": 2, "loudness_lufs_a": -23.0, "loudness_lufs_b": -23.0, "gain_db_a": 0.0,
        "gain_db_b": 0.0, "gap_ms_min": 200.0, "gap_ms_max": 200.0, "provenance": "{}",
    }  # fmt: skip
    turns = [
        {"dialogue_id": did, "turn_index": k, "speaker": "ab"[k], "kind": "turn",
         "start_s": 1.0 + 2 * k, "end_s": 2.0 + 2 * k, "text": SCRIPT}
        for k in (0, 1)
    ]  # fmt: skip
    return row, turns


def test_hostile_sidecar_text_is_inert_in_the_card(tmp_path: Path) -> None:
    wd = tmp_path / "wd"
    parts = [_row("d1", SCRIPT, IMG), _row("d2", LINK, "role_playing")]
    write_table(wd / DIALOGUES, RENDERED_DIALOGUE_SCHEMA, [p[0] for p in parts])
    write_table(wd / TURNS, RENDERED_TURN_SCHEMA, [t for p in parts for t in p[1]])
    rejection = {
        "item_id": f"studio__{IMG}", "corpus": "studio", "source_path": LINK,
        "stage": "ingest", "reason": SCRIPT, "detail": FENCE,
    }  # fmt: skip
    write_table(wd / REJECTIONS, REJECTION_SCHEMA, [rejection])
    cfg = RunConfig.model_validate({"seed": 1})
    report = build_report(wd, tmp_path / "out", cfg, audio_sample=0, title=f"T {SCRIPT} {FENCE}")
    card = report.markdown.read_text("utf-8")
    front, body = re.fullmatch(r"---\n(.*?)\n---\n(.*)", card, re.DOTALL).groups()  # type: ignore[union-attr]
    assert yaml.safe_load(front)["pretty_name"] == f"T {SCRIPT} {FENCE}"  # YAML quotes it
    html = markdown_it.MarkdownIt("commonmark", {"html": True}).enable("table").render(body)
    tags = set(re.findall(r"<\s*([a-zA-Z]+)", html))
    assert not tags & {"script", "a", "b", "iframe"}, tags
    imgs = re.findall(r"<img[^>]*>", html)  # only the card's own plots
    assert imgs and all(re.match(r'<img src="plots/[a-z_0-9]+\.png"', i) for i in imgs), imgs
    assert "onerror" not in re.sub(r"&[a-z]+;|&#\d+;", "", "".join(re.findall(r"<[^>]*>", html)))
    assert "javascript:" not in "".join(re.findall(r'href="[^"]*"', html))
    # the text itself is still shown (escaped), in the table cells where it belongs
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "onerror=" in html and "[click](javascript:alert(3))" in html
    # the card's own structure is intact: every design table still has its rows
    assert card.count("\n## ") >= 6
