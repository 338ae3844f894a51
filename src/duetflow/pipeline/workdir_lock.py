"""One run per work directory: an ``fcntl`` lock that dies with the process holding it.

Two runs writing one work directory would remove each other's ``.partial`` folders and merged
directories mid-write (a ``FileNotFoundError`` from under the first run). A run holds
``flock(LOCK_EX)`` on :data:`LOCK_NAME` in its work directory from start to end; a second
process fails at once with :class:`~duetflow.errors.WorkdirInUseError` naming the holder's pid.
The kernel releases the lock when the holder exits, however it exits (SIGKILL, OOM, power
loss), so a lock left by a dead run never blocks the next one: there is no stale lock to clean.

Within one process the lock is re-entrant (a run holds it while its stages, which also take it,
run), so nesting never deadlocks. The file's content is the holder's pid while held and empty
after, so two finished work directories stay byte-identical.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import threading
from collections.abc import Callable, Iterator
from functools import wraps
from pathlib import Path
from typing import Any, ParamSpec, Protocol, TypeVar

from duetflow.errors import DiskFullError, DuetflowError, WorkdirInUseError

#: the lock file, in the work directory
LOCK_NAME = ".duetflow.lock"

_guard = threading.Lock()
_held: dict[str, list[int]] = {}  # real path -> [fd, depth]


def holder(workdir: str | Path) -> int | None:
    """The pid recorded by the process that holds ``workdir``'s lock (None when unknown)."""
    try:
        text = (Path(workdir) / LOCK_NAME).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


@contextlib.contextmanager
def workdir_lock(workdir: str | Path) -> Iterator[None]:
    """Hold ``workdir``'s lock for the block (created with the directory if missing).

    WorkdirInUseError at once when another process holds it.
    """
    folder = Path(workdir)
    key = os.path.realpath(folder)
    with _guard:
        entry = _held.get(key)
        if entry is not None:
            entry[1] += 1
    if entry is None:
        entry = [_acquire(folder), 1]
        with _guard:
            _held[key] = entry
    try:
        yield
    finally:
        with _guard:
            entry[1] -= 1
            last = entry[1] == 0
            if last:
                del _held[key]
        if last:
            _release(entry[0])


def _acquire(folder: Path) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK_NAME
    fd = open_lock_file(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        pid = holder(folder)
        who = f"pid {pid}" if pid is not None else "another process"
        raise WorkdirInUseError(
            f"work directory {folder} in use by {who} (lock {path}): wait for that run to end "
            "or choose another work directory"
        ) from None
    except BaseException:
        os.close(fd)
        raise
    with contextlib.suppress(OSError):  # a full disk: the pid goes unnamed, the lock holds
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    return fd


def open_lock_file(path: Path, error: type[DuetflowError] = WorkdirInUseError) -> int:
    """Open (create) a lock file for writing its holder's pid, refusing (``error``) a symbolic
    link or a file with other names (hard links): truncating it would change a file nobody
    meant."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
    except OSError as e:
        if os.path.islink(path):
            raise error(
                f"{path}: the lock file is a symbolic link; refusing to write through it "
                "(remove it)"
            ) from None
        full = DiskFullError.of(e, path)
        if full is not None:
            raise full from e
        raise error(f"{path}: the lock file cannot be opened ({e.strerror})") from e
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        os.close(fd)
        raise error(
            f"{path}: the lock file is not a plain file of its own (links: {st.st_nlink}); "
            "refusing to write to it (remove it)"
        )
    return fd


def _release(fd: int) -> None:
    try:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


class _HasWorkdir(Protocol):
    @property
    def workdir(self) -> Any: ...


P = ParamSpec("P")
R = TypeVar("R")


def locks_workdir(fn: Callable[P, R]) -> Callable[P, R]:
    """Run ``fn(config, ...)`` holding ``config.workdir``'s lock."""

    @wraps(fn)
    def locked(*args: P.args, **kwargs: P.kwargs) -> R:
        config: _HasWorkdir = args[0] if args else kwargs["config"]  # type: ignore[assignment]
        with workdir_lock(config.workdir):
            return fn(*args, **kwargs)

    return locked
