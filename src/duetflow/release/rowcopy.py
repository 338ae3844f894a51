"""Copy a table's rows into a :class:`~duetflow.records.manifest.TableWriter` as Arrow, filtered by
dialogue id, without a Python row per row.

Publish copies the work directories' turn rows into the release and pull copies the pulled
splits' turn rows out of it: tens of thousands of rows that need no change, only a filter.
Going through records and dict rows would hold a writer's whole buffer (8,192 rows) as Python
dicts; here a row group is a few Arrow columns. Slices are fed so that the writer's row groups
end where they would have had the rows been written one by one, so the bytes are the same.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from duetflow.errors import ManifestError
from duetflow.records.manifest import TableWriter, missing_columns
from duetflow.records.rows import R, arrow_schema, columns


def copy_rows(
    src: str | Path,
    record: type[R],
    writer: TableWriter,
    ids: Collection[str],
    *,
    keep: bool,
) -> int:
    """Append ``src``'s rows of ``record``'s columns to ``writer``: those whose
    ``dialogue_id`` is in ``ids`` (``keep=True``) or is not (``keep=False``); returns how many.

    Slices end where the writer's row group is full (:attr:`TableWriter.room`), so a writer fed
    by several calls ends its row groups where row-by-row writing would. ManifestError when
    ``src`` lacks a column.
    """
    missing = missing_columns(src, record)
    if missing:
        raise ManifestError(
            f"{src}: not a {record.__name__} table: missing column(s) {', '.join(missing)}"
        )
    names = list(columns(record))
    schema: pa.Schema = arrow_schema(record)  # type: ignore[arg-type]  # classes hash
    value_set = pa.array(sorted(ids), type=pa.string())
    pf = pq.ParquetFile(src)
    copied = 0
    for i in range(pf.num_row_groups):
        table = pf.read_row_group(i, columns=names).select(names).cast(schema)
        found = pc.fill_null(pc.is_in(table.column("dialogue_id"), value_set=value_set), False)
        table = table.filter(found if keep else pc.invert(found))
        at = 0
        while at < table.num_rows:
            part = table.slice(at, writer.room)
            writer.write_arrow(part)
            at += part.num_rows
        copied += table.num_rows
    return copied
