"""Where things live in a store, and reading a release's RELEASE.json.

```
audio/<aa>/<sha256>.flac                    content-addressed, shared by all releases
releases/<id>/manifests/{train,val,test}.parquet   dialogue rows of one split
releases/<id>/manifests/dialogues.parquet   all dialogue rows (+ split, audio_key)
releases/<id>/manifests/turns.parquet       turn rows
releases/<id>/manifests/rejections.parquet  what was dropped and why
releases/<id>/manifests/events.parquet      turn-taking events per dialogue (release.events)
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

from duetflow.errors import StorageError, brief_repr
from duetflow.records.manifest import RENDERED_DIALOGUE_SCHEMA
from duetflow.records.rows import ReleaseDialogueRow, arrow_schema
from duetflow.storage.store import Store

RELEASES = "releases/"
LATEST_KEY = "releases/LATEST"
RELEASE_FORMAT = 1
MANIFEST_NAMES = ("train", "val", "test", "dialogues", "turns", "rejections", "events")
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_SHA256_RE = re.compile(r"[0-9a-f]{64}")


#: the columns a release adds right after ``sha256`` (the others it adds come last)
AFTER_SHA256 = ("split", "audio_key")


def _release_dialogue_schema() -> pa.Schema:
    """:class:`ReleaseDialogueRow`'s columns: split and audio key after sha256, the other
    columns it adds to the rendered row at the end."""
    added = [
        f for f in arrow_schema(ReleaseDialogueRow) if f.name not in RENDERED_DIALOGUE_SCHEMA.names
    ]
    fields = []
    for f in RENDERED_DIALOGUE_SCHEMA:
        fields.append(f)
        if f.name == "sha256":
            fields += [f for f in added if f.name in AFTER_SHA256]
    return pa.schema(fields + [f for f in added if f.name not in AFTER_SHA256])


#: Dialogue rows of a release (:class:`~duetflow.records.rows.ReleaseDialogueRow`): the rendered
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
    (:meth:`~duetflow.storage.store.Store.check_ready`).
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
        raw = store.get_bytes(LATEST_KEY)
        try:
            release = raw.decode("ascii").strip()
        except UnicodeDecodeError:
            raise StorageError(
                f"{store.uri}: {LATEST_KEY} is corrupt: {raw[:80]!a} is not a release id "
                "(undecodable bytes)"
            ) from None
        try:
            check_release_id(release)
        except StorageError as e:
            raise StorageError(f"{store.uri}: {LATEST_KEY} is corrupt: {e}") from None
    check_release_id(release)
    if not store.exists(release_json_key(release)):
        known = ", ".join(list_releases(store)) or "none"
        raise StorageError(
            f"{store.uri}: release {release!r} not found (no RELEASE.json); known: {known}"
        )
    return release


def read_release_json(store: Store, release_id: str) -> dict[str, Any]:
    """The parsed and checked RELEASE.json of a release.

    StorageError (naming the key and the cause) when it is absent, not UTF-8 JSON, not an
    object, names another ``release_id`` than its folder, lists ``objects`` that are not
    ``{key, sha256, size}`` records, or has a ``manifests`` map that points anywhere but this
    release's own manifest of that name (a record swapped between releases or splits).
    """
    key = release_json_key(release_id)
    where = f"{store.uri}: {key}"
    try:
        data = json.loads(store.get_bytes(key).decode("utf-8"))
    except UnicodeDecodeError as e:
        raise StorageError(f"{where} is not UTF-8 text (byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise StorageError(f"{where} is not valid JSON: {e}") from None
    if not isinstance(data, dict) or "objects" not in data:
        raise StorageError(f"{where} has no 'objects' list")
    if data.get("release_id") != release_id:
        raise StorageError(
            f"{where}: release_id {data.get('release_id')!a} differs from its folder "
            f"{release_id!r} (a record copied from another release?)"
        )
    objects = data["objects"]
    if not isinstance(objects, list):
        raise StorageError(f"{where}: 'objects' is not a list")
    for i, o in enumerate(objects):
        if not (
            isinstance(o, dict)
            and isinstance(o.get("key"), str)
            and isinstance(o.get("sha256"), str)
            and _SHA256_RE.fullmatch(o["sha256"])
            and isinstance(o.get("size"), int)
            and o["size"] >= 0
        ):
            raise StorageError(
                f"{where}: objects[{i}] is not a {{key, sha256, size}} record: {brief_repr(o)}"
            )
    manifests = data.get("manifests")
    if manifests is not None:
        if not isinstance(manifests, dict):
            raise StorageError(f"{where}: 'manifests' is not a map of name -> key")
        for name, value in sorted(manifests.items(), key=lambda kv: str(kv[0])):
            expected = manifest_key(release_id, name) if name in MANIFEST_NAMES else None
            if expected is None or value != expected:
                raise StorageError(
                    f"{where}: manifests[{name!a}] points at {value!a}, not "
                    f"{expected or 'a manifest of this release'}"
                )
    return data


def object_index(release: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """key → {sha256, size} from a parsed RELEASE.json."""
    return {o["key"]: o for o in release["objects"]}
