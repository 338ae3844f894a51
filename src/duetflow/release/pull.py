"""Fetch a release (or one split) for training: parallel, resumable, checksum-verified.

``pull`` lays out a folder that mirrors the store::

    DEST/<split>.parquet      the split's dialogue rows, byte-identical to the published manifest
    DEST/turns.parquet        the turn rows of the splits pulled into DEST (join on dialogue_id)
    DEST/events.parquet       their turn-taking events (release.events; join on dialogue_id)
    DEST/RELEASE.json         the release's record
    DEST/report/              the dataset card (README.md), the HTML report and its plots
    DEST/audio/<aa>/<sha256>.flac

``turns.parquet`` holds only the turns of the splits present in DEST: a train-only pull carries
no test transcripts. Pulling another split into the same DEST adds its turns.

A filtered pull (``where``, :mod:`duetflow.release.view`: category, language, corpus, topic)
writes only the kept rows to ``DEST/<split>.parquet`` (the published manifest is verified
first, then filtered) and fetches, and verifies, only their audio and turns.

Each row's ``audio_path`` equals its ``audio_key``, i.e. the audio's path relative to DEST, so
the pulled manifests stay byte-identical to what was published and still point at the local
files. :func:`open_release` returns DataFrames whose ``audio_path`` is absolute.

Every file is downloaded to a temp name, verified against the sha256 recorded in RELEASE.json
and renamed into place; an interrupted pull is resumed by running it again (files already there
with the right checksum are skipped). A checksum mismatch fails loudly, naming the key.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from duetflow.config import RunConfig
from duetflow.errors import ConfigError, StorageError
from duetflow.hashing import sha256_file
from duetflow.leftovers import remove_stale_temp_files, temp_file
from duetflow.progress import Progress
from duetflow.records.manifest import (
    RENDERED_TURN_SCHEMA,
    TableWriter,
    iter_column,
    iter_records,
    parquet_problem,
)
from duetflow.records.rows import ReleaseDialogueRow, RenderedTurnRow, TurnEventRow
from duetflow.release.events import EVENT_SCHEMA, EVENTS
from duetflow.release.layout import (
    manifest_key,
    read_release_json,
    release_json_key,
    release_prefix,
    resolve_release,
)
from duetflow.release.rowcopy import copy_rows
from duetflow.release.table_schemas import SPLITS
from duetflow.release.view import FilterValues, ReleaseFilter, filter_manifest
from duetflow.storage import Store, open_store
from duetflow.storage.parallel import bounded_map
from duetflow.storage.store import checked_audio_key
from duetflow.user_cache import user_cache_dir

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PullResult:
    """What a pull laid out and how much it had to download."""

    release_id: str
    split: str
    dest: Path
    manifest: Path
    turns: Path
    dialogues: int
    downloaded: int
    skipped: int
    report: Path | None = None  # DEST/report (card + HTML) when the release carries one
    #: the view pulled (:class:`~duetflow.release.view.ReleaseFilter`; empty: the whole split)
    where: ReleaseFilter = field(default_factory=ReleaseFilter)


@dataclass(frozen=True, eq=False)
class Release:
    """A fetched release: splits as DataFrames with absolute ``audio_path`` values."""

    release_id: str
    uri: str
    root: Path
    info: Mapping[str, Any]
    splits: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    turns: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: the turn-taking events of the fetched dialogues (``events.parquet``; empty for a release
    #: older than the event table)
    events: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: the view fetched (empty: whole splits)
    where: ReleaseFilter = field(default_factory=ReleaseFilter)

    def __getitem__(self, split: str) -> pd.DataFrame:
        try:
            return self.splits[split]
        except KeyError:
            raise KeyError(f"split {split!r} not fetched; have {sorted(self.splits)}") from None

    @property
    def train(self) -> pd.DataFrame:
        return self["train"]

    @property
    def val(self) -> pd.DataFrame:
        return self["val"]

    @property
    def test(self) -> pd.DataFrame:
        return self["test"]

    def table(self, split: str) -> pa.Table:
        """A split as a pyarrow Table (same columns as the DataFrame)."""
        return pa.Table.from_pandas(self[split], preserve_index=False)


def _fetch(store: Store, key: str, dest: Path, sha256: str) -> bool:
    """Download unless ``dest`` already holds these bytes; True when bytes were fetched."""
    if dest.is_file() and sha256_file(dest) == sha256:
        return False
    store.get_file(key, dest, sha256)
    return True


def _refuse_if_not_table(uri: str, key: str, path: Path, record: type[Any]) -> None:
    """StorageError unless the downloaded ``path`` is a Parquet table with ``record``'s columns
    (its checksum matched RELEASE.json, so a tampered record was rewritten with it)."""
    problem = parquet_problem(path, record)
    if problem is not None:
        raise StorageError(
            f"{uri}: {key}: {problem} (its checksum matches RELEASE.json, so the "
            "record was rewritten with it); nothing pulled"
        )


def _fetch_table(store: Store, key: str, dest: Path, sha256: str, record: type[Any]) -> bool:
    """:func:`_fetch` for a manifest, which must also be a Parquet table with ``record``'s
    columns before it is placed at ``dest`` (a record rewritten together with the file matches
    its checksum). StorageError naming the key and the cause; ``dest`` is then removed."""
    if dest.is_file() and sha256_file(dest) == sha256:
        problem = parquet_problem(dest, record)
        if problem is None:
            return False
        dest.unlink()
        raise StorageError(f"{store.uri}: {key}: {problem}; removed from {dest.parent}")
    tmp = temp_file(dest)
    try:
        store.get_file(key, tmp, sha256)
        _refuse_if_not_table(store.uri, key, tmp, record)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return True


def pull(
    store_uri: str,
    release: str = "latest",
    split: str = "train",
    dest: str | Path = "./duetflow-data",
    config: RunConfig | None = None,
    *,
    store: Store | None = None,
    workers: int = 8,
    where: ReleaseFilter | None = None,
) -> PullResult:
    """Fetch one split of a release into ``dest`` (see the module docstring for the layout).

    ``where``: only the dialogues of this view (category, language, corpus, topic; see
    :mod:`duetflow.release.view`). The published split manifest is still fetched and verified
    against RELEASE.json, then filtered into ``DEST/<split>.parquet``; only the kept rows'
    audio is fetched, each object verified, and ``turns.parquet`` holds only their turns.
    """
    if split not in SPLITS:
        raise ConfigError(f"unknown split {split!r}: choose one of {', '.join(SPLITS)}")
    cfg = config or RunConfig()
    st = store or open_store(store_uri, cfg.release)
    rid = resolve_release(st, release)
    doc = read_release_json(st, rid)
    # the release's own files (manifests, report, stats: a few), key -> sha256; the audio
    # objects, one per dialogue, are looked up below only for the split's rows
    objects = {
        o["key"]: o["sha256"] for o in doc["objects"] if not o["key"].startswith(AUDIO_PREFIX)
    }
    out = Path(dest)
    out.mkdir(parents=True, exist_ok=True)
    remove_stale_temp_files(out)  # what a killed pull left

    split_key, turns_key = manifest_key(rid, split), manifest_key(rid, "turns")
    for key in (split_key, turns_key):
        if key not in objects:
            raise StorageError(f"{st.uri}: {key} is not listed in {release_json_key(rid)}")
    split_dest = out / f"{split}.parquet"
    view = where or ReleaseFilter()
    if view:
        fetched = _fetch_filtered(st, split_key, split_dest, objects[split_key], view)
    else:
        fetched = int(
            _fetch_table(st, split_key, split_dest, objects[split_key], ReleaseDialogueRow)
        )
    try:
        _pull_turns(st, turns_key, objects, out)
        events_key = manifest_key(rid, EVENTS)
        if events_key in objects:  # releases before issue 27 have no event table
            _pull_turns(st, events_key, objects, out, EVENTS, TurnEventRow, EVENT_SCHEMA)
        else:  # no stale events of another release beside these turns
            (out / f"{EVENTS}.parquet").unlink(missing_ok=True)
    except StorageError:
        if fetched:  # nothing this pull placed stays beside a failure
            split_dest.unlink(missing_ok=True)
        raise
    report = _pull_report(st, release_prefix(rid), objects, out)
    record = st.get_bytes(release_json_key(rid))
    if not (out / "RELEASE.json").is_file() or (out / "RELEASE.json").read_bytes() != record:
        tmp = temp_file(out / "RELEASE.json")
        tmp.write_bytes(record)
        os.replace(tmp, out / "RELEASE.json")

    jobs = _audio_jobs(st.uri, rid, out / f"{split}.parquet", doc)
    del doc  # from here on only the split's audio keys are held

    def job(item: tuple[str, str]) -> bool | Exception:
        key, sha = item
        try:
            return _fetch(st, key, out.joinpath(*key.split("/")), sha)
        except StorageError as e:
            return e

    errors: list[str] = []
    downloaded = skipped = 0
    bar = Progress("pull", split, len(jobs))
    for res in bounded_map(job, sorted(jobs.items()), workers):
        bar.advance()
        if isinstance(res, Exception):
            errors.append(str(res))
        elif res:
            downloaded += 1
        else:
            skipped += 1
    if errors:
        errors.sort()  # completion order varies; the message does not
        shown = "\n".join(errors[:20])
        more = f"\n... and {len(errors) - 20} more" if len(errors) > 20 else ""
        raise StorageError(
            f"pull of {rid}/{split} failed for {len(errors)} object(s):\n{shown}{more}"
        )
    n = pq.ParquetFile(out / f"{split}.parquet").metadata.num_rows
    log.info(
        "pulled %s/%s (%s) into %s: %d dialogues, %d audio file(s) downloaded, %d already present",
        rid,
        split,
        view.describe(),
        out,
        n,
        downloaded,
        skipped,
    )
    return PullResult(
        rid, split, out, out / f"{split}.parquet", out / "turns.parquet", n, downloaded + fetched,
        skipped, report, view,
    )  # fmt: skip


def _fetch_filtered(st: Store, key: str, dest: Path, sha256: str, view: ReleaseFilter) -> int:
    """``dest``: the rows of the published split manifest ``key`` that ``view`` keeps.

    The manifest is downloaded to a temp name and verified against ``sha256`` first (the same
    check as an unfiltered pull); 1 when ``dest`` changed, 0 when it already held these rows.
    """
    tmp, filtered = temp_file(dest.with_name(f".{dest.name}.all")), temp_file(dest)
    try:
        st.get_file(key, tmp, sha256)
        _refuse_if_not_table(st.uri, key, tmp, ReleaseDialogueRow)
        filter_manifest(tmp, filtered, view)
        if dest.is_file() and sha256_file(dest) == sha256_file(filtered):
            return 0
        os.replace(filtered, dest)
        return 1
    finally:
        tmp.unlink(missing_ok=True)
        filtered.unlink(missing_ok=True)


#: every audio object's key starts so (``audio/<aa>/<sha256>.<ext>``)
AUDIO_PREFIX = "audio/"


def _split_audio(uri: str, manifest: Path) -> Iterator[tuple[str, str, str]]:
    """(audio key, sha256, dialogue id) of a split manifest's rows, each key checked to be the
    content address of its sha256 (the only thing a local path is derived from)."""
    for row in iter_records(manifest, ReleaseDialogueRow):
        try:
            key = checked_audio_key(row.audio_key, row.sha256)
            # issue 27: the two-channel file, when the dialogue has one, is fetched the same way
            stereo = (
                checked_audio_key(row.stereo_path, row.stereo_sha256)
                if row.stereo_path is not None or row.stereo_sha256 is not None
                else None
            )
        except StorageError as e:
            raise StorageError(f"{uri}: dialogue {row.dialogue_id}: {e}") from None
        yield key, row.sha256, row.dialogue_id
        if stereo is not None and row.stereo_sha256 is not None:
            yield stereo, row.stereo_sha256, row.dialogue_id


def _audio_jobs(uri: str, rid: str, manifest: Path, doc: Mapping[str, Any]) -> dict[str, str]:
    """Audio key -> sha256 for the rows of a split manifest, each checked to be listed with
    that sha256 in the release's RELEASE.json (``doc``); StorageError naming the first row that
    is not. Holds the split's keys only, not an index of every object of the release."""
    jobs = {key: sha for key, sha, _ in _split_audio(uri, manifest)}
    listed = {o["key"]: o["sha256"] for o in doc["objects"] if o["key"] in jobs}
    if any(listed.get(key) != sha for key, sha in jobs.items()):
        for key, sha, did in _split_audio(uri, manifest):  # name the first row in file order
            if listed.get(key) != sha:
                raise StorageError(
                    f"{uri}: {key} (dialogue {did}) is not listed in "
                    f"{release_json_key(rid)} with sha256 {sha}"
                )
    return jobs


