"""Incremental studio ingest: remember what each session folder produced, keyed by its content.

Studio sessions land every night and are ingested again with the old ones. Re-running turn
detection on thousands of unchanged sessions would waste hours, so the studio adapter keeps a
*state directory* (normally ``<workdir>/studio_state``) with one small JSON record per session:

* ``fingerprint``: ``(relative path, size, mtime_ns)`` of every file in the folder (metadata
  only). When it is unchanged the folder is not even read;
* ``content_hash``: SHA-256 over the names of every entry of the folder and the bytes of the
  files the sidecar references (plus the sidecar). Only *regular* files inside the session
  folder are read: a ``notes.txt`` symlinked to ``/dev/zero``, a FIFO or a link out of the
  folder is listed by name, never opened. A touched but identical folder (fingerprint changed,
  hash not) is still skipped;
* ``config_hash``: the config sections, code version and resolved corpus root turn detection
  depends on; a changed threshold re-processes every session, a moved root too (dialogues
  record absolute audio paths);
* ``result``: the intake rows the session produced (a dialogue with its turns, or a rejection),
  so a skipped session is re-emitted without any audio work and ``inputs = kept + rejected``
  still holds in the new intake tables.

A rejection is recorded only when its cause is the folder's content: one that may come from the
invocation or the machine (a path that escapes the root as given, a file that could not be
read, a failed backend, an adapter bug; :data:`UNCACHED_REASONS`) is worked out again on every
run, so fixing the command line fixes the output.

Dialogue ids are *claimed* (``ids/<id>``): the folder that first produced an id keeps it, and a
later folder with the same ``session_id`` is rejected ``duplicate_id`` instead of taking over an
id that may already be published.

One file per session keeps memory flat (nothing is loaded that is not needed) and makes each
update atomic (temp file + rename).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from duetflow.hashing import update_file
from duetflow.records.convert import (
    dialogue_from_rows,
    dialogue_to_rows,
    dumps,
    rejection_from_row,
    rejection_to_row,
)
from duetflow.records.dialogue import Dialogue, Rejection, safe_id
from duetflow.records.rows import IntakeDialogueRow, IntakeTurnRow, RejectionRow, from_row

log = logging.getLogger(__name__)

STATE_VERSION = 2
"""Bump when the adapter's output for the same input changes, to invalidate old records."""

_IDS = "ids"

Fingerprint = tuple[tuple[str, int, int], ...]


#: Rejection reasons that may come from how ingest was invoked or from the machine, not from
#: the session's content: never replayed from the state.
UNCACHED_REASONS = frozenset(
    {
        "path_escape",
        "missing_file",
        "bad_file",
        "internal_error",
        "diarization_failed",
        "unchecked_session",  # the ASR endpoint may answer next time
    }
)


def session_files(folder: Path) -> Iterator[Path]:
    """Every non-directory entry of a session folder (recursively), sorted; hidden ones skipped.

    Symlinks and special files are listed (their names count) but links to directories are
    not followed.
    """
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if not name.startswith("."):
                yield Path(dirpath) / name


def _stat(p: Path) -> os.stat_result:
    try:
        return p.stat()  # a link's target: editing the file behind a link is a change
    except OSError:
        return p.lstat()  # dangling link or loop: the link itself


def fingerprint(folder: Path) -> Fingerprint:
    """Cheap change detector: relative path, size and mtime of every file (no reads)."""
    out = []
    for p in session_files(folder):
        st = _stat(p)
        out.append((p.relative_to(folder).as_posix(), st.st_size, st.st_mtime_ns))
    return tuple(out)


def regular_file_inside(folder: Path, path: Path) -> Path | None:
    """``path`` resolved, when it is a regular file inside ``folder`` (resolved); else None."""
    try:
        real = path.resolve(strict=True)
        base = folder.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if base not in real.parents:
        return None
    try:
        return real if stat.S_ISREG(real.stat().st_mode) else None
    except OSError:
        return None


def content_hash(folder: Path, read: Iterable[str] | None = None) -> tuple[str, int]:
    """SHA-256 of a session folder; returns (hex, bytes read).

    Covers the relative path of every entry (:func:`session_files`) and the bytes of the files
    named in ``read`` (relative paths; by default every entry). A name in ``read`` that is not a
    regular file inside the folder is hashed as its name only: nothing outside the folder, no
    device and no FIFO is ever opened.
    """
    h = hashlib.sha256()
    names = [p.relative_to(folder).as_posix() for p in session_files(folder)]
    for rel in names:
        h.update(rel.encode() + b"\x00")
    h.update(b"\x01")
    total = 0
    for rel in sorted(set(names if read is None else read)):
        h.update(rel.encode() + b"\x00")
        real = regular_file_inside(folder, folder / rel)
        if real is None:
            h.update(b"\x02not-a-regular-file\x00")
            continue
        try:
            with real.open("rb") as f:
                total += update_file(h, f)
        except OSError as e:
            h.update(f"\x02unreadable {e.errno}\x00".encode())
        h.update(b"\x00")
    return h.hexdigest(), total


