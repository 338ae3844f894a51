"""A release's turn-taking event table (``manifests/events.parquet``) and reading it back.

Publish derives it from the staged turn table (:func:`stage_events`), one dialogue at a time
(the turn rows are grouped by dialogue), with the ``turns`` settings the release records in
RELEASE.json (``turns_config``); see :mod:`duetflow.turntaking.events` for the classes. Pull
copies the rows of the dialogues it pulled, like the turns; the exports attach each
dialogue's events with :class:`EventWalk`, a forward walk over the table in dialogue order.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator
from pathlib import Path

from duetflow.config import TurnsConfig
from duetflow.errors import ManifestError
from duetflow.records.manifest import TableWriter, iter_records
from duetflow.records.rows import RenderedTurnRow, TurnEventRow, arrow_schema
from duetflow.turntaking.events import dialogue_events

log = logging.getLogger(__name__)

#: the Arrow schema of ``events.parquet`` (from :class:`~duetflow.records.rows.TurnEventRow`)
EVENT_SCHEMA = arrow_schema(TurnEventRow)
#: the manifest name of the event table (``releases/<id>/manifests/events.parquet``)
EVENTS = "events"


def stage_events(turns: Path, dest: Path, cfg: TurnsConfig, batch_rows: int = 8192) -> int:
    """Write ``dest``: the events of every dialogue of turn table ``turns`` (grouped by
    dialogue, as publish writes it), in that order; returns the number of events."""
    writer = TableWriter(dest, EVENT_SCHEMA, batch_rows)
    with writer as w:
        for _, group in itertools.groupby(
            iter_records(turns, RenderedTurnRow), key=lambda t: t.dialogue_id
        ):
            w.write(e.to_row() for e in dialogue_events(list(group), cfg))
    return writer.rows_written


class EventWalk:
    """Each dialogue's events from an event table whose rows are grouped by dialogue in the
    order the dialogues are asked for (rows of dialogues never asked for are skipped).

    A dialogue whose events are not ahead of the walk is found by a scan of the whole table
    (slow, never wrong); a folder without an event table (a release older than the table)
    gives every dialogue no events.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.present = path.is_file()
        self._walk: Iterator[TurnEventRow] = self._fresh()
        self._pending: TurnEventRow | None = None

    def _fresh(self) -> Iterator[TurnEventRow]:
        return iter_records(self.path, TurnEventRow) if self.present else iter(())

    def take(self, dialogue_id: str) -> list[TurnEventRow]:
        """The events of ``dialogue_id`` in event order."""
        if not self.present:
            return []
        found: list[TurnEventRow] = []
        while True:
            e = self._pending if self._pending is not None else next(self._walk, None)
            self._pending = None
            if e is None:
                break
            if e.dialogue_id == dialogue_id:
                found.append(e)
            elif found:
                self._pending = e
                break
        if not found:
            log.debug("%s: no events of %s ahead; scanning", self.path, dialogue_id)
            found = [e for e in self._fresh() if e.dialogue_id == dialogue_id]
            self._walk, self._pending = self._fresh(), None
        return sorted(found, key=lambda e: e.event_index)


def event_problem(turns: Path, events: Path, cfg: TurnsConfig, scratch: Path) -> str | None:
    """Whether ``events`` is the event table of ``turns`` under ``cfg`` (recomputed into
    ``scratch``); None when it is, else what differs first."""
    stage_events(turns, scratch, cfg)
    mine = iter_records(scratch, TurnEventRow)
    try:
        theirs = iter_records(events, TurnEventRow)
        for k, (want, got) in enumerate(itertools.zip_longest(mine, theirs)):
            if want != got:
                return f"row {k}: expected {want}, found {got}"
    except ManifestError as e:
        return str(e)
    finally:
        scratch.unlink(missing_ok=True)
    return None
