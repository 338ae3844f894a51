"""A release's identity and its RELEASE.json: the content-derived id, the claim on it, the bytes.

:func:`default_release_id` hashes the staged manifests, the content config hash and the code
version; :func:`claim_release` makes one content the only one that may be written under an id
(exclusive create); :func:`release_json` writes RELEASE.json with its object list streamed in,
byte-identical to :func:`json_bytes` of the whole document.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from duetflow._version import __version__
from duetflow.config import RunConfig
from duetflow.errors import StorageError
from duetflow.hashing import sha256_bytes, text_digest
from duetflow.release.layout import (
    claim_key,
)
from duetflow.storage import Store


def json_bytes(obj: Any) -> bytes:
    return (json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode()


#: stands for the object list while the rest of RELEASE.json is dumped (see release_json)
_OBJECTS_SLOT = "\x00objects\x00"


def _object_json(key: str, sha256: str, size: int) -> str:
    """One ``{key, sha256, size}`` entry as ``json.dumps(..., indent=2)`` writes it at depth 2."""
    k = json.dumps(key, ensure_ascii=False)
    s = json.dumps(sha256, ensure_ascii=False)
    return f'    {{\n      "key": {k},\n      "sha256": {s},\n      "size": {size}\n    }}'


def release_json(doc: Mapping[str, Any], objects: Iterable[tuple[str, str, int]]) -> bytes:
    """RELEASE.json bytes: ``doc`` plus ``"objects"`` (key, sha256, size; sorted by key), the
    same bytes as :func:`json_bytes` of the whole document, without a dict per object or the
    JSON encoder's token list for them."""
    head = json.dumps(
        {**doc, "objects": _OBJECTS_SLOT}, sort_keys=True, indent=2, ensure_ascii=False
    )
    entries = ",\n".join(_object_json(*o) for o in objects)
    listed = f"[\n{entries}\n  ]" if entries else "[]"
    slot = json.dumps(_OBJECTS_SLOT, ensure_ascii=False)
    assert head.count(slot) == 1
    return (head.replace(slot, listed) + "\n").encode()


def content_config_hash(config: RunConfig) -> str:
    """Config hash without where a run happened and how the release travels.

    The same content built in any work directory on any runner, published to a local store or
    to S3, gets the same id and RELEASE.json.
    """
    return config.content_hash()


def default_release_id(manifest_digests: Mapping[str, str], config: RunConfig) -> str:
    """Release id from content: manifests' sha256 + config hash + code version."""
    blob = json.dumps(
        {
            "manifests": dict(manifest_digests),
            "config": content_config_hash(config),
            "code": __version__,
        },
        sort_keys=True,
    )
    return "rel-" + text_digest(blob)[:12]


def claim_release(store: Store, rid: str, doc: bytes) -> bool:
    """Make this content the only one that may be written under release id ``rid``.

    The claim object is created exclusively (S3 ``If-None-Match: *``, ``link()`` locally): of
    publishers racing on one id exactly one creates it. A publisher whose claim is already
    there continues only when it claims the same content (a re-run, or a twin publishing the
    same bytes; both write identical objects); any other one fails before writing anything.
    Returns True when this call created the claim.
    """
    claim = json_bytes({"release_id": rid, "release_json_sha256": sha256_bytes(doc)})
    key = claim_key(rid)
    if store.create_exclusive(key, claim):
        return True
    try:
        held = store.get_bytes(key)
    except StorageError:
        held = b""
    if held != claim:
        raise StorageError(
            f"{store.uri}: release id {rid} is taken by another publish with different content "
            f"(see {key}); publish under another release id"
        )
    return False
