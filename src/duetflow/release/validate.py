"""Re-check a published release against its RELEASE.json and the schemas.

What is checked: RELEASE.json parses; every object it lists exists with the recorded size and
— reading the bytes, not trusting metadata — the recorded sha256; the manifests pass the
release schemas and the cross-table checks of a work directory (turns inside their dialogue,
speaker B has turns, gaps in the window...); every dialogue's ``audio_key`` is listed with its
sha256; split files agree with ``dialogues.parquet``; split groups are disjoint; no PH dialogue
is in another split than the HH recording it was made from; counts match; on a sample of
dialogues the acoustic gaps and digital holes measured on the audio
(:func:`duetflow.release.workdir_checks.acoustic_failures`).
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duetflow.config import ReleaseConfig, RenderConfig, RunConfig, TurnsConfig, WindowConfig
from duetflow.errors import DuetflowError, StorageError
from duetflow.records.manifest import iter_column, iter_records, missing_columns, parquet_problem
from duetflow.records.rows import ReleaseDialogueRow, RenderedTurnRow
from duetflow.release.events import EVENTS, event_problem
from duetflow.release.failures import Failure, iter_batches, row_ids, schema_failures
from duetflow.release.layout import (
    manifest_key,
    object_index,
    read_release_json,
    release_json_key,
    resolve_release,
)
from duetflow.release.splits import SplitItem, group_keys, leakage_problems
from duetflow.release.table_schemas import SPLITS, release_index_schema
from duetflow.release.workdir_checks import (
    AUDIO_SAMPLE,
    AudioSample,
    TurnSpan,
    acoustic_failures,
    collect_workdir_failures,
)
from duetflow.storage import Store, open_store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a release: the object key (or manifest) and what is wrong."""

    key: str
    problem: str

    def __str__(self) -> str:
        return f"{self.key}: {self.problem}"


def parse_release_uri(uri: str) -> tuple[str, str]:
    """``STORE[/releases/ID]`` → ``(STORE, ID or "latest")``."""
    text = uri.rstrip("/")
    head, sep, tail = text.rpartition("/releases/")
    if sep and tail and "/" not in tail:
        return head, tail
    return text, "latest"


def _config_from(doc: dict[str, Any], config: RunConfig | None) -> RunConfig:
    if config is not None:
        return config
    try:
        release = ReleaseConfig.model_validate(doc.get("release_config", {}))
        render = RenderConfig.model_validate(doc.get("render_config", {}))
        window = WindowConfig.model_validate(doc.get("window_config", {}))
    except ValueError:
        return RunConfig()
    return RunConfig(release=release, render=render, window=window)


def _check_objects(
    store: Store, objects: Iterable[dict[str, Any]], deep: bool, workers: int
) -> list[Problem]:
    def one(obj: dict[str, Any]) -> list[Problem]:
        key = obj["key"]
        try:
            info = store.head(key)
            if info is None:
                return [Problem(key, "missing from the store")]
            out = []
            if info.size != obj["size"]:
                out.append(Problem(key, f"size {info.size} != recorded {obj['size']}"))
            if deep:
                actual = store.content_sha256(key)
                if actual != obj["sha256"]:
                    out.append(
                        Problem(key, f"checksum mismatch: sha256 {actual} != {obj['sha256']}")
                    )
            return out
        except DuetflowError as e:
            return [Problem(key, str(e))]

    problems: list[Problem] = []
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for found in pool.map(one, objects):
            problems += found
    return problems


