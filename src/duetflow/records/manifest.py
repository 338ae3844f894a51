"""Manifest tables: column contracts and streaming Parquet I/O.

Every stage reads and writes the same three tables in a work directory — ``dialogues.parquet``,
``turns.parquet``, ``rejections.parquet`` — so ``ingest → process → publish`` compose on the
command line and in flows. Writers flush a row group per batch and readers walk row groups, so
memory follows the batch size, not the corpus size. Dialogues and turns are written in lockstep
(same order), which lets a reader zip them without an index. The conversions between records
and rows are :mod:`duetflow.records.convert`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

import pyarrow as pa
import pyarrow.parquet as pq

from duetflow.errors import ManifestError
from duetflow.records.convert import (
    dialogue_from_rows,
    dialogue_records,
    rejection_from_row,
    rejection_to_row,
)
from duetflow.records.dialogue import Dialogue, Rejection
from duetflow.records.rows import (
    IntakeDialogueRow,
    IntakeTurnRow,
    R,
    Record,
    RejectionRow,
    RenderedDialogueRow,
    RenderedTurnRow,
    arrow_schema,
    columns,
    from_row,
)

#: A dialogue record type (rendered, or a release manifest's).
D = TypeVar("D", bound=RenderedDialogueRow)
_A = TypeVar("_A")
_B = TypeVar("_B")

DIALOGUES = "dialogues.parquet"
TURNS = "turns.parquet"
REJECTIONS = "rejections.parquet"

# Every table is declared once, as the record its rows are (duetflow.records.rows).
INTAKE_DIALOGUE_SCHEMA = arrow_schema(IntakeDialogueRow)
INTAKE_TURN_SCHEMA = arrow_schema(IntakeTurnRow)
REJECTION_SCHEMA = arrow_schema(RejectionRow)

# Rendered tables: declared once, as the records the renderers build (duetflow.records.rows).
RENDERED_DIALOGUE_SCHEMA = arrow_schema(RenderedDialogueRow)
RENDERED_TURN_SCHEMA = arrow_schema(RenderedTurnRow)


# --- streaming Parquet --------------------------------------------------------------------------


class _Committing:
    """A writer's context protocol: :meth:`close` (make the output visible) when the block
    succeeds, :meth:`abort` (leave nothing behind) when it raises."""

    def close(self) -> None:
        raise NotImplementedError

    def abort(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        if et is None:
            self.close()
        else:
            self.abort()


class TableWriter(_Committing):
    """Append rows, flush one row group per ``batch_rows``; atomic rename on close.

    An empty table is still written (with its schema), so readers never have to guess whether a
    stage ran.
    """

    def __init__(self, path: str | Path, schema: pa.Schema, batch_rows: int = 4096) -> None:
        self.path = Path(path)
        self.schema = schema
        self.batch_rows = batch_rows
        self.rows_written = 0
        self._buf: list[dict[str, Any]] = []
        self._tables: list[pa.Table] = []  # Arrow rows (write_arrow), ahead of _buf
        self._buffered = 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        self._writer = pq.ParquetWriter(self._tmp, schema, compression="zstd")

    def write(self, rows: Iterable[Mapping[str, Any]]) -> None:
        n = len(self._buf)
        self._buf.extend(dict(r) for r in rows)
        self._buffered += len(self._buf) - n
        if self._buffered >= self.batch_rows:
            self.flush()

    @property
    def room(self) -> int:
        """Rows until the current row group is full (writing exactly this many flushes it)."""
        return self.batch_rows - self._buffered

    def write_arrow(self, table: pa.Table) -> None:
        """Append the rows of an Arrow table (same column names and types as the schema).

        Buffered and flushed like :meth:`write` (a row group once ``batch_rows`` are held), so
        copying a table's row groups through here writes the same bytes as its rows would,
        without Python rows in between.
        """
        if table.schema.names != self.schema.names:
            raise ValueError(f"{self.path}: columns {table.schema.names} != {self.schema.names}")
        if self._buf:  # rows written before keep their place
            self._tables.append(pa.Table.from_pylist(self._buf, schema=self.schema))
            self._buf = []
        self._tables.append(table.cast(self.schema))
        self._buffered += table.num_rows
        if self._buffered >= self.batch_rows:
            self.flush()

    def flush(self) -> None:
        if not self._buffered:
            return
        rows = [pa.Table.from_pylist(self._buf, schema=self.schema)] if self._buf else []
        tables = [*self._tables, *rows]
        # one contiguous table per row group: the same pages whichever way the rows came
        table = pa.concat_tables(tables).combine_chunks() if self._tables else tables[0]
        self._writer.write_table(table)
        self.rows_written += self._buffered
        self._buf, self._tables, self._buffered = [], [], 0

    def close(self) -> None:
        self.finish()
        self.commit()

    def finish(self) -> None:
        """Write what is buffered and close the temp file, without making it visible yet."""
        self.flush()
        self._writer.close()

    def commit(self) -> None:
        """Rename the finished temp file into place (after :meth:`finish`)."""
        os.replace(self._tmp, self.path)

    def abort(self) -> None:
        with contextlib.suppress(Exception):  # already closed, or the failure was the close
            self._writer.close()
        self._tmp.unlink(missing_ok=True)


def write_table(path: str | Path, schema: pa.Schema, rows: Iterable[Mapping[str, Any]]) -> int:
    with TableWriter(path, schema) as w:
        w.write(rows)
    return w.rows_written


def iter_rows(path: str | Path, columns: Sequence[str] | None = None) -> Iterator[dict[str, Any]]:
    """Rows of a Parquet file, one row group in memory at a time."""
    pf = pq.ParquetFile(path)
    for i in range(pf.num_row_groups):
        yield from pf.read_row_group(i, columns=list(columns) if columns else None).to_pylist()


class WorkdirWriter(_Committing):
    """Writes the three tables of a work directory in lockstep, all or nothing.

    :meth:`write` takes a dialogue record and its turn records, :meth:`reject` rejections;
    records become rows here, at the write. Each table goes to a temp file; only when all three
    are complete are they renamed into place, so a run that fails (or runs out of memory)
    midway never leaves a dialogues table without its rejections for a later stage to pick up.
    ``batch_rows`` are the row-group sizes of the dialogue, turn and rejection tables.
    """

    def __init__(
        self,
        workdir: str | Path,
        dialogue_schema: pa.Schema,
        turn_schema: pa.Schema,
        batch_rows: tuple[int, int, int],
    ) -> None:
        self.workdir = Path(workdir)
        n_dialogues, n_turns, n_rejections = batch_rows
        self.dialogues = TableWriter(self.workdir / DIALOGUES, dialogue_schema, n_dialogues)
        self.turns = TableWriter(self.workdir / TURNS, turn_schema, n_turns)
        self.rejections = TableWriter(self.workdir / REJECTIONS, REJECTION_SCHEMA, n_rejections)

    def write(self, dialogue: Record, turns: Iterable[Record]) -> None:
        """Append one dialogue record and its turn records."""
        self.dialogues.write([dialogue.to_row()])
        self.turns.write(t.to_row() for t in turns)

    def reject(self, rejections: Iterable[Rejection]) -> None:
        """Append rejections."""
        self.rejections.write(rejection_to_row(r) for r in rejections)

    def _all(self) -> tuple[TableWriter, TableWriter, TableWriter]:
        return (self.dialogues, self.turns, self.rejections)

    def close(self) -> None:
        """Finish all three tables, then make them visible (none if any failed)."""
        try:
            for w in self._all():
                w.finish()
        except BaseException:
            self.abort()
            raise
        for w in self._all():
            w.commit()

    def abort(self) -> None:
        """Drop all three temp files."""
        for w in self._all():
            w.abort()


class IntakeWriter(WorkdirWriter):
    """The intake tables of a work directory (:class:`WorkdirWriter`), fed dialogues and
    rejections as they are ingested."""

    def __init__(self, workdir: str | Path, batch_rows: int = 2048) -> None:
        super().__init__(
            workdir, INTAKE_DIALOGUE_SCHEMA, INTAKE_TURN_SCHEMA, (256, batch_rows, batch_rows)
        )

    def add(self, item: Dialogue | Rejection) -> None:
        """Append an ingested dialogue (its intake records) or a rejection."""
        if isinstance(item, Rejection):
            self.reject([item])
        else:
            self.write(*dialogue_records(item))


def iter_records(path: str | Path, record: type[R]) -> Iterator[R]:
    """The records of a rendered or release table, one row group in memory at a time.

    The file's columns are checked first: a table without a column the record declares raises
    :class:`ManifestError` naming the file and the missing columns. Dict rows exist only here,
    between pyarrow and :meth:`from_row`.
    """
    pf = pq.ParquetFile(path)
    wanted = columns(record)
    missing = missing_columns(path, record)
    if missing:
        raise ManifestError(
            f"{path}: not a {record.__name__} table: missing column(s) {', '.join(missing)}"
        )
    for i in range(pf.num_row_groups):
        for row in pf.read_row_group(i, columns=list(wanted)).to_pylist():
            yield from_row(record, row)


def parquet_problem(path: str | Path, record: type[R] | None = None) -> str | None:
    """Why the file at ``path`` is not a readable Parquet table (with ``record``'s columns,
    when given); None when it is. Reads the footer and schema only."""
    try:
        pf = pq.ParquetFile(path)
        names = set(pf.schema_arrow.names)
    except (OSError, ValueError, pa.ArrowException) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        return f"not a Parquet file ({first})"
    if record is not None:
        missing = [c for c in columns(record) if c not in names]
        if missing:
            return f"missing column(s) {', '.join(missing)}"
    return None


def missing_columns(path: str | Path, record: type[R]) -> list[str]:
    """The columns ``record`` declares that the Parquet file at ``path`` lacks (schema only)."""
    names = set(pq.read_schema(path).names)
    return [c for c in columns(record) if c not in names]


def iter_column(path: str | Path, name: str) -> Iterator[Any]:
    """The values of one column of a Parquet file, one row group in memory at a time."""
    pf = pq.ParquetFile(path)
    if name not in pf.schema_arrow.names:
        raise ManifestError(f"{path}: no column {name!r}")
    for i in range(pf.num_row_groups):
        yield from pf.read_row_group(i, columns=[name]).column(0).to_pylist()


def zip_lockstep(
    parents: Iterable[_A],
    children: Iterable[_B],
    parent_id: Callable[[_A], str],
    child_id: Callable[[_B], str],
) -> Iterator[tuple[_A, list[_B]]]:
    """(parent, its children) pairs of two streams written in the same order, in one pass.

    Every stage writes turns in dialogue order, so memory holds one dialogue's turns. A parent
    without children gets an empty list; children of no parent in sequence are skipped.
    """
    child_iter = iter(children)
    pending: _B | None = None
    for parent in parents:
        did = parent_id(parent)
        found: list[_B] = []
        if pending is not None:
            if child_id(pending) != did:
                yield parent, found
                continue
            found.append(pending)
            pending = None
        for child in child_iter:
            if child_id(child) == did:
                found.append(child)
            else:
                pending = child
                break
        yield parent, found


def iter_grouped(
    dialogues: str | Path,
    turns: str | Path | None,
    turn_columns: Sequence[str] | None = None,
) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """(dialogue row, its turn rows) pairs of intake tables, streaming both in lockstep.

    For rendered and release tables use :func:`iter_record_groups` (typed records).
    """
    turn_rows: Iterable[dict[str, Any]] = (
        iter_rows(turns, turn_columns) if turns is not None else ()
    )
    return zip_lockstep(iter_rows(dialogues), turn_rows, _row_id, _row_id)


def _row_id(row: Mapping[str, Any]) -> str:
    return str(row["dialogue_id"])


def _record_id(
    record: RenderedDialogueRow | RenderedTurnRow | IntakeDialogueRow | IntakeTurnRow,
) -> str:
    return record.dialogue_id


def iter_record_groups(
    dialogues: str | Path, turns: str | Path | None, dialogue: type[D]
) -> Iterator[tuple[D, list[RenderedTurnRow]]]:
    """(dialogue record, its turn records) of a rendered or release table pair, in lockstep."""
    turn_records: Iterable[RenderedTurnRow] = (
        iter_records(turns, RenderedTurnRow) if turns is not None else ()
    )
    return zip_lockstep(iter_records(dialogues, dialogue), turn_records, _record_id, _record_id)


def iter_rendered(
    workdir: str | Path,
) -> Iterator[tuple[RenderedDialogueRow, list[RenderedTurnRow]]]:
    """Stream the rendered dialogues of a work directory with their turns."""
    wd = Path(workdir)
    return iter_record_groups(wd / DIALOGUES, wd / TURNS, RenderedDialogueRow)


#: A dialogue record of an intake or a rendered work directory.
DialogueRecord = IntakeDialogueRow | RenderedDialogueRow
#: A turn record of an intake or a rendered work directory.
TurnRecord = IntakeTurnRow | RenderedTurnRow


def iter_work_records(
    workdir: str | Path,
) -> Iterator[tuple[DialogueRecord, Sequence[TurnRecord]]]:
    """(dialogue record, its turn records) of an intake *or* a rendered work directory.

    The kind is read from the dialogues table's schema (a rendered table has ``audio_path``),
    so readers that take either (HH scripts, voice references) get typed records of the kind
    the directory holds; turns stream in lockstep.
    """
    wd = Path(workdir)
    if "audio_path" in pq.read_schema(wd / DIALOGUES).names:
        return iter_record_groups(wd / DIALOGUES, wd / TURNS, RenderedDialogueRow)
    return zip_lockstep(
        iter_records(wd / DIALOGUES, IntakeDialogueRow),
        iter_records(wd / TURNS, IntakeTurnRow),
        _record_id,
        _record_id,
    )


def iter_dialogues(workdir: str | Path) -> Iterator[Dialogue]:
    """Stream intake dialogues of a work directory (turns zipped in lockstep)."""
    wd = Path(workdir)
    turns = iter_records(wd / TURNS, IntakeTurnRow)
    for row, found in zip_lockstep(
        iter_records(wd / DIALOGUES, IntakeDialogueRow), turns, _record_id, _record_id
    ):
        yield dialogue_from_rows(row, found)


def iter_rejections(workdir: str | Path) -> Iterator[Rejection]:
    """The rejections of a work directory (none when it has no rejections table)."""
    path = Path(workdir) / REJECTIONS
    if path.exists():
        yield from read_rejections(path)


def read_rejections(path: str | Path) -> Iterator[Rejection]:
    """The rejections of a rejections table, one row group in memory at a time."""
    for row in iter_records(path, RejectionRow):
        yield rejection_from_row(row)
