"""Where things live in a store, and reading a release's RELEASE.json.

```
audio/<aa>/<sha256>.flac                    content-addressed, shared by all releases
releases/<id>/manifests/{train,val,test}.parquet   dialogue rows of one split
releases/<id>/manifests/dialogues.parquet   all dialogue rows (+ split, audio_key)
releases/<id>/manifests/turns.parquet       turn rows
releases/<id>/manifests/rejections.parquet  what was dropped and why
releases/<id>/splits.{json,md}              split report
releases/<id>/report/...                    card + plots (copied from the report folder)
releases/<id>/stats/...                     stats.json of each rendered work directory
releases/<id>/cues/{cues.parquet,summary.json,summary.md}   cue audit (release.cue_parity on)
releases/<id>/CLAIM.json                    created first, exclusively: which content owns the id
releases/<id>/RELEASE.json                  written last: counts, checksums, config, code version
releases/LATEST                             id of the newest release, written after RELEASE.json
```

A release without RELEASE.json does not exist for readers.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pyarrow as pa

from duetflow.errors import StorageError
from duetflow.manifest import RENDERED_DIALOGUE_SCHEMA
from duetflow.records import ReleaseDialogueRow, arrow_schema
from duetflow.storage.base import Store

RELEASES = "releases/"
LATEST_KEY = "releases/LATEST"
RELEASE_FORMAT = 1
MANIFEST_NAMES = ("train", "val", "test", "dialogues", "turns", "rejections")
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def _release_dialogue_schema() -> pa.Schema:
    """:class:`ReleaseDialogueRow`'s columns, those it adds to the rendered row after sha256."""
    added = [
        f for f in arrow_schema(ReleaseDialogueRow) if f.name not in RENDERED_DIALOGUE_SCHEMA.names
    ]
    fields = []
    for f in RENDERED_DIALOGUE_SCHEMA:
        fields.append(f)
        if f.name == "sha256":
            fields += added
    return pa.schema(fields)


#: Dialogue rows of a release (:class:`~duetflow.records.ReleaseDialogueRow`): the rendered
#: columns, ``split`` and ``audio_key`` after ``sha256``; ``audio_path`` is the audio's path
#: relative to the store root (= ``audio_key``), so a pulled folder that mirrors the layout
#: resolves it unchanged.
RELEASE_DIALOGUE_SCHEMA = _release_dialogue_schema()


def check_release_id(release_id: str) -> str:
    if not _ID_RE.match(release_id) or release_id == "LATEST":
        raise StorageError(
            f"invalid release id {release_id!r}: use letters, digits, '.', '_' or '-' "
            "(at most 128 characters, not 'LATEST')"
        )
    return release_id


def release_prefix(release_id: str) -> str:
    return f"{RELEASES}{check_release_id(release_id)}/"


def release_json_key(release_id: str) -> str:
    return release_prefix(release_id) + "RELEASE.json"


def claim_key(release_id: str) -> str:
    """The object a publisher creates exclusively before writing anything of a release."""
    return release_prefix(release_id) + "CLAIM.json"


def manifest_key(release_id: str, name: str) -> str:
    return release_prefix(release_id) + f"manifests/{name}.parquet"


def require_store(store: Store) -> None:
    """Raise StorageError when a local store's folder does not exist (a reader's typo).

    Readers (``releases list``, ``pull``, ``validate``) must not report an empty store for a
    path that is not there, nor "no release published yet" for an S3 bucket that does not exist
    (:meth:`~duetflow.storage.base.Store.check_ready`).
    """
    from duetflow.storage.local import LocalStore

    if isinstance(store, LocalStore) and not store.root.is_dir():
        raise StorageError(f"{store.uri}: no such store (the folder {store.root} does not exist)")
    store.check_ready()


def list_releases(store: Store) -> list[str]:
    """Ids of the complete (RELEASE.json present) releases in a store, sorted."""
    require_store(store)
    ids = []
    for key in store.list(RELEASES):
        parts = key.split("/")
        if len(parts) == 3 and parts[2] == "RELEASE.json":
            ids.append(parts[1])
    return sorted(ids)


def resolve_release(store: Store, release: str = "latest") -> str:
    """``latest`` → the id in ``releases/LATEST``; an id is checked to be complete."""
    require_store(store)
    if release.lower() == "latest":
        if not store.exists(LATEST_KEY):
            raise StorageError(f"{store.uri}: no release published yet ({LATEST_KEY} missing)")
        release = store.get_bytes(LATEST_KEY).decode().strip()
    check_release_id(release)
    if not store.exists(release_json_key(release)):
        known = ", ".join(list_releases(store)) or "none"
        raise StorageError(
            f"{store.uri}: release {release!r} not found (no RELEASE.json); known: {known}"
        )
    return release


def read_release_json(store: Store, release_id: str) -> dict[str, Any]:
    """The parsed RELEASE.json of a release (StorageError when absent or not JSON)."""
    key = release_json_key(release_id)
    try:
        data = json.loads(store.get_bytes(key))
    except json.JSONDecodeError as e:
        raise StorageError(f"{store.uri}: {key} is not valid JSON: {e}") from None
    if not isinstance(data, dict) or "objects" not in data:
        raise StorageError(f"{store.uri}: {key} has no 'objects' list")
    return data


def object_index(release: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """key → {sha256, size} from a parsed RELEASE.json."""
    return {o["key"]: o for o in release["objects"]}