def _audio_problems(
    store: Store,
    objects: dict[str, dict[str, Any]],
    local: dict[str, Path],
    cfg: RunConfig,
    tmp: Path,
    size: int,
) -> list[Problem]:
    """Acoustic checks on a sample of the release's dialogues (their audio fetched to ``tmp``)."""
    sample = AudioSample(size, cfg.seed)
    for row in iter_records(local["dialogues"], ReleaseDialogueRow):
        sample.offer(row.dialogue_id, str(row.audio_key), row.provenance)
    chosen = sample.chosen()
    turns: dict[str, list[TurnSpan]] = {did: [] for did in chosen}
    for t in iter_records(local["turns"], RenderedTurnRow):
        if t.dialogue_id in turns and t.kind == "turn":
            turns[t.dialogue_id].append((t.speaker, t.start_s, t.end_s))
    problems: list[Problem] = []
    for did, (key, level) in sorted(chosen.items()):
        obj = objects.get(key)
        if obj is None:
            continue  # reported with the dialogue rows
        dest = tmp / "audio" / key.rsplit("/", 1)[-1]
        try:
            store.get_file(key, dest, obj["sha256"])
        except DuetflowError as e:  # a missing or corrupt object is the object check's report
            log.info("audio sample: %s not measured: %s", key, e)
            continue
        for f in acoustic_failures(did, dest, turns[did], level, cfg):
            problems.append(Problem(key, f"{f.row_id}: {f.check} (value {f.value})"))
        dest.unlink(missing_ok=True)
    return problems


def _manifest_problems(
    store: Store,
    rid: str,
    doc: dict[str, Any],
    cfg: RunConfig,
    tmp: Path,
    audio_sample: int = AUDIO_SAMPLE,
) -> list[Problem]:
    objects = object_index(doc)
    problems: list[Problem] = []
    local: dict[str, Path] = {}
    for name in (*SPLITS, "dialogues", "turns", "rejections"):
        key = manifest_key(rid, name)
        if key not in objects:
            problems.append(Problem(key, "manifest not listed in RELEASE.json"))
            continue
        dest = tmp / f"{name}.parquet"
        try:
            store.get_file(key, dest, objects[key]["sha256"])
        except DuetflowError as e:
            problems.append(Problem(key, str(e)))
            continue
        broken = parquet_problem(dest)
        if broken is not None:  # bytes that match the record but are no table
            problems.append(Problem(key, broken))
            continue
        local[name] = dest
    if {"dialogues", "turns", "rejections"} - set(local):
        return problems

    def table_problems(key: str, failures: Iterable[Failure]) -> list[Problem]:
        return [
            Problem(key, f"{f.table} row {f.row_id}: {f.column} failed {f.check} (value {f.value})")
            for f in failures
        ]

    unreadable = [
        Problem(manifest_key(rid, name), f"missing column(s) {', '.join(missing)}")
        for name, record in (("dialogues", ReleaseDialogueRow), ("turns", RenderedTurnRow))
        if (missing := missing_columns(local[name], record))
    ]
    if unreadable:
        # Every check below reads those columns: pandera would report the same column again
        # and the cross-table checks would fail on its absence; the missing column is the one
        # problem of that manifest.
        return problems + unreadable
    dkey = manifest_key(rid, "dialogues")
    # The work-directory checks apply to the release manifests as they are (audio checked below).
    problems += table_problems(dkey, collect_workdir_failures(tmp, cfg, check_audio=False))
    problems += _audio_problems(store, objects, local, cfg, tmp, audio_sample)
    schema = release_index_schema(cfg)
    split_of: dict[str, str] = {}
    items: list[SplitItem] = []
    for df in iter_batches(local["dialogues"]):
        failures = schema_failures(schema, df, "dialogues", row_ids(df, "dialogue_id"))
        problems += table_problems(dkey, failures)
    for row in iter_records(local["dialogues"], ReleaseDialogueRow):
        did = row.dialogue_id
        split_of[did] = row.split
        obj = objects.get(row.audio_key)
        if obj is None:
            problems.append(Problem(row.audio_key, f"audio of {did} not listed in RELEASE.json"))
        elif obj["sha256"] != row.sha256:
            problems.append(Problem(row.audio_key, f"audio of {did}: sha256 differs"))
        if row.stereo_path is not None or row.stereo_sha256 is not None:  # issue 27
            sobj = objects.get(str(row.stereo_path))
            if sobj is None or sobj["sha256"] != row.stereo_sha256:
                problems.append(
                    Problem(str(row.stereo_path), f"two-channel audio of {did} not listed "
                            f"in RELEASE.json with sha256 {row.stereo_sha256}")
                )  # fmt: skip
        items.append(SplitItem.of(row))
    problems += [Problem(dkey, f"leakage: {p}") for p in leakage_problems(items, split_of)]
    groups = group_keys(items, cfg.release.group_by)
    group_split: dict[str, str] = {}
    for did, key in groups.items():
        first = group_split.setdefault(key, split_of[did])
        if first != split_of[did]:
            problems.append(
                Problem(dkey, f"group {key} straddles splits {first} and {split_of[did]} ({did})")
            )
    counts = doc.get("counts", {})
    for split in SPLITS:
        if split not in local:
            continue
        skey = manifest_key(rid, split)
        ids = list(iter_column(local[split], "dialogue_id"))
        expected = [d for d, s in split_of.items() if s == split]
        if sorted(ids) != sorted(expected):
            problems.append(Problem(skey, "rows differ from the dialogues manifest's split"))
        if counts.get(split) != len(ids):
            problems.append(
                Problem(skey, f"{len(ids)} rows, RELEASE.json says {counts.get(split)}")
            )
    problems += _event_problems(store, rid, objects, local["turns"], doc, tmp)
    if counts.get("dialogues") != len(split_of):
        problems.append(
            Problem(dkey, f"{len(split_of)} rows, RELEASE.json says {counts.get('dialogues')}")
        )
    return problems


