"""A release staged before anything is sent: its work directories validated, its split items,
its manifests written locally and the audio it will upload.

:func:`validate_workdirs` (every table's checks, all failures in one table),
:func:`split_items` (one per dialogue, ids unique across work directories),
:func:`stage_manifests` (the release manifests, streamed, and the content-addressed audio
uploads), and :class:`StagedRelease`, what a release's report is drawn from
(:data:`ReportMaker`). :mod:`duetflow.release.publish` orders these steps and the upload.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pyarrow.parquet as pq

from duetflow.config import RunConfig
from duetflow.errors import ManifestError
from duetflow.fairness.audit import AuditResult
from duetflow.licences import UNDECLARED
from duetflow.records.convert import rejection_to_row
from duetflow.records.dialogue import Rejection, Stage
from duetflow.records.manifest import (
    DIALOGUES,
    REJECTION_SCHEMA,
    RENDERED_TURN_SCHEMA,
    TURNS,
    TableWriter,
    iter_records,
    iter_rejections,
)
from duetflow.records.rows import ReleaseDialogueRow, RenderedDialogueRow, RenderedTurnRow
from duetflow.release.failures import Failure, raise_if_failures
from duetflow.release.layout import (
    RELEASE_DIALOGUE_SCHEMA,
)
from duetflow.release.rowcopy import copy_rows
from duetflow.release.splits import (
    SplitItem,
    surplus_reason,
)
from duetflow.release.table_schemas import SPLITS
from duetflow.release.workdir_checks import collect_workdir_failures
from duetflow.storage import audio_key


@dataclass(frozen=True)
class StagedRelease:
    """A release staged for upload, before anything is sent: what its report is drawn from.

    ``workdirs`` are the validated rendered work directories in publish order, ``splits`` the
    split plan (dialogue id → split), ``staging`` a scratch folder that lives until the upload
    is done, ``cue_audit`` the release's cue audit (None when ``release.cue_parity`` is off).
    """

    release_id: str
    workdirs: tuple[Path, ...]
    splits: Mapping[str, str]
    config: RunConfig
    staging: Path
    cue_audit: AuditResult | None = None


#: builds a release's report from the staged release; returns the folder to upload as report/
ReportMaker = Callable[[StagedRelease], Path]


@dataclass(frozen=True, slots=True)
class Upload:
    """One planned object: a slotted record with the file as a plain string (a ``Path`` per
    object would hold its parsed parts, interned, for the whole publish)."""

    key: str
    path: str
    sha256: str
    size: int


def check_rendered(workdir: Path) -> None:
    """Raise ManifestError unless ``workdir`` holds rendered tables (not intake ones)."""
    path = workdir / DIALOGUES
    if not path.is_file():
        raise ManifestError(
            f"{workdir}: not a work directory (no {DIALOGUES}); publish the output of "
            "`duetflow process` or `duetflow synthesize`"
        )
    names = set(pq.read_schema(path).names)
    if "audio_path" not in names:
        hint = " (it holds intake tables from `duetflow ingest`)" if "source" in names else ""
        raise ManifestError(
            f"{workdir}: not a rendered work directory{hint}; run `duetflow process` on it "
            "first and publish that"
        )


def validate_workdirs(workdirs: Sequence[Path], config: RunConfig) -> None:
    for wd in workdirs:
        check_rendered(wd)
    failures: list[Failure] = []
    for wd in workdirs:
        found = collect_workdir_failures(wd, config)
        if len(workdirs) > 1:
            found = [
                Failure(f"{wd.name}/{f.table}", f.row_id, f.column, f.check, f.value) for f in found
            ]
        failures += found
    raise_if_failures(", ".join(str(w) for w in workdirs), failures)


def split_items(workdirs: Sequence[Path]) -> list[SplitItem]:
    items: list[SplitItem] = []
    seen: set[str] = set()
    dups: list[Failure] = []
    for wd in workdirs:
        for rec in iter_records(wd / DIALOGUES, RenderedDialogueRow):
            did = rec.dialogue_id
            if did in seen:
                dups.append(Failure(f"{wd.name}/dialogues", did, "dialogue_id", "unique", did))
                continue
            seen.add(did)
            items.append(SplitItem.of(rec))
    raise_if_failures("dialogue ids repeat across work directories", dups)
    return items


def stage_manifests(
    workdirs: Sequence[Path],
    staging: Path,
    splits: Mapping[str, str],
    dropped: Mapping[str, str],
    licences: Counter[tuple[str, str]],
) -> tuple[dict[str, int], list[Upload]]:
    """Write the release manifests into ``staging``; return row counts and the audio uploads.

    ``licences`` receives the number of dialogues per (licence, split).
    """
    writers = {
        name: TableWriter(staging / f"{name}.parquet", RELEASE_DIALOGUE_SCHEMA, 1024)
        for name in (*SPLITS, "dialogues")
    }
    turns = TableWriter(staging / "turns.parquet", RENDERED_TURN_SCHEMA, 8192)
    rejections = TableWriter(staging / "rejections.parquet", REJECTION_SCHEMA, 8192)
    uploads: dict[str, Upload] = {}
    try:
        for wd in workdirs:
            for rec in iter_records(wd / DIALOGUES, RenderedDialogueRow):
                did = rec.dialogue_id
                if did in dropped:
                    continue
                ext = PurePosixPath(rec.audio_path).suffix.lstrip(".") or "flac"
                key = audio_key(rec.sha256, ext)
                if key not in uploads:
                    path = os.path.join(wd, rec.audio_path)
                    uploads[key] = Upload(key, path, rec.sha256, os.stat(path).st_size)
                skey = None  # issue 27: the two-channel file, content-addressed like the mix
                if rec.stereo_path and rec.stereo_sha256:
                    sext = PurePosixPath(rec.stereo_path).suffix.lstrip(".") or "flac"
                    skey = audio_key(rec.stereo_sha256, sext)
                    if skey not in uploads:
                        spath = os.path.join(wd, rec.stereo_path)
                        size = os.stat(spath).st_size
                        uploads[skey] = Upload(skey, spath, rec.stereo_sha256, size)
                out = ReleaseDialogueRow.released(rec, splits[did], key, skey).to_row()
                licences[(rec.licence or UNDECLARED, splits[did])] += 1
                writers["dialogues"].write([out])
                writers[splits[did]].write([out])
            copy_rows(wd / TURNS, RenderedTurnRow, turns, dropped, keep=False)
            for rej in iter_rejections(wd):
                rejections.write([rejection_to_row(rej)])
        rejections.write(
            rejection_to_row(
                Rejection(did, Stage.PUBLISH, surplus_reason(detail), detail, corpus="")
            )
            for did, detail in sorted(dropped.items())
        )
    except BaseException:
        for w in (*writers.values(), turns, rejections):
            w.abort()
        raise
    counts = {}
    for name, w in writers.items():
        w.close()
        counts[name] = w.rows_written
    turns.close()
    rejections.close()
    counts["turns"] = turns.rows_written
    counts["rejections"] = rejections.rows_written
    return counts, sorted(uploads.values(), key=lambda u: u.key)


def licence_counts(by: Mapping[tuple[str, str], int]) -> dict[str, dict[str, int]]:
    """``{licence: {"dialogues": n, "train": n, "val": n, "test": n}}`` (RELEASE.json)."""
    out: dict[str, dict[str, int]] = {}
    for (lic, split), n in sorted(by.items()):
        cell = out.setdefault(lic, {"dialogues": 0, **dict.fromkeys(SPLITS, 0)})
        cell[split] += n
        cell["dialogues"] += n
    return out
