"""Where a report reads from: rendered work directories or a published release.

A report describes either what a pipeline run produced (one or several *rendered* work
directories: one per corpus plus PH) or what a release holds (``releases/<id>/`` in a store).
Both are reduced to the same :class:`ReportInput` — local Parquet files plus a way to find a
dialogue's audio — so the statistics code never cares where the data came from.
"""

from __future__ import annotations

import json
import logging
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from duetflow.errors import InputError, StorageError
from duetflow.records.manifest import DIALOGUES, REJECTIONS, TURNS
from duetflow.records.rows import ReleaseDialogueRow, RenderedDialogueRow
from duetflow.storage.store import checked_audio_key

log = logging.getLogger(__name__)

STATS_JSON = "stats.json"
RELEASE_JSON = "RELEASE.json"


class AudioLocator(Protocol):
    def __call__(self, row: RenderedDialogueRow) -> Path: ...


@dataclass(frozen=True)
class ReportInput:
    """One readable unit of a report: a rendered work directory or one release.

    ``dialogues``/``turns``/``rejections`` are local Parquet files (a remote release is copied to
    a temporary folder first); ``audio`` maps a dialogue row to a local audio file.
    """

    kind: Literal["workdir", "release"]
    label: str
    dialogues: Path
    turns: Path | None
    rejections: Path | None
    audio: AudioLocator
    stats: tuple[Mapping[str, Any], ...] = ()
    release: Mapping[str, Any] | None = None
    release_id: str | None = None

    @property
    def record(self) -> type[RenderedDialogueRow]:
        """The record type of its dialogue rows: a release's carry split and audio key."""
        return ReleaseDialogueRow if self.kind == "release" else RenderedDialogueRow


@dataclass
class _WorkdirAudio:
    root: Path

    def __call__(self, row: RenderedDialogueRow) -> Path:
        rel = row.audio_path
        if not rel:
            raise InputError(
                self.root / DIALOGUES, "dialogue row has no audio_path", field="audio_path"
            )
        return self.root / str(rel)


@dataclass
class _StoreAudio:
    """Audio of a release: ``audio_key`` relative to the store root (local dir or remote store)."""

    root: Path | None = None
    store: Any = None
    tmp: Path | None = None
    fetched: dict[str, Path] = field(default_factory=dict)

    def __call__(self, row: RenderedDialogueRow) -> Path:
        audio = row.audio_key if isinstance(row, ReleaseDialogueRow) else None
        try:  # never a path from the row's audio_path: only the verified content address
            key = checked_audio_key(audio, row.sha256)
        except StorageError as e:
            raise InputError(
                None, f"dialogue {row.dialogue_id}: {e}", reason="bad_audio_key"
            ) from None
        if self.root is not None:
            return self.root.joinpath(*key.split("/"))
        if self.store is None or self.tmp is None:  # pragma: no cover - constructed together
            raise InputError(key, "no store to read audio from")
        if key not in self.fetched:
            dest = self.tmp.joinpath("audio", *key.split("/"))
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(_store_get(self.store, key))
            self.fetched[key] = dest
        return self.fetched[key]


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise InputError(path, f"invalid JSON: {e}", reason="bad_json") from None
    if not isinstance(data, dict):
        raise InputError(path, "expected a JSON object", reason="bad_json")
    return data


def _workdir_stats(wd: Path) -> tuple[Mapping[str, Any], ...]:
    p = wd / STATS_JSON
    return (_read_json(p),) if p.exists() else ()


def workdir_input(wd: Path) -> ReportInput:
    """A rendered work directory (``dialogues/turns/rejections.parquet`` + audio + stats.json)."""
    if not (wd / DIALOGUES).exists():
        raise InputError(wd / DIALOGUES, "not a rendered work directory: dialogues.parquet missing")
    turns = wd / TURNS
    rej = wd / REJECTIONS
    return ReportInput(
        kind="workdir",
        label=wd.name,  # not the path: a release's report is the same whichever workdir ran it
        dialogues=wd / DIALOGUES,
        turns=turns if turns.exists() else None,
        rejections=rej if rej.exists() else None,
        audio=_WorkdirAudio(wd),
        stats=_workdir_stats(wd),
    )


def _release_stats(meta: Mapping[str, Any] | None, rel_dir: Path) -> tuple[Mapping[str, Any], ...]:
    """Source turn-taking stats carried by a release (RELEASE.json ``stats`` or stats files)."""
    found: list[Mapping[str, Any]] = []
    if meta:
        st = meta.get("stats")
        if isinstance(st, Mapping):
            found.append(st)
        elif isinstance(st, list):
            found.extend(s for s in st if isinstance(s, Mapping))
    for p in sorted((rel_dir / "stats").glob("*.json")) if (rel_dir / "stats").is_dir() else []:
        found.append(_read_json(p))
    if (rel_dir / STATS_JSON).exists():
        found.append(_read_json(rel_dir / STATS_JSON))
    return tuple(found)


def local_release_input(rel_dir: Path) -> ReportInput:
    """A release folder ``<store>/releases/<id>`` on a local disk.

    RELEASE.json is read when present; a folder without it (a release being published, whose
    report is written before RELEASE.json) is still readable here on purpose.
    """
    man = rel_dir / "manifests"
    if not (man / DIALOGUES).exists():
        raise InputError(man / DIALOGUES, "not a release: manifests/dialogues.parquet missing")
    meta = _read_json(rel_dir / RELEASE_JSON) if (rel_dir / RELEASE_JSON).exists() else None
    store_root = rel_dir.parent.parent
    return ReportInput(
        kind="release",
        label=str(rel_dir),
        dialogues=man / DIALOGUES,
        turns=man / TURNS if (man / TURNS).exists() else None,
        rejections=man / REJECTIONS if (man / REJECTIONS).exists() else None,
        audio=_StoreAudio(root=store_root),
        stats=_release_stats(meta, rel_dir),
        release=meta,
        release_id=rel_dir.name,
    )


