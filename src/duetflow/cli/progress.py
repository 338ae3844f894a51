"""Progress bars on stderr for every long command (ingest, process, synthesize, publish, pull).

The library reports progress as records on the ``duetflow.progress`` logger
(:mod:`duetflow.progress`); :func:`progress_bars` draws them as one rich bar per stage while a
command runs, on stderr so stdout stays parseable, and only when enabled (by default when stderr
is a terminal: ``--progress/--no-progress`` override it).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from duetflow.progress import LOGGER


class _BarHandler(logging.Handler):
    """Turns ``duetflow.progress`` records into one rich progress bar per stage and label."""

    def __init__(self, progress: Any) -> None:
        super().__init__(logging.INFO)
        self.progress = progress
        self.tasks: dict[str, Any] = {}

    def emit(self, record: logging.LogRecord) -> None:
        stage = getattr(record, "stage", None)
        if stage is None:
            return
        done = int(getattr(record, "done", 0))
        total = getattr(record, "total", None)
        if stage not in self.tasks:
            self.tasks[stage] = self.progress.add_task(stage, total=total)
        self.progress.update(self.tasks[stage], completed=done, total=total)


@contextmanager
def progress_bars(enabled: bool) -> Iterator[None]:
    """Draw progress bars on stderr while the block runs, when ``enabled``."""
    if not enabled:
        yield
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    logger = logging.getLogger(LOGGER)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=Console(stderr=True),
        transient=False,
    ) as progress:
        handler = _BarHandler(progress)
        old_level, old_prop = logger.level, logger.propagate
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
        try:
            yield
        finally:
            logger.removeHandler(handler)
            logger.setLevel(old_level)
            logger.propagate = old_prop


__all__ = ["progress_bars"]
