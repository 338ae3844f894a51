"""The store interface shared by the local directory and S3 implementations.

A store is a flat key → bytes map with a sha256 per object. Both implementations share one
layout (docs/releases.md): content-addressed audio under ``audio/<aa>/<sha256>.<ext>`` and one
folder per release under ``releases/<id>/``. Writers pass the sha256 they expect; a store skips
an object that is already present with that checksum (idempotent, resumable publishing) and
readers verify it (a corrupted object fails loudly, naming its key).
"""

from __future__ import annotations

import posixpath
import re
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from duetflow.errors import StorageError, brief_repr


@dataclass(frozen=True)
class ObjectInfo:
    """What a store knows about one object without reading it."""

    key: str
    size: int
    sha256: str | None  # None when the store has no recorded checksum for the object


#: The content address of an audio object: ``audio/<first two hex digits>/<sha256>.<ext>``.
AUDIO_KEY_RE = re.compile(r"^audio/([0-9a-f]{2})/([0-9a-f]{64})\.([a-z0-9]+)$")


def audio_key(sha256: str, ext: str = "flac") -> str:
    """Content-addressed key of an audio object: ``audio/<aa>/<sha256>.<ext>``."""
    return f"audio/{sha256[:2]}/{sha256}.{ext.lstrip('.').lower()}"


def checked_audio_key(key: object, sha256: object) -> str:
    """``key`` when it is exactly the content address of ``sha256``; else StorageError.

    Readers derive every local path from a key that passed this check, never from a manifest's
    free-form ``audio_path``: a tampered release must not make them read or write elsewhere.
    """
    m = AUDIO_KEY_RE.match(key) if isinstance(key, str) else None
    if m is None or m.group(2) != sha256 or m.group(1) != m.group(2)[:2]:
        raise StorageError(
            f"audio key {brief_repr(key)} is not the content address of sha256 "
            f"{brief_repr(sha256)}; refusing it (tampered or corrupt manifest)"
        )
    return str(key)


def check_key(key: str) -> str:
    """Refuse keys that could escape the store root or are not normalised."""
    if (
        not key
        or key.startswith("/")
        or "\\" in key
        or posixpath.normpath(key) != key
        or key.split("/")[0] == ".."
    ):
        raise StorageError(f"invalid object key {key!r}: must be a normalised relative path")
    return key


class Store(ABC):
    """One interface over a local directory and an S3 prefix.

    ``put_*`` return True when bytes were sent and False when an identical object (same
    sha256) was already there. ``get_*`` verify the sha256 (the one given, else the stored one)
    and raise :class:`StorageError` naming the key on a mismatch.
    """

    uri: str

    @abstractmethod
    def put_file(self, key: str, path: str | Path, sha256: str | None = None) -> bool:
        """Upload a local file under ``key`` unless an object with the same sha256 is there."""

    @abstractmethod
    def put_bytes(self, key: str, data: bytes, sha256: str | None = None) -> bool:
        """Upload bytes under ``key`` unless an object with the same sha256 is there."""

    @abstractmethod
    def create_exclusive(self, key: str, data: bytes) -> bool:
        """Create ``key`` with ``data`` only if no object is there, atomically.

        True: this call created it. False: an object already existed (left untouched; read it
        to see whose it is). Of any number of concurrent callers exactly one gets True, and a
        reader never sees the object half-written. The basis of release claims.
        """

    @abstractmethod
    def get_file(self, key: str, dest: str | Path, sha256: str | None = None) -> Path:
        """Download ``key`` to ``dest`` atomically (temp file + rename), verifying its sha256."""

    @abstractmethod
    def get_bytes(self, key: str, sha256: str | None = None) -> bytes:
        """Read a (small) object, verifying its sha256."""

    @abstractmethod
    def head(self, key: str) -> ObjectInfo | None:
        """Size and recorded sha256 of ``key``; None when absent."""

    @abstractmethod
    def list(self, prefix: str = "") -> Iterator[str]:
        """Keys under ``prefix`` (a plain string prefix), in sorted order."""

    @abstractmethod
    def delete(self, key: str) -> None:
        """Remove an object (no error when absent)."""

    def exists(self, key: str) -> bool:
        return self.head(key) is not None

    def check_ready(self) -> None:
        """Raise StorageError when the store itself is not there (an S3 bucket that does not
        exist or cannot be reached), before anything is read or written; nothing by default."""
        return None

    def remove_stale_temporaries(self) -> int:
        """Remove what killed writers left in the store; returns how many (none by default)."""
        return 0

    def verify(self, key: str, sha256: str) -> None:
        """Read the object's bytes and compare with ``sha256`` (deep check, not metadata)."""
        actual = self.content_sha256(key)
        if actual != sha256:
            raise StorageError(
                f"{self.uri}: checksum mismatch for {key}: expected sha256 {sha256}, got {actual}"
            )

    @abstractmethod
    def content_sha256(self, key: str) -> str:
        """sha256 of the object's actual bytes (streams the object)."""


def check_digest(uri: str, key: str, expected: str | None, actual: str) -> None:
    """Raise a StorageError naming the key when a digest does not match."""
    if expected is not None and expected != actual:
        raise StorageError(
            f"{uri}: checksum mismatch for {key}: expected sha256 {expected}, got {actual}"
        )
