"""Helpers for the corpus adapter tests: scan a root, compare with truth.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from duetflow.corpora import get_adapter
from duetflow.records.dialogue import Dialogue, Rejection


def scan(
    corpus: str, root: Path, options: dict[str, Any] | None = None
) -> tuple[dict[str, Dialogue], dict[str, Rejection], int]:
    """Kept dialogues by id, rejections by item id, and the number of items yielded."""
    items = list(get_adapter(corpus)(root, options).scan())
    kept = {i.id: i for i in items if isinstance(i, Dialogue)}
    rejected = {i.item_id: i for i in items if isinstance(i, Rejection)}
    assert len(kept) + len(rejected) == len(items), "an item id was yielded twice"
    assert not [r for r in rejected.values() if r.reason == "internal_error"], rejected
    return kept, rejected, len(items)


def truth(root: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((root / "truth.json").read_text(encoding="utf-8"))
    return data


def truth_for(root: Path, corpus: str) -> tuple[dict[str, Any], dict[str, str]]:
    """(dialogue truth by id, expected rejection reason by item id) of one corpus."""
    t = truth(root)
    dialogues = {k: v for k, v in t["dialogues"].items() if v["corpus"] == corpus}
    broken = {b["item_id"]: b["reason"] for b in t["broken"] if b["corpus"] == corpus}
    return dialogues, broken


def scan_against_truth(
    sample_root: Path, corpus: str, root: Path
) -> tuple[dict[str, Dialogue], dict[str, Any]]:
    """Scan ``root`` and check the accounting against truth.json: every item is yielded once,
    kept ids are exactly the truth's dialogues, rejections carry the expected reasons.

    Returns the kept dialogues and the truth entries by id, for per-corpus assertions.
    """
    expected, broken = truth_for(sample_root, corpus)
    kept, rejected, n = scan(corpus, root)
    assert n == len(expected) + len(broken)
    assert set(kept) == set(expected)
    assert {k: r.reason for k, r in rejected.items()} == broken
    return kept, expected


def ms(x: float) -> int:
    return round(x * 1000)


def timeline(d: Dialogue) -> list[tuple[str, int, int]]:
    return [(t.speaker, ms(t.start), ms(t.end)) for t in d.turns]


def truth_timeline(entry: dict[str, Any]) -> list[tuple[str, int, int]]:
    return [(t["speaker"], ms(t["start"]), ms(t["end"])) for t in entry["turns"]]
