"""Progress of long loops, reported as log records that a front end may draw.

The library never draws anything: a stage reports ``done`` of ``total`` items on the
``duetflow.progress`` logger (fields ``stage``, ``done``, ``total`` in the record's ``extra``).
The command line attaches a handler that draws one bar per stage on stderr when stderr is a
terminal (:mod:`duetflow.cli.progress`); everywhere else nobody listens (the logger is silent
and does not propagate by default) and a report costs one level check. Ingest, process,
synthesize, publish and pull all report through :class:`Progress`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

LOGGER = "duetflow.progress"
progress_log = logging.getLogger(LOGGER)
# Silent unless a front end listens: it raises the level and attaches its handler. Progress
# never reaches the application's log handlers (one line per item would drown them).
progress_log.setLevel(logging.WARNING)
progress_log.propagate = False
progress_log.addHandler(logging.NullHandler())


def emit(stage: str, label: str, done: int, total: int | None) -> None:
    """One progress record: ``done`` of ``total`` (None: unknown) items of ``stage label``."""
    if not progress_log.isEnabledFor(logging.INFO):
        return
    key = f"{stage} {label}".strip()
    progress_log.info(
        "%s: %d/%s",
        key,
        done,
        total if total is not None else "?",
        extra={"stage": key, "done": done, "total": total},
    )


class Progress:
    """A counter for one stage (and label, e.g. the corpus) that reports every change.

    Thread-safe: upload and download pools advance it from their result loops.
    """

    def __init__(self, stage: str, label: str = "", total: int | None = None) -> None:
        self.stage = stage
        self.label = label
        self.total = total
        self.done = 0
        self._lock = threading.Lock()
        emit(stage, label, 0, total)

    def advance(self, n: int = 1) -> None:
        """``n`` more items done."""
        with self._lock:
            self.done += n
            done = self.done
        emit(self.stage, self.label, done, self.total)

    def set_total(self, total: int | None) -> None:
        """The total became known (or changed)."""
        self.total = total
        emit(self.stage, self.label, self.done, total)


def track(items: Iterable[T], stage: str, label: str = "", total: int | None = None) -> Iterator[T]:
    """Yield ``items`` unchanged, reporting one step after each."""
    bar = Progress(stage, label, total)
    for item in items:
        yield item
        bar.advance()


__all__ = ["LOGGER", "Progress", "emit", "progress_log", "track"]