# --- remote stores (duetflow.storage) -----------------------------------------------------------


def _store_get(store: Any, key: str) -> bytes:
    for name in ("get_bytes", "get", "read_bytes", "read"):
        fn = getattr(store, name, None)
        if callable(fn):
            data = fn(key)
            if isinstance(data, bytes | bytearray):
                return bytes(data)
    raise InputError(key, "store object has no readable get method")


def _store_exists(store: Any, key: str) -> bool:
    fn = getattr(store, "exists", None)
    if callable(fn):
        return bool(fn(key))
    try:
        _store_get(store, key)
    except Exception:
        return False
    return True


def _split_release_uri(uri: str) -> tuple[str, str | None]:
    """``s3://b/p/releases/ID`` → (``s3://b/p``, ``ID``); a store root → (root, None)."""
    u = uri.rstrip("/")
    marker = "/releases/"
    if marker in u:
        root, rid = u.rsplit(marker, 1)
        return root, rid or None
    return u, None


def _remote_release_input(uri: str, config: Any, stack: ExitStack) -> ReportInput:
    from duetflow.storage import open_store  # release engineer's module; only for remote URIs

    root, rid = _split_release_uri(uri)
    store = open_store(root, config.release) if config is not None else open_store(root)
    if rid in (None, "latest", "LATEST"):
        rid = _store_get(store, "releases/LATEST").decode().strip()
    base = f"releases/{rid}"
    tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="duetflow-report-")))
    meta_key = f"{base}/{RELEASE_JSON}"
    if not _store_exists(store, meta_key):
        raise InputError(uri, f"release {rid} has no {RELEASE_JSON}: it does not exist for readers")
    meta = json.loads(_store_get(store, meta_key))
    man = tmp / "manifests"
    man.mkdir()
    paths: dict[str, Path | None] = {}
    for name in (DIALOGUES, TURNS, REJECTIONS):
        key = f"{base}/manifests/{name}"
        if _store_exists(store, key):
            (man / name).write_bytes(_store_get(store, key))
            paths[name] = man / name
        else:
            paths[name] = None
    stats_dir = tmp / "stats"
    stats_dir.mkdir()
    lister = getattr(store, "list", None)
    if callable(lister):
        for key in sorted(lister(f"{base}/stats/")):
            if str(key).endswith(".json"):
                (stats_dir / Path(str(key)).name).write_bytes(_store_get(store, str(key)))
    dpath = paths[DIALOGUES]
    if dpath is None:
        raise InputError(uri, f"release {rid} has no manifests/{DIALOGUES}")
    return ReportInput(
        kind="release",
        label=f"{root}/{base}",
        dialogues=dpath,
        turns=paths[TURNS],
        rejections=paths[REJECTIONS],
        audio=_StoreAudio(store=store, tmp=tmp),
        stats=_release_stats(meta, tmp),
        release=meta,
        release_id=rid,
    )


def _local_path(source: str | Path) -> Path | None:
    s = str(source)
    if s.startswith("file://"):
        return Path(s[len("file://") :])
    if "://" in s:
        return None
    return Path(s)


def _resolve_local(path: Path) -> list[ReportInput]:
    if (path / DIALOGUES).exists():
        return [workdir_input(path)]
    if (path / "manifests" / DIALOGUES).exists():
        return [local_release_input(path)]
    latest = path / "releases" / "LATEST"
    if latest.exists():  # a store root: its latest release
        return [local_release_input(path / "releases" / latest.read_text().strip())]
    subs = sorted(p.parent for p in path.glob(f"*/{DIALOGUES}"))
    if subs:  # a folder of rendered work directories (one per corpus + PH)
        return [workdir_input(p) for p in subs]
    if not path.exists():
        raise InputError(path, "report source not found", reason="missing_file")
    raise InputError(
        path,
        "not a rendered work directory, a release folder or a store with releases/LATEST",
        reason="bad_source",
    )


@contextmanager
def open_inputs(
    sources: str | Path | Sequence[str | Path], config: Any = None
) -> Iterator[list[ReportInput]]:
    """Resolve report sources into inputs; temporary copies of remote data live until exit.

    A source is a rendered work directory, a folder holding several of them, a local release
    folder, a local store root (its latest release), or a store URI (``file://``, ``s3://``) with
    an optional ``/releases/<id>`` tail.
    """
    items: Sequence[str | Path] = [sources] if isinstance(sources, str | Path) else sources
    with ExitStack() as stack:
        out: list[ReportInput] = []
        for s in items:
            local = _local_path(s)
            if local is not None:
                root, rid = _split_release_uri(str(local))
                if rid is not None and rid.lower() == "latest":
                    local = (
                        Path(root)
                        / "releases"
                        / (Path(root) / "releases" / "LATEST").read_text().strip()
                    )
                out.extend(_resolve_local(local))
            else:
                out.append(_remote_release_input(str(s), config, stack))
        if not out:
            raise InputError(None, "no report source given")
        yield out