def cacheable(item: Dialogue | Rejection) -> bool:
    """Whether an adapter output may be replayed from the state (see the module docstring)."""
    return not (isinstance(item, Rejection) and item.reason in UNCACHED_REASONS)


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
            return rejection_from_row(from_row(RejectionRow, self.result["row"]))
        turns = [from_row(IntakeTurnRow, t) for t in self.result["turns"]]
        return dialogue_from_rows(from_row(IntakeDialogueRow, self.result["row"]), turns)


def result_of(item: Dialogue | Rejection) -> dict[str, Any]:
    """The JSON-able record of an adapter output (intake rows, exactly as ingest writes them)."""
    if isinstance(item, Rejection):
        return {"kind": "rejection", "row": rejection_to_row(item)}
    row, turns = dialogue_to_rows(item)
    return {"kind": "dialogue", "row": row, "turns": turns}


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _field(data: object, name: str) -> object:
    """``data[name]`` when ``data`` is a JSON object, else None (a state file of the wrong
    shape is ignored, never a crash)."""
    return data.get(name) if isinstance(data, dict) else None


class StudioState:
    """The per-session records of one studio root, stored under ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    def _path(self, key: str) -> Path:
        return self.directory / f"{safe_id(key)}.json"

    def get(self, key: str) -> SessionRecord | None:
        """The record of session ``key``; None when absent, unreadable, of another version or
        of the wrong shape (valid JSON that is not a record: logged, the session is rebuilt)."""
        path = self._path(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            log.warning("ignoring unreadable studio state %s: %s", path, e)
            return None
        if not isinstance(data, dict):
            log.warning("ignoring studio state %s: not a JSON object; rebuilding it", path)
            return None
        if data.get("version") != STATE_VERSION or data.get("key") != key:
            return None
        try:
            record = SessionRecord(
                key=key,
                content_hash=_text(data["content_hash"]),
                config_hash=_text(data["config_hash"]),
                fingerprint=tuple((str(a), int(b), int(c)) for a, b, c in data["fingerprint"]),
                result=dict(data["result"]),
            )
            record.item()  # a result that does not rebuild is no record
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            log.warning(
                "ignoring studio state %s: wrong shape (%s: %s); rebuilding it",
                path,
                type(e).__name__,
                e,
            )
            return None
        return record

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
                key = _field(json.loads(p.read_text(encoding="utf-8")), "key")
            except (OSError, ValueError):
                continue
            if isinstance(key, str):
                yield key

    def prune(self, live: set[str]) -> int:
        """Delete records of sessions no longer present; returns how many were removed.

        Id claims of folders that are gone are released too.
        """
        removed = 0
        for key in list(self.keys()):
            if key not in live:
                self._path(key).unlink(missing_ok=True)
                removed += 1
        ids = self.directory / _IDS
        if ids.is_dir():
            for p in sorted(ids.iterdir()):
                try:
                    owner = _field(json.loads(p.read_text(encoding="utf-8")), "owner")
                except (OSError, ValueError):
                    owner = None
                if owner not in live:
                    p.unlink(missing_ok=True)
        return removed

    def forget(self, key: str) -> None:
        """Remove the record of session ``key`` (its output is not to be replayed)."""
        self._path(key).unlink(missing_ok=True)

    # -- dialogue id claims ---------------------------------------------------------------------

    def _id_path(self, item_id: str) -> Path:
        return self.directory / _IDS / f"{safe_id(item_id)}.json"

    def owner(self, item_id: str) -> str | None:
        """The session folder (key) that claimed dialogue id ``item_id``, or None."""
        try:
            data = json.loads(self._id_path(item_id).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            log.warning("ignoring unreadable id claim of %s: %s", item_id, e)
            return None
        owner = _field(data, "owner") if _field(data, "id") == item_id else None
        return owner if isinstance(owner, str) else None

    def claim(self, item_id: str, key: str) -> None:
        """Record that session ``key`` owns dialogue id ``item_id`` (atomic write)."""
        path = self._id_path(item_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(dumps({"id": item_id, "owner": key}), encoding="utf-8")
        os.replace(tmp, path)
