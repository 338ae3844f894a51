"""A store in a local directory (the embedded default, and what tests and demos use).

Writes go to a temp file in the destination folder and are renamed into place, so a reader never
sees half an object and a killed publish leaves only complete objects behind (its temp files,
named after their owner, are removed by the next publish: :meth:`remove_stale_temporaries`).
The checksum of an object is the sha256 of its bytes (computed when asked; there is no side
metadata to go stale).
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from duetflow.errors import StorageError
from duetflow.hashing import sha256_bytes, sha256_file
from duetflow.leftovers import remove_stale_temp_files, temp_file
from duetflow.storage.store import ObjectInfo, Store, check_digest, check_key

log = logging.getLogger(__name__)


class LocalStore(Store):
    """Objects are files under ``root``; keys are POSIX relative paths."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).expanduser().resolve()
        self.uri = self.root.as_uri()

    def _path(self, key: str) -> Path:
        return self.root.joinpath(*check_key(key).split("/"))

    @staticmethod
    def _tmp(path: Path) -> Path:
        return temp_file(path)

    def remove_stale_temporaries(self) -> int:
        """Remove temp files of writers that were killed (see :mod:`duetflow.leftovers`)."""
        return remove_stale_temp_files(self.root)

    def _present_with(self, path: Path, sha256: str | None) -> bool:
        return sha256 is not None and path.is_file() and sha256_file(path) == sha256

    def put_file(self, key: str, path: str | Path, sha256: str | None = None) -> bool:
        dest = self._path(key)
        src = Path(path)
        if not src.is_file():
            raise StorageError(f"{src}: cannot upload to {key}: file not found")
        if self._present_with(dest, sha256):
            return False
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = self._tmp(dest)
        try:
            shutil.copyfile(src, tmp)
            if sha256 is not None:
                check_digest(str(src), key, sha256, sha256_file(tmp))
            os.replace(tmp, dest)
        except OSError as e:
            raise StorageError(f"{self.uri}: cannot write {key}: {e}") from e
        finally:
            tmp.unlink(missing_ok=True)
        log.debug("stored %s", key)
        return True

    def put_bytes(self, key: str, data: bytes, sha256: str | None = None) -> bool:
        digest = sha256_bytes(data)
        check_digest("<bytes>", key, sha256, digest)
        dest = self._path(key)
        if self._present_with(dest, digest):
            return False
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = self._tmp(dest)
        try:
            tmp.write_bytes(data)
            os.replace(tmp, dest)
        except OSError as e:
            raise StorageError(f"{self.uri}: cannot write {key}: {e}") from e
        finally:
            tmp.unlink(missing_ok=True)
        return True

    def create_exclusive(self, key: str, data: bytes) -> bool:
        dest = self._path(key)
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = self._tmp(dest)
        try:
            tmp.write_bytes(data)
            # link() fails when dest exists, and dest appears with its full content at once
            os.link(tmp, dest)
        except FileExistsError:
            return False
        except OSError as e:
            raise StorageError(f"{self.uri}: cannot create {key}: {e}") from e
        finally:
            tmp.unlink(missing_ok=True)
        return True

    def get_file(self, key: str, dest: str | Path, sha256: str | None = None) -> Path:
        src = self._path(key)
        if not src.is_file():
            raise StorageError(f"{self.uri}: object {key} not found")
        out = Path(dest)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = self._tmp(out)
        try:
            shutil.copyfile(src, tmp)
            check_digest(self.uri, key, sha256, sha256_file(tmp))
            os.replace(tmp, out)
        finally:
            tmp.unlink(missing_ok=True)
        return out

    def get_bytes(self, key: str, sha256: str | None = None) -> bytes:
        src = self._path(key)
        try:
            data = src.read_bytes()
        except FileNotFoundError:
            raise StorageError(f"{self.uri}: object {key} not found") from None
        check_digest(self.uri, key, sha256, sha256_bytes(data))
        return data

    def head(self, key: str) -> ObjectInfo | None:
        p = self._path(key)
        if not p.is_file():
            return None
        return ObjectInfo(key, p.stat().st_size, sha256_file(p))

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def content_sha256(self, key: str) -> str:
        p = self._path(key)
        if not p.is_file():
            raise StorageError(f"{self.uri}: object {key} not found")
        return sha256_file(p)

    def list(self, prefix: str = "") -> Iterator[str]:
        if not self.root.is_dir():
            return
        keys = []
        for dirpath, _dirs, files in os.walk(self.root):
            for name in files:
                if name.startswith(".") and name.endswith(".tmp"):
                    continue  # an interrupted write, invisible to readers
                rel = Path(dirpath, name).relative_to(self.root).as_posix()
                if rel.startswith(prefix):
                    keys.append(rel)
        yield from sorted(keys)

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)
