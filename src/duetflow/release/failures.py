"""Validation failures as one readable table: the record, the table format, pandera's lazy
failure cases turned into rows, and the row-group reader the checks share.

Used by :mod:`duetflow.release.workdir_checks` (a rendered work directory) and
:mod:`duetflow.release.validate` (a release).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pandera.pandas as pa
import pyarrow.parquet as pq

from duetflow.errors import ManifestError
from duetflow.release.table_schemas import CHECK_COLUMN

#: Rows shown in an error message; the count of the rest is given.
MAX_SHOWN = 200


@dataclass(frozen=True)
class Failure:
    """One failed check: which table and row, which column, which check, the offending value."""

    table: str
    row_id: str
    column: str
    check: str
    value: str


def format_failures(failures: Iterable[Failure], max_rows: int = MAX_SHOWN) -> str:
    """A fixed-width text table (``table | row id | column | check | value``)."""
    rows = [("table", "row id", "column", "check", "value")]
    items = list(failures)
    for f in items[:max_rows]:
        rows.append((f.table, f.row_id, f.column, f.check, _short(f.value)))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    if len(items) > max_rows:
        lines.append(f"... and {len(items) - max_rows} more failures")
    return "\n".join(lines)


def raise_if_failures(what: str, failures: list[Failure]) -> None:
    """ManifestError with the failure table when ``failures`` is not empty."""
    if failures:
        raise ManifestError(
            f"{what}: {len(failures)} validation failure(s)", format_failures(failures)
        )


def _short(value: str, limit: int = 80) -> str:
    value = value.replace("\n", " ")
    return value if len(value) <= limit else value[: limit - 3] + "..."


def format_value(value: Any) -> str:
    """A cell value as the failure table shows it (``null`` for None or NaN)."""
    if value is None or (isinstance(value, float) and value != value):
        return "null"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def schema_failures(
    schema: pa.DataFrameSchema, df: pd.DataFrame, table: str, row_id: Callable[[Any], str]
) -> list[Failure]:
    """Run a pandera schema lazily; one Failure per (row, check), named by ``row_id(index)``.

    A check over several columns is reported once, against the column in ``CHECK_COLUMN``.
    """
    try:
        schema.validate(df, lazy=True)
    except pa.errors.SchemaErrors as e:
        cases = e.failure_cases
    else:
        return []
    names = {(c.error or c.name): c.name for c in schema.checks}
    out: list[Failure] = []
    seen: set[tuple[str, str, str]] = set()
    for rec in cases.to_dict("records"):
        check = str(rec["check"])
        column = rec["column"] if isinstance(rec["column"], str) else "*"
        name = names.get(check, check)
        if rec["schema_context"] == "DataFrameSchema" and name in CHECK_COLUMN:
            column = CHECK_COLUMN[name]
        idx = rec["index"]
        rid = "*" if idx is None or (isinstance(idx, float) and idx != idx) else row_id(idx)
        key = (rid, column, check)
        if key in seen:
            continue
        seen.add(key)
        value = rec["failure_case"]
        if rid != "*" and column in df.columns and idx in df.index:
            value = df.at[idx, column]
        out.append(Failure(table, rid, column, check, format_value(value)))
    return out


def iter_batches(path: Path) -> Iterator[pd.DataFrame]:
    """A Parquet file as DataFrames, one row group each, index = global row number."""
    pf = pq.ParquetFile(path)
    offset = 0
    for i in range(pf.num_row_groups):
        df = pf.read_row_group(i).to_pandas()
        df.index = pd.RangeIndex(offset, offset + len(df))
        offset += len(df)
        yield df
    if pf.num_row_groups == 0:
        yield pf.schema_arrow.empty_table().to_pandas()


def row_ids(df: pd.DataFrame, *columns: str) -> Callable[[Any], str]:
    """Row id of a row index: the named columns joined by ``#`` (row number if absent)."""

    def row_id(i: Any) -> str:
        if not all(c in df.columns for c in columns):
            return f"row {i}"
        return "#".join(str(df.at[i, c]) for c in columns)

    return row_id