def pulled_audio_path(root: Path, audio_key: object, sha256: object) -> Path:
    """Local path of a release row's audio under ``root`` (a pulled folder or a store root).

    Derived only from the row's ``audio_key``, checked to be the content address of its
    ``sha256``; the row's ``audio_path`` is never trusted (StorageError on a bad key).
    """
    return root.joinpath(*checked_audio_key(audio_key, sha256).split("/"))


def _pull_turns(
    st: Store,
    key: str,
    objects: Mapping[str, str],
    out: Path,
    name: str = "turns",
    record: type[RenderedTurnRow] | type[TurnEventRow] = RenderedTurnRow,
    schema: pa.Schema = RENDERED_TURN_SCHEMA,
) -> None:
    """``out/turns.parquet``: the release's turn rows of the splits whose manifest is in ``out``
    (``name``/``record``/``schema``: another per-dialogue table the same way, the events).

    The published file is fetched (checksum-verified) to a temporary name, filtered by streaming
    row groups and deleted, so no other split's transcripts stay on disk.
    """
    tmp = temp_file(out / f".{name}.all")
    try:
        st.get_file(key, tmp, objects[key])
        _refuse_if_not_table(st.uri, key, tmp, record)
        wanted = {
            str(did)
            for s in SPLITS
            if (out / f"{s}.parquet").is_file()
            for did in iter_column(out / f"{s}.parquet", "dialogue_id")
        }
        with TableWriter(out / f"{name}.parquet", schema, 8192) as w:
            copy_rows(tmp, record, w, wanted, keep=True)
    finally:
        tmp.unlink(missing_ok=True)


