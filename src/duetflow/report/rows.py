"""Reading manifest records for the report: dialogues with their turns, provenance fields.

Stages write turn rows in dialogue order, so dialogues and turns are zipped in lockstep; a
table written otherwise is grouped once in memory (logged). The value helpers read JSON and
numbers that may be missing or malformed in rows from other code versions.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterator, Mapping
from typing import Any

from duetflow.records.manifest import iter_column, iter_record_groups, iter_records
from duetflow.records.rows import RenderedDialogueRow, RenderedTurnRow, columns, from_row
from duetflow.report.sources import ReportInput

log = logging.getLogger(__name__)


def in_lockstep(inp: ReportInput) -> bool:
    """Whether turn rows follow dialogue rows in order (a cheap pass over the id columns)."""
    if inp.turns is None:
        return True
    turn_ids = iter_column(inp.turns, "dialogue_id")
    cur = next(turn_ids, None)
    for did in iter_column(inp.dialogues, "dialogue_id"):
        while cur is not None and cur == did:
            cur = next(turn_ids, None)
    return cur is None


def zip_turns(inp: ReportInput) -> Iterator[tuple[RenderedDialogueRow, list[RenderedTurnRow]]]:
    """Dialogue records with their turn records, zipped in lockstep (how stages write them)."""
    return iter_record_groups(inp.dialogues, inp.turns, inp.record)


def grouped_turns(inp: ReportInput) -> Iterator[tuple[RenderedDialogueRow, list[RenderedTurnRow]]]:
    """Fallback for a turn table not in dialogue order: index it once (logged, uses memory)."""
    import pyarrow.parquet as pq

    log.warning("%s: turns are not in dialogue order; grouping them in memory", inp.label)
    assert inp.turns is not None
    table = pq.read_table(inp.turns, columns=list(columns(RenderedTurnRow))).sort_by(
        [("dialogue_id", "ascending"), ("turn_index", "ascending")]
    )
    ids = table.column("dialogue_id").to_pylist()
    index: dict[str, tuple[int, int]] = {}
    start = 0
    for i in range(1, len(ids) + 1):
        if i == len(ids) or ids[i] != ids[start]:
            index[ids[start]] = (start, i)
            start = i
    for row in iter_records(inp.dialogues, inp.record):
        span = index.get(row.dialogue_id)
        rows = table.slice(span[0], span[1] - span[0]).to_pylist() if span else []
        yield row, [from_row(RenderedTurnRow, r) for r in rows]


def dialogues_with_turns(
    inp: ReportInput,
) -> Iterator[tuple[RenderedDialogueRow, list[RenderedTurnRow]]]:
    """A report input's dialogue records with their turn records."""
    return zip_turns(inp) if in_lockstep(inp) else grouped_turns(inp)


def json_obj(text: Any) -> dict[str, Any]:
    if not text:
        return {}
    try:
        v = json.loads(text)
    except (TypeError, json.JSONDecodeError):
        return {}
    return v if isinstance(v, dict) else {}


def num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def similarities(prov: Mapping[str, Any]) -> list[float]:
    """Clone-similarity values a PH provenance carries, whatever its exact key layout."""
    out: list[float] = []
    for key in ("clone_similarity", "similarity", "speaker_similarity", "similarity_mean"):
        v = prov.get(key)
        if isinstance(v, Mapping):
            out.extend(f for f in (num(x) for x in v.values()) if f is not None)
        elif isinstance(v, list):
            out.extend(f for f in (num(x) for x in v) if f is not None)
        elif (f := num(v)) is not None:
            out.append(f)
        if out:
            return out
    pair = [
        num(prov.get(f"{key}_{side}"))
        for key in ("clone_similarity", "similarity")
        for side in ("a", "b")
    ]
    out.extend(f for f in pair if f is not None)
    if out:
        return out
    qa = prov.get("qa")
    if isinstance(qa, Mapping):
        return similarities(qa)
    return out
