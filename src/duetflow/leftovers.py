"""Temporaries that a killed process leaves behind, and removing them on the next run.

Writers create a temp file beside the destination and rename it into place; a publish stages
its manifests in a temp folder. ``SIGKILL`` (or an OOM kill, or a power cut) skips every
``finally``, so those temporaries stay. Each one is therefore named after its owner —
host and process id, :func:`temp_file` / :func:`staging_prefix` — and the next run removes the
ones whose owner is provably gone (same host, process not running) or that are older than
:data:`STALE_AFTER_S` (another host, or an unknown owner). A temporary of a writer that is still
running is never touched.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import socket
import tempfile
import time
import uuid
from pathlib import Path

log = logging.getLogger(__name__)

#: A temporary whose owner cannot be checked is removed once it is this old (seconds).
STALE_AFTER_S = 24 * 3600.0

_HOST = re.sub(r"[^A-Za-z0-9_]", "_", socket.gethostname()) or "host"
_TMP_RE = re.compile(r"^\..+\.(?P<host>[A-Za-z0-9_]+)-(?P<pid>\d+)-[0-9a-f]{8}\.tmp$")
_ANY_TMP_RE = re.compile(r"^\..+\.tmp$")
_STAGING_RE = re.compile(r"-(?P<host>[A-Za-z0-9_]+)-(?P<pid>\d+)-")


def _owner_tag() -> str:
    return f"{_HOST}-{os.getpid()}"


def temp_file(dest: Path) -> Path:
    """A hidden temp name beside ``dest`` that says which host and process own it."""
    return dest.with_name(f".{dest.name}.{_owner_tag()}-{uuid.uuid4().hex[:8]}.tmp")


def staging_prefix(name: str) -> str:
    """``tempfile`` prefix for a staging folder of ``name`` owned by this process."""
    return f"{name}-{_owner_tag()}-"


def pid_running(pid: int) -> bool:
    """Whether process ``pid`` exists on this host (a zombie counts as gone)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    try:  # a killed child not yet reaped by its parent is still "there" for kill(0)
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True


def _stale(host: str | None, pid: int | None, mtime: float, now: float) -> bool:
    if host == _HOST and pid is not None:
        return pid != os.getpid() and not pid_running(pid)
    return now - mtime > STALE_AFTER_S


def remove_stale_temp_files(root: Path) -> int:
    """Remove stale hidden ``*.tmp`` files under ``root`` (recursively); returns how many."""
    if not root.is_dir():
        return 0
    now = time.time()
    removed = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            if not _ANY_TMP_RE.match(name):
                continue
            p = Path(dirpath, name)
            m = _TMP_RE.match(name)
            try:
                mtime = p.lstat().st_mtime
            except OSError:
                continue
            host, pid = (m.group("host"), int(m.group("pid"))) if m else (None, None)
            if _stale(host, pid, mtime, now):
                with contextlib.suppress(FileNotFoundError):
                    p.unlink()
                    removed += 1
    if removed:
        log.info("removed %d stale temp file(s) under %s", removed, root)
    return removed


def remove_stale_staging(name: str, parent: Path | None = None) -> int:
    """Remove stale staging folders ``<name>-<host>-<pid>-*`` of this user; returns how many."""
    base = Path(parent if parent is not None else tempfile.gettempdir())
    now = time.time()
    removed = 0
    try:
        entries = list(base.iterdir())
    except OSError:
        return 0
    uid = os.getuid() if hasattr(os, "getuid") else None
    for p in entries:
        if not p.name.startswith(f"{name}-"):
            continue
        try:
            st = p.lstat()
        except OSError:
            continue
        if not p.is_dir() or p.is_symlink() or (uid is not None and st.st_uid != uid):
            continue
        m = _STAGING_RE.match(p.name[len(name) :])
        host, pid = (m.group("host"), int(m.group("pid"))) if m else (None, None)
        if _stale(host, pid, st.st_mtime, now):
            shutil.rmtree(p, ignore_errors=True)
            removed += not p.exists()
    if removed:
        log.info("removed %d stale %s staging folder(s) in %s", removed, name, base)
    return removed
