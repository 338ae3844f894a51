"""Ingest: one corpus root → the intake tables of a work directory.

Streams the adapter's records straight into :class:`~duetflow.records.manifest.IntakeWriter`, one
dialogue at a time, so memory does not grow with the corpus. Every source item is counted once:
``found == kept + rejected``. A dialogue id seen twice (two items mapping to one id) is
quarantined as ``duplicate_id`` rather than written twice.
"""

from __future__ import annotations

import itertools
import logging
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from duetflow.config import RunConfig
from duetflow.corpora import get_adapter
from duetflow.corpora.adapter import DuplicateGuard
from duetflow.errors import ConfigError, InputError, is_utf8, printable
from duetflow.langtag import language_tag_problem
from duetflow.progress import Progress
from duetflow.records.convert import dialogue_records
from duetflow.records.dialogue import Dialogue, Rejection, Stage
from duetflow.records.locations import relative_rejection, root_spellings, stamp_root
from duetflow.records.manifest import IntakeWriter

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class IngestReport:
    """Counts of one ingest; ``by_reason`` maps rejection reason → count."""

    corpus: str
    found: int
    kept: int
    rejected: int
    by_reason: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        reasons = ", ".join(f"{k}={v}" for k, v in sorted(self.by_reason.items()))
        return f"{self.corpus}: found {self.found}, kept {self.kept}, rejected {self.rejected}" + (
            f" ({reasons})" if reasons else ""
        )


def ingest(
    corpus: str,
    root: Path,
    workdir: Path,
    config: RunConfig,
    options: Mapping[str, Any] | None = None,
    *,
    licence: str | None = None,
    progress: bool = True,
) -> IngestReport:
    """Scan ``root`` with the adapter registered as ``corpus`` and write intake tables.

    Where the corpus sits is recorded for the later stages only (:mod:`duetflow.records.locations`:
    each dialogue's provenance carries its root, rejections name paths relative to it).
    Every dialogue is stamped with its licence: ``licence`` (the config's ``corpora[].licence``)
    when given, else the one the adapter set on the dialogue, else the adapter's declared one.
    Raises ConfigError when the corpus is unknown, declares no licence, or the root is unusable
    (nothing can be counted); individual bad items never raise, they become rejections.
    ``progress`` reports items done (of ``count_sources()``) to :mod:`duetflow.progress`.
    """
    if not is_utf8(str(root)):
        raise ConfigError(
            f"corpus {corpus!r}: root {printable(str(root))} is not valid UTF-8 (undecodable "
            "bytes shown as \\xNN); rename it or link to it from a UTF-8 path"
        )
    adapter = get_adapter(corpus)(Path(root), options, config=config)
    default_licence = adapter.resolve_licence(licence)
    total = adapter.count_sources() if progress else None
    bar = Progress("ingest", corpus, total) if progress else None
    guard = DuplicateGuard()
    kept = 0
    reasons: Counter[str] = Counter()
    items = adapter.scan()
    first = next(items, None)  # a bad root fails here, before anything is written
    roots = root_spellings(root)
    with IntakeWriter(workdir) as writer:
        for item in itertools.chain([first] if first is not None else [], items):
            if isinstance(item, Dialogue):
                item = stamp_root(item, Path(root).resolve())
                if licence or not item.licence:
                    item = replace(item, licence=default_licence)
                try:
                    _check_utf8(item)
                    _check_language(item)
                    guard.check(item.id, item.source_id)
                except InputError as e:
                    item = Rejection(
                        item_id=item.id,
                        stage=Stage.INGEST,
                        reason=e.reason,
                        detail=str(e),
                        corpus=item.corpus,
                        source_path=item.source_id,
                    )
            if isinstance(item, Rejection):
                item = relative_rejection(item, roots)
            writer.add(item)
            if isinstance(item, Rejection):
                reasons[item.reason] += 1
            else:
                kept += 1
            if bar is not None:
                bar.advance()
    rejected = sum(reasons.values())
    report = IngestReport(corpus, kept + rejected, kept, rejected, dict(sorted(reasons.items())))
    log.info("ingest %s", report.summary())
    return report


def _check_language(dialogue: Dialogue) -> None:
    """InputError (``bad_language``) when the dialogue's or a speaker's language is not a
    well-formed BCP 47 tag (it becomes a column, a split key and a card's language list)."""
    tags = [("language", dialogue.language)]
    tags += [(f"speakers.{s.id}.language", s.language) for s in dialogue.speakers if s.language]
    for where, tag in tags:
        problem = language_tag_problem(tag)
        if problem is not None:
            raise InputError(dialogue.source_id, problem, reason="bad_language", field=where)


def _check_utf8(dialogue: Dialogue) -> None:
    """InputError (``bad_name``) when a text of ``dialogue``'s intake rows is not valid UTF-8.

    Any adapter may meet a file name with undecodable bytes (``os.fsdecode`` keeps them as
    surrogates); such a dialogue is quarantined here instead of aborting the table writer.
    """
    record, turns = dialogue_records(dialogue)
    for rec in (record, *turns):
        for name, value in vars(rec).items():
            if isinstance(value, str) and not is_utf8(value):
                raise InputError(
                    dialogue.source_id,
                    f"{name} is not valid UTF-8 (a file name with undecodable bytes, shown "
                    f"as \\xNN): {printable(value)[:300]}",
                    reason="bad_name",
                    field=name,
                )


__all__ = ["IngestReport", "ingest"]