def _event_problems(
    store: Store,
    rid: str,
    objects: dict[str, dict[str, Any]],
    turns: Path,
    doc: dict[str, Any],
    tmp: Path,
) -> list[Problem]:
    """The event table (when the release has one) is the one its turns give, classified with
    the ``turns_config`` RELEASE.json records (issue 27)."""
    key = manifest_key(rid, EVENTS)
    if key not in objects:
        return []
    try:
        turns_cfg = TurnsConfig.model_validate(doc.get("turns_config", {}))
    except ValueError as e:
        return [Problem(release_json_key(rid), f"turns_config: {e}")]
    dest = tmp / f"{EVENTS}.parquet"
    try:
        store.get_file(key, dest, objects[key]["sha256"])
    except DuetflowError as e:
        return [Problem(key, str(e))]
    try:
        found = event_problem(turns, dest, turns_cfg, tmp / f"{EVENTS}.recomputed.parquet")
    finally:
        dest.unlink(missing_ok=True)
    return [] if found is None else [Problem(key, f"not the events of the turns: {found}")]


def validate_release(
    uri: str,
    release_id: str | None = None,
    config: RunConfig | None = None,
    *,
    store: Store | None = None,
    deep: bool = True,
    workers: int = 8,
    audio_sample: int = AUDIO_SAMPLE,
) -> list[Problem]:
    """Every problem of a published release (empty list: valid).

    ``uri`` may be a store URI or ``STORE/releases/ID``; ``release_id`` (default: the one in
    the URI, else ``latest``) wins when given. ``deep=False`` trusts stored checksums instead
    of reading every object. ``audio_sample`` dialogues are fetched and measured (0: none).
    """
    store_uri, rid_from_uri = parse_release_uri(uri)
    rel = release_id or rid_from_uri
    st = store or open_store(store_uri, (config or RunConfig()).release)
    try:
        rid = resolve_release(st, rel)
        doc = read_release_json(st, rid)
    except StorageError as e:
        return [Problem(release_json_key(rel) if rel != "latest" else "releases/LATEST", str(e))]
    cfg = _config_from(doc, config)
    problems = _check_objects(st, doc["objects"], deep, workers)
    with tempfile.TemporaryDirectory(prefix="duetflow-validate-") as tmp:
        problems += _manifest_problems(st, rid, doc, cfg, Path(tmp), audio_sample)
    problems = list(dict.fromkeys(problems))  # one check can fail in two passes
    log.info("validated %s/releases/%s: %d problem(s)", st.uri, rid, len(problems))
    return problems
