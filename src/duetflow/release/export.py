"""Exports of a pulled release for the ecosystem: lhotse manifests and a HF datasets layout.

Both read a folder laid out by :func:`duetflow.release.pull.pull` (``<split>.parquet`` +
``turns.parquet`` + audio) and stream it dialogue by dialogue: dialogue rows and turn rows are
in the same order (the publish writes them in lockstep), so turns are attached with a merge
walk instead of an index held in memory.

* lhotse: :func:`duetflow.release.export_lhotse.export_lhotse` (recordings and supervisions);
* Hugging Face: :func:`duetflow.release.export_hf.export_hf` (a ``datasets`` Parquet layout) and
  :func:`duetflow.release.export_hf.load_hf`;
* WebDataset and lhotse Shar shards: :mod:`duetflow.release.shards`.

This module is the walk they share: which splits a pulled folder holds
(:func:`present_splits`, :func:`non_empty_splits`) and its dialogues with their turns
(:func:`iter_dialogues_with_turns`).

A split without dialogues is left out of both exports (a 0-row file breaks the loaders). Gzip
and Parquet output carry no timestamps: the same input gives the same bytes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from pathlib import Path

import pyarrow.parquet as pq

from duetflow.errors import ManifestError
from duetflow.records.manifest import iter_records
from duetflow.records.rows import (
    ReleaseDialogueRow,
    RenderedTurnRow,
)
from duetflow.release.table_schemas import SPLITS

log = logging.getLogger(__name__)


def present_splits(pulled: Path, splits: Sequence[str] | None) -> list[str]:
    wanted = list(splits) if splits else [s for s in SPLITS if (pulled / f"{s}.parquet").is_file()]
    missing = [s for s in wanted if not (pulled / f"{s}.parquet").is_file()]
    if missing or not wanted:
        raise ManifestError(
            f"{pulled}: no pulled manifest for split(s) {missing or list(SPLITS)}; "
            "run `duetflow pull` first"
        )
    return wanted


def iter_dialogues_with_turns(
    pulled: Path, split: str
) -> Iterator[tuple[ReleaseDialogueRow, list[RenderedTurnRow]]]:
    """(dialogue record, its turn records) of a pulled split, streaming both files in order.

    Falls back to scanning ``turns.parquet`` for a dialogue whose turns are not where the order
    says they should be (slow, but never wrong).
    """
    turns_path = pulled / "turns.parquet"
    walk = iter_records(turns_path, RenderedTurnRow)
    pending: RenderedTurnRow | None = None
    for row in iter_records(pulled / f"{split}.parquet", ReleaseDialogueRow):
        did = row.dialogue_id
        found: list[RenderedTurnRow] = []
        exhausted = False
        while True:
            t = pending if pending is not None else next(walk, None)
            pending = None
            if t is None:
                exhausted = True
                break
            if t.dialogue_id == did:
                found.append(t)
            elif found:
                pending = t
                break
        if exhausted and not found:
            log.warning("%s: turns of %s out of order; scanning", turns_path, did)
            found = [t for t in iter_records(turns_path, RenderedTurnRow) if t.dialogue_id == did]
            walk = iter_records(turns_path, RenderedTurnRow)
        yield row, sorted(found, key=lambda t: t.turn_index)


def non_empty_splits(pulled: Path, names: Sequence[str]) -> list[str]:
    """The splits of ``names`` with at least one dialogue (an empty split is left out: a
    0-row Parquet file breaks ``datasets.load_dataset`` and lhotse's manifest loader)."""
    keep = [s for s in names if pq.ParquetFile(pulled / f"{s}.parquet").metadata.num_rows > 0]
    for s in names:
        if s not in keep:
            log.warning("%s: split %s has no dialogues; not exported", pulled, s)
    if not keep:
        raise ManifestError(
            f"{pulled}: split(s) {list(names)} hold no dialogues; nothing to export"
        )
    return keep
