"""Incremental studio ingest: remember what each session folder produced, keyed by its content.

Studio sessions land every night and are ingested again with the old ones. Re-running turn
detection on thousands of unchanged sessions would waste hours, so the studio adapter keeps a
*state directory* (normally ``<workdir>/studio_state``) with one small JSON record per session:

* ``fingerprint``: ``(relative path, size, mtime_ns)`` of every file in the folder. When it is
  unchanged the folder is not even read;
* ``content_hash``: SHA-256 over every file's relative path and bytes. A touched but identical
  folder (fingerprint changed, hash not) is still skipped;
* ``config_hash``: the config sections and code version turn detection depends on; a changed
  threshold re-processes every session;
* ``result``: the intake rows the session produced (a dialogue with its turns, or a rejection),
  so a skipped session is re-emitted without any audio work and ``inputs = kept + rejected``
  still holds in the new intake tables.

One file per session keeps memory flat (nothing is loaded that is not needed) and makes each
update atomic (temp file + rename).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from duetflow.manifest import (
    dialogue_from_rows,
    dialogue_to_rows,
    dumps,
    rejection_from_row,
    rejection_to_row,
)
from duetflow.model import Dialogue, Rejection, safe_id

log = logging.getLogger(__name__)

STATE_VERSION = 1
"""Bump when the adapter's output for the same input changes, to invalidate old records."""

_CHUNK = 1 << 20

Fingerprint = tuple[tuple[str, int, int], ...]


def session_files(folder: Path) -> Iterator[Path]:
    """Every regular file of a session folder (recursively), sorted; hidden files skipped."""
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if not name.startswith("."):
                yield Path(dirpath) / name


def fingerprint(folder: Path) -> Fingerprint:
    """Cheap change detector: relative path, size and mtime of every file (no reads)."""
    out = []
    for p in session_files(folder):
        st = p.stat()
        out.append((p.relative_to(folder).as_posix(), st.st_size, st.st_mtime_ns))
    return tuple(out)


def content_hash(folder: Path, files: Iterable[str] | None = None) -> tuple[str, int]:
    """SHA-256 over relative paths and bytes of the folder's files; returns (hex, bytes read)."""
    h = hashlib.sha256()
    total = 0
    names = (
        sorted(files)
        if files is not None
        else [p.relative_to(folder).as_posix() for p in session_files(folder)]
    )
    for rel in names:
        h.update(rel.encode() + b"\x00")
        with (folder / rel).open("rb") as f:
            while chunk := f.read(_CHUNK):
                h.update(chunk)
                total += len(chunk)
        h.update(b"\x00")
    return h.hexdigest(), total


@dataclass(frozen=True)
class SessionRecord:
    """What one session folder produced the last time it was processed."""

    key: str
    content_hash: str
    config_hash: str
    fingerprint: Fingerprint
    result: dict[str, Any] = field(repr=False)

    def item(self) -> Dialogue | Rejection:
        """The recorded dialogue or rejection, rebuilt from its intake rows."""
        if self.result["kind"] == "rejection":
            return rejection_from_row(self.result["row"])
        return dialogue_from_rows(self.result["row"], self.result["turns"])


def result_of(item: Dialogue | Rejection) -> dict[str, Any]:
    """The JSON-able record of an adapter output (intake rows, exactly as ingest writes them)."""
    if isinstance(item, Rejection):
        return {"kind": "rejection", "row": rejection_to_row(item)}
    row, turns = dialogue_to_rows(item)
    return {"kind": "dialogue", "row": row, "turns": turns}


class StudioState:
    """The per-session records of one studio root, stored under ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    def _path(self, key: str) -> Path:
        return self.directory / f"{safe_id(key)}.json"

    def get(self, key: str) -> SessionRecord | None:
        """The record of session ``key``; None when absent, unreadable or of another version."""
        path = self._path(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            log.warning("ignoring unreadable studio state %s: %s", path, e)
            return None
        if data.get("version") != STATE_VERSION or data.get("key") != key:
            return None
        return SessionRecord(
            key=key,
            content_hash=data["content_hash"],
            config_hash=data["config_hash"],
            fingerprint=tuple((str(a), int(b), int(c)) for a, b, c in data["fingerprint"]),
            result=data["result"],
        )

    def put(self, record: SessionRecord) -> None:
        """Write a record atomically (temp file + rename)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self._path(record.key)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        payload = {
            "version": STATE_VERSION,
            "key": record.key,
            "content_hash": record.content_hash,
            "config_hash": record.config_hash,
            "fingerprint": [list(f) for f in record.fingerprint],
            "result": record.result,
        }
        tmp.write_text(dumps(payload), encoding="utf-8")
        os.replace(tmp, path)

    def keys(self) -> Iterator[str]:
        """Keys of all stored records (reads each record's key, one file at a time)."""
        if not self.directory.is_dir():
            return
        for p in sorted(self.directory.glob("*.json")):
            try:
                key = json.loads(p.read_text(encoding="utf-8")).get("key")
            except (OSError, ValueError):
                continue
            if isinstance(key, str):
                yield key

    def prune(self, live: set[str]) -> int:
        """Delete records of sessions no longer present; returns how many were removed."""
        removed = 0
        for key in list(self.keys()):
            if key not in live:
                self._path(key).unlink(missing_ok=True)
                removed += 1
        return removed
