"""Making a finished step durable once, at its commit, instead of once per file.

A step (a process or synth shard, a merge) writes many files into ``<key>.partial`` without
``fsync`` (the renderer's FLAC writes are atomic renames, nothing more: a per-file sync would
cost the hot path a disk flush per dialogue). Before the step's commit marker
(``result.json``) is written, :func:`sync_tree` flushes every file and folder of the partial
directory to disk; the marker is then written, synced, and the folder renamed into place
(:func:`sync_dir` of its parent makes the rename durable). After a crash a directory either
has its marker, and then every file it lists is on disk, or it is not a result.
"""

from __future__ import annotations

import os
from pathlib import Path


def _fsync(path: Path, flags: int) -> None:
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_dir(path: str | Path) -> None:
    """Flush a directory's entries (creations, renames) to disk; a no-op where directories
    cannot be opened (Windows)."""
    if os.name == "nt":
        return
    _fsync(Path(path), os.O_RDONLY)


def sync_tree(root: str | Path) -> int:
    """Flush every regular file under ``root`` and every directory, ``root`` included, to
    disk; returns the number of files synced. Hard links are synced through any of their
    names (the data is one inode)."""
    root = Path(root)
    files = 0
    for folder, _dirs, names in os.walk(root):
        for name in names:
            p = Path(folder, name)
            if p.is_file() and not p.is_symlink():
                _fsync(p, os.O_RDONLY)
                files += 1
        sync_dir(folder)
    return files


def write_marker(path: str | Path, text: str) -> None:
    """Write a commit marker durably: temporary file, fsync, rename, fsync of its folder."""
    p = Path(path)
    tmp = p.with_name(f".{p.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, p)
    sync_dir(p.parent)
