"""A filtered view of a release split: which dialogues a pull keeps.

:class:`ReleaseFilter` holds wanted values per field (:data:`FILTER_FIELDS`: category,
language, corpus, topic). Values of one field are alternatives (OR), fields combine (AND): a
filter of ``category=("PH",), language=("zh", "en")`` keeps the PH dialogues in Chinese or
English. An empty field does not filter. ``duetflow pull --category PH --language zh`` and
``open_release(..., category="PH", language="zh")`` build one.

:func:`filter_manifest` applies it to a verified split manifest as Arrow row groups (no
Python row per dialogue), writing the kept rows with the published schema, so a filtered
``<split>.parquet`` reads like an unfiltered one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from duetflow.errors import ConfigError, ManifestError
from duetflow.records.manifest import TableWriter
from duetflow.records.rows import ReleaseDialogueRow, columns

#: The dialogue columns a pull can filter on (each a :class:`ReleaseDialogueRow` field).
FILTER_FIELDS = ("category", "language", "corpus", "topic")

FilterValues = str | Sequence[str] | None


def _values(name: str, given: FilterValues) -> tuple[str, ...]:
    if given is None:
        return ()
    items = (given,) if isinstance(given, str) else tuple(given)
    bad = [v for v in items if not isinstance(v, str) or not v]
    if bad:
        raise ConfigError(f"filter {name}: values must be non-empty strings, got {bad!r}")
    return tuple(sorted(set(items)))


@dataclass(frozen=True)
class ReleaseFilter:
    """Wanted values per field: OR within a field, AND across fields; empty = any."""

    category: tuple[str, ...] = ()
    language: tuple[str, ...] = ()
    corpus: tuple[str, ...] = ()
    topic: tuple[str, ...] = ()

    @classmethod
    def of(
        cls,
        *,
        category: FilterValues = None,
        language: FilterValues = None,
        corpus: FilterValues = None,
        topic: FilterValues = None,
    ) -> ReleaseFilter:
        """A filter from a value or a list of values per field (None: that field is free)."""
        return cls(
            category=_values("category", category),
            language=_values("language", language),
            corpus=_values("corpus", corpus),
            topic=_values("topic", topic),
        )

    def active(self) -> dict[str, tuple[str, ...]]:
        """The fields that filter, with their values."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name)}

    def __bool__(self) -> bool:
        return bool(self.active())

    def matches(self, row: ReleaseDialogueRow) -> bool:
        """Whether a dialogue row is in the view."""
        return all(getattr(row, name) in values for name, values in self.active().items())

    def describe(self) -> str:
        """``category=PH language=zh|en`` (or ``all`` when nothing filters)."""
        return " ".join(f"{k}={'|'.join(v)}" for k, v in self.active().items()) or "all"

    def key(self) -> str:
        """A short stable hash of the filter (a cache folder's name for the view)."""
        blob = json.dumps(self.active(), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:12]

    def mask(self, table: pa.Table) -> pa.Array:
        """Boolean mask of the rows of an Arrow table of dialogue rows that are in the view."""
        keep = pa.array([True] * table.num_rows, type=pa.bool_())
        for name, values in self.active().items():
            hit = pc.is_in(table.column(name), value_set=pa.array(values, type=pa.string()))
            keep = pc.and_(keep, pc.fill_null(hit, False))
        return keep


assert set(FILTER_FIELDS) == {f.name for f in fields(ReleaseFilter)}
assert set(FILTER_FIELDS) <= set(columns(ReleaseDialogueRow))


def filter_manifest(src: Path, dest: Path, where: ReleaseFilter, batch_rows: int = 1024) -> int:
    """Write the rows of split manifest ``src`` that ``where`` keeps to ``dest`` (same schema,
    atomic); returns how many. ManifestError when ``src`` lacks a filtered column."""
    pf = pq.ParquetFile(src)
    schema = pf.schema_arrow
    missing = [n for n in where.active() if n not in schema.names]
    if missing:
        raise ManifestError(f"{src}: no column(s) {', '.join(missing)} to filter on")
    kept = 0
    with TableWriter(dest, schema, batch_rows) as w:
        for i in range(pf.num_row_groups):
            table = pf.read_row_group(i)
            table = table.filter(where.mask(table))
            at = 0
            while at < table.num_rows:
                part = table.slice(at, w.room)
                w.write_arrow(part)
                at += part.num_rows
            kept += table.num_rows
    return kept
