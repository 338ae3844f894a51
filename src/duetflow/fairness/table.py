"""The audit as files and text: ``cues.parquet``, the per-pair summary, the printed table.

``cues.parquet`` holds one :class:`~duetflow.fairness.cues.DialogueCues` row per dialogue (its
columns derive from the record); ``summary.json`` the per-pair comparison and the gate's
verdict (NaN and infinities as strings, so it stays JSON); :func:`format_pairs` the table
``duetflow audit`` prints and the docs quote. A release stores both files under
``releases/<id>/cues/``, listed with their checksums in RELEASE.json like every object.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, get_type_hints

import pyarrow as pa
import pyarrow.parquet as pq

from duetflow.errors import ManifestError
from duetflow.fairness.compare import PairAudit, below_floor
from duetflow.fairness.cues import CUE_BY_NAME, ID_COLUMNS, DialogueCues
from duetflow.fairness.gate import ParityVerdict
from duetflow.records.manifest import TableWriter

CUES_FILE = "cues.parquet"
SUMMARY_FILE = "summary.json"
TABLE_FILE = "summary.md"


def cue_schema() -> pa.Schema:
    """``cues.parquet``'s columns: the fields of :class:`DialogueCues` (str or float64)."""
    hints = get_type_hints(DialogueCues)
    types = {str: pa.string(), float: pa.float64()}
    return pa.schema([(f.name, types[hints[f.name]]) for f in dataclasses.fields(DialogueCues)])


def write_cues(path: Path, rows: Iterable[DialogueCues]) -> int:
    """Write the cue rows (in the order given); returns how many."""
    w = TableWriter(path, cue_schema(), 4096)
    try:
        for r in rows:
            w.write([r.to_row()])
    except BaseException:
        w.abort()
        raise
    w.close()
    return w.rows_written


def read_cues(path: Path) -> Iterator[DialogueCues]:
    """The cue rows of a ``cues.parquet`` (ManifestError when an id column is missing).

    A cue column missing (a table an earlier version wrote, before that cue was declared)
    reads NaN: the cue is then left out of every comparison, as a cue a dialogue cannot have.
    """
    pf = pq.ParquetFile(path)
    names = [f.name for f in dataclasses.fields(DialogueCues)]
    have = set(pf.schema_arrow.names)
    missing = sorted(set(ID_COLUMNS) - have)
    if missing:
        raise ManifestError(f"{path}: not a cue table (missing {', '.join(missing)})")
    absent: dict[str, Any] = {n: math.nan for n in names if n not in have}
    for i in range(pf.num_row_groups):
        for row in pf.read_row_group(i, columns=[n for n in names if n in have]).to_pylist():
            yield DialogueCues(**{**row, **absent})


def _json_num(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, dict):
        return {k: _json_num(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_json_num(x) for x in v]
    return v


def summary_dict(
    pairs: Sequence[PairAudit], verdict: ParityVerdict, errors: Sequence[str] = ()
) -> dict[str, Any]:
    """The per-pair comparison and the verdict as a JSON-ready object."""
    out: dict[str, Any] = _json_num(
        {
            "pairs": [dict(dataclasses.asdict(p), pair=p.pair) for p in pairs],
            "verdict": {
                "mode": verdict.mode,
                "passed": verdict.passed,
                "failures": [dataclasses.asdict(f) for f in verdict.failures],
                "unjudged": list(verdict.unjudged),
            },
            "unmeasured": list(errors),
        }
    )
    return out


def summary_bytes(
    pairs: Sequence[PairAudit], verdict: ParityVerdict, errors: Sequence[str] = ()
) -> bytes:
    """``summary.json`` bytes (sorted keys: equal audits give equal bytes)."""
    blob = json.dumps(summary_dict(pairs, verdict, errors), sort_keys=True, indent=1)
    return (blob + "\n").encode()


def _num(v: float, fmt: str) -> str:
    if math.isnan(v):
        return "-"
    if math.isinf(v):
        return "+inf" if v > 0 else "-inf"
    return format(v, fmt)


def pair_rows(pairs: Sequence[PairAudit], top: int = 3) -> list[dict[str, str]]:
    """One row per pair: sizes, classifier accuracy and AUC with intervals, top cues by |d|
    (``~``: within the cue's floor, counts for nothing)."""
    rows = []
    for p in pairs:
        k = p.classifier
        cues = ", ".join(
            f"{c.cue} {_num(c.d, '+.2f')}{' (sep)' if c.separates else ''}"
            f"{' ~' if below_floor(c) else ''}"
            for c in p.top(top)
        )
        rows.append(
            {
                "language": p.language,
                "pair": p.pair,
                "n": f"{p.n_a}/{p.n_b}",
                "accuracy": "-"
                if k is None
                else f"{k.accuracy:.2f} [{k.accuracy_lo:.2f}, {k.accuracy_hi:.2f}]",
                "AUC": "-"
                if k is None
                else f"{_num(k.auc, '.2f')} [{_num(k.auc_lo, '.2f')}, {_num(k.auc_hi, '.2f')}]",
                "p_perm": "-" if k is None else f"{k.p_permutation:.3f}",
                "top cues (d)": cues,
                "judged": "yes" if p.judged else p.note,
            }
        )
    return rows


def cue_rows(pairs: Sequence[PairAudit]) -> list[dict[str, str]]:
    """One row per cue: its d (and a mark when it separates) in every pair."""
    out: list[dict[str, str]] = []
    if not pairs:
        return out
    for i, c in enumerate(pairs[0].cues):
        row = {"cue": c.cue}
        for p in pairs:
            cc = p.cues[i]
            mark = "*" if cc.separates else ""
            voice = cc.cue in CUE_BY_NAME and CUE_BY_NAME[cc.cue].voice
            gate = " (voice)" if voice else ("" if cc.gated else " (conv.)")
            small = " ~" if cc.gated and below_floor(cc) else ""
            row[f"{p.language} {p.pair}"] = f"{_num(cc.d, '+.2f')}{mark}{small}{gate}"
        out.append(row)
    return out


def markdown_table(rows: Sequence[dict[str, str]]) -> str:
    """A Markdown table of string rows (``|`` escaped)."""
    if not rows:
        return "_none_"
    cols = list(rows[0])
    out = ["| " + " | ".join(cols) + " |", "|" + "|".join(" --- " for _ in cols) + "|"]
    out += ["| " + " | ".join(r[c].replace("|", "\\|") for c in cols) + " |" for r in rows]
    return "\n".join(out)


def format_pairs(pairs: Sequence[PairAudit], verdict: ParityVerdict) -> str:
    """The audit as Markdown: the per-pair table, d per cue and pair, the verdict."""
    lines = [
        "Per language and category pair (d: Cohen's d of a - b; sep: separates perfectly):",
        "",
        markdown_table(pair_rows(pairs)),
        "",
        "Cohen's d per cue (* separates perfectly; ~ means within the cue's floor, counts for "
        "nothing; voice: the speakers' own, never gated; conv.: the conversation's, not gated):",
        "",
        markdown_table(cue_rows(pairs)),
        "",
        verdict.headline(),
    ]
    lines += [f"- {line}" for line in verdict.lines()]
    return "\n".join(lines) + "\n"