def _pull_report(st: Store, prefix: str, objects: Mapping[str, str], out: Path) -> Path | None:
    """The release's ``report/`` objects (card, HTML, plots) into ``out/report``; None if none."""
    base = prefix + "report/"
    keys = sorted(k for k in objects if k.startswith(base))
    if not keys:
        return None
    dest = out / "report"
    for key in keys:
        rel = PurePosixPath(key[len(base) :])
        if rel.is_absolute() or not rel.parts or any(p in ("", ".", "..") for p in rel.parts):
            raise StorageError(f"{st.uri}: refusing report object {key!r} (not a plain path)")
        _fetch(st, key, dest.joinpath(*rel.parts), objects[key])
    return dest


def default_cache_dir() -> Path:
    """Where pulled releases go by default: the user cache folder
    (:func:`duetflow.user_cache.user_cache_dir`: ``$DUETFLOW_CACHE``, else
    ``$XDG_CACHE_HOME/duetflow``, else ``~/.cache/duetflow``)."""
    return user_cache_dir()


def open_release(
    uri: str,
    release: str = "latest",
    cache_dir: str | Path | None = None,
    *,
    splits: Sequence[str] = SPLITS,
    config: RunConfig | None = None,
    store: Store | None = None,
    category: FilterValues = None,
    language: FilterValues = None,
    corpus: FilterValues = None,
    topic: FilterValues = None,
) -> Release:
    """Fetch the given splits of a release into a cache and return them as DataFrames.

    The cache folder is ``<cache_dir>/<hash of the store URI>/<release id>``; fetching again
    only checks checksums. ``category``, ``language``, ``corpus``, ``topic`` (a value or a list
    of values each) fetch a filtered view instead (OR within a field, AND across fields; see
    :mod:`duetflow.release.view`), cached apart in ``<release id>@<hash of the filter>``.
    """
    cfg = config or RunConfig()
    st = store or open_store(uri, cfg.release)
    rid = resolve_release(st, release)
    view = ReleaseFilter.of(category=category, language=language, corpus=corpus, topic=topic)
    base = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    root = base / hashlib.sha256(st.uri.encode()).hexdigest()[:12] / rid
    if view:
        root = root.with_name(f"{rid}@{view.key()}")
    frames: dict[str, pd.DataFrame] = {}
    for split in splits:
        res = pull(uri, rid, split, root, cfg, store=st, where=view)
        df = pd.read_parquet(res.manifest)
        df["audio_path"] = [
            str(pulled_audio_path(root, k, h))
            for k, h in zip(df["audio_key"], df["sha256"], strict=True)
        ]
        frames[split] = df
    turns = pd.read_parquet(root / "turns.parquet")
    events_path = root / f"{EVENTS}.parquet"
    events = pd.read_parquet(events_path) if events_path.is_file() else pd.DataFrame()
    info = read_release_json(st, rid)
    uri_of = f"{st.uri.rstrip('/')}/releases/{rid}"
    return Release(rid, uri_of, root, info, frames, turns, events, view)
