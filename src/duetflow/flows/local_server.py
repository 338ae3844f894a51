"""A Prefect server of duetflow's own that outlives a run, so runs skip the temporary API.

Without ``PREFECT_API_URL`` every ``duetflow run`` needs a temporary API in a second process,
started and stopped with the run: ~10–20 s of wall per run on a small machine
(docs/performance.md, *Prefect start-up*). ``duetflow server start`` starts one
``prefect server start`` in the background instead, bound to 127.0.0.1 on a free port, with its
database in duetflow's Prefect home, and records it in :data:`STATE_FILE` in that home;
``duetflow run`` (through :func:`duetflow.cli.run.prefect_env`) then uses it whenever it answers
its health check. ``duetflow server stop`` stops it. A recorded server that no longer answers is
ignored (the run falls back to the temporary API), so a reboot or a killed server never blocks a
run.

Never signal a process duetflow did not start (docs/failure-modes.md, *Processes, locks and
disk*): the record holds what only the started server can prove — its pid with the start time
the kernel gave it and the boot it belongs to, its exact command line, and a random token placed
in its environment next to its ``PREFECT_HOME`` — and all of it is checked in ``/proc`` before a
signal is sent, to that pid alone (plus the descendants it has at that moment). A record that
fails a check is refused with a one-line :class:`~duetflow.errors.ServerError` naming
the pid and the cause; nothing is signalled. ``start`` and ``stop`` on one home hold an
``fcntl`` lock (:data:`LOCK_FILE`), so two concurrent ``start`` give one server.

Only the standard library (and duetflow's errors and lock file) here: the server is a child process
(``python -m prefect``), and neither finding nor stopping it imports Prefect.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duetflow.errors import ServerError
from duetflow.flows.spawned import startup_failure
from duetflow.pipeline.workdir_lock import open_lock_file

#: where a started server is recorded, inside its Prefect home
STATE_FILE = "duetflow-server.json"
#: the server's output, inside its Prefect home
LOG_FILE = "duetflow-server.log"
#: held (``fcntl.flock``) by ``start`` and ``stop`` on a home, so they never interleave
LOCK_FILE = "duetflow-server.lock"
#: the environment variable that carries a started server's token (read back from /proc)
TOKEN_ENV = "DUETFLOW_SERVER_TOKEN"


@dataclass(frozen=True)
class LocalServer:
    """A background Prefect server: its API URL and process id (and, when duetflow started it,
    the identity checked before it is used or signalled)."""

    url: str
    pid: int
    start_time: int | None = None  # /proc/<pid>/stat field 22 (clock ticks after boot)
    boot_id: str | None = None
    cmdline: tuple[str, ...] = ()
    home: str | None = None
    token: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "url": self.url, "pid": self.pid, "start_time": self.start_time,
            "boot_id": self.boot_id, "cmdline": list(self.cmdline), "home": self.home,
            "token": self.token,
        }  # fmt: skip


def _state_path(home: Path) -> Path:
    return Path(home) / STATE_FILE


def healthy(url: str, timeout: float = 1.0) -> bool:
    """Whether a Prefect API answers ``GET {url}/health`` with 200 within ``timeout``."""
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=timeout) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError, ValueError):
        return False


def recorded(home: Path) -> LocalServer | None:
    """The server recorded in ``home`` (it may have died since); None when none was."""
    try:
        data = json.loads(_state_path(home).read_text(encoding="utf-8"))
        cmdline = data.get("cmdline") or ()
        start = data.get("start_time")
        return LocalServer(
            url=str(data["url"]),
            pid=int(data["pid"]),
            start_time=int(start) if start is not None else None,
            boot_id=str(data["boot_id"]) if data.get("boot_id") else None,
            cmdline=tuple(str(a) for a in cmdline),
            home=str(data["home"]) if data.get("home") else None,
            token=str(data["token"]) if data.get("token") else None,
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


# --- identity -----------------------------------------------------------------------------------


def _proc_stat(pid: int) -> list[str]:
    """The fields of ``/proc/<pid>/stat`` after the command name: [state, ppid, pgrp, ...]."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()


def _start_time(pid: int) -> int:
    return int(_proc_stat(pid)[19])  # field 22 of stat: starttime


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def _cmdline(pid: int) -> tuple[str, ...]:
    raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    return tuple(a.decode("utf-8", "surrogateescape") for a in raw.split(b"\0")[:-1])


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    pairs = (e.decode("utf-8", "surrogateescape").partition("=") for e in raw.split(b"\0") if e)
    return {k: v for k, _, v in pairs}


def identify(pid: int, *, url: str, home: Path, token: str, wait: float = 5.0) -> LocalServer:
    """The identity of the server process ``pid`` that duetflow has just started.

    A child started with ``vfork`` lets its parent go on during ``exec``, before the kernel
    has set up its new command line: an empty one is read again, for up to ``wait`` seconds.
    """
    deadline = time.monotonic() + wait
    while not (cmdline := _cmdline(pid)) and time.monotonic() < deadline:
        time.sleep(0.01)
    return LocalServer(
        url=url, pid=pid, start_time=_start_time(pid), boot_id=_boot_id(),
        cmdline=cmdline, home=str(Path(home).resolve()), token=token,
    )  # fmt: skip


def mismatch(server: LocalServer, home: Path) -> str | None:
    """Why process ``server.pid`` is not the server this record describes; None when every
    check holds (same boot, same start time, same command line, token and home in its
    environment)."""
    pid = server.pid
    if server.start_time is None or not server.token or not server.cmdline:
        return "the record has no start time, command line or token (not written by duetflow)"
    if pid <= 1:
        return f"pid {pid} is never a server duetflow started"
    if not Path("/proc/self/stat").exists():
        return "no /proc on this system: the process cannot be identified"
    if server.boot_id and server.boot_id != _boot_id():
        return "it was recorded before the machine rebooted"
    try:
        stat = _proc_stat(pid)
        if stat[0] in ("Z", "X"):
            return "the process has exited"
        if int(stat[19]) != server.start_time:
            return "a different process now has this pid (its start time differs from the record)"
        if _cmdline(pid) != server.cmdline:
            return "its command line differs from the recorded server's"
        env = _environ(pid)
    except FileNotFoundError:
        return "no such process"
    except PermissionError:
        return "its /proc entry cannot be read (another user's process)"
    except (OSError, ValueError, IndexError) as e:
        return f"its /proc entry cannot be read ({e})"
    if env.get(TOKEN_ENV) != server.token:
        return "it does not hold the recorded server's token"
    if server.home is None or env.get("PREFECT_HOME") != server.home:
        return "its PREFECT_HOME is not the recorded home"
    if Path(server.home) != Path(home).resolve():
        return f"it was recorded for home {server.home}, not {Path(home).resolve()}"
    return None


def _listening_inodes(port: int) -> set[str]:
    """Socket inodes listening on 127.0.0.1:``port`` (from /proc/net/tcp)."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                f = line.split()
                if len(f) > 9 and f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add(f[9])
    return inodes


def listens(pid: int, url: str) -> bool:
    """Whether process ``pid`` itself holds the socket listening on ``url``'s port (so the
    answers at ``url`` are its own, not those of whatever else took the port)."""
    from urllib.parse import urlsplit

    try:
        port = urlsplit(url).port
    except ValueError:
        return False
    if port is None:
        return False
    wanted = {f"socket:[{i}]" for i in _listening_inodes(port)}
    if not wanted:
        return False
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{pid}/fd/{fd}") in wanted:
                return True
    return False


def running(home: Path, timeout: float = 1.0) -> LocalServer | None:
    """The server recorded in ``home`` if it is the process duetflow started (every identity
    check of :func:`mismatch` holds), holds the socket its URL names and answers its health
    check; else None."""
    server = recorded(home)
    if server is None or mismatch(server, home) is not None:
        return None
    if not listens(server.pid, server.url) or not healthy(server.url, timeout):
        return None
    return server


# --- the home's lock ----------------------------------------------------------------------------


@contextlib.contextmanager
def _home_lock(home: Path, timeout: float) -> Iterator[None]:
    """Hold :data:`LOCK_FILE` in ``home`` (``fcntl.flock``, released by the kernel when this
    process dies); ServerError naming the holder after ``timeout`` seconds."""
    path = Path(home) / LOCK_FILE
    fd = open_lock_file(path, ServerError)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
                    raise ServerError(
                        f"{path}: another `duetflow server` command (pid {holder}) has held "
                        f"this home's lock for more than {timeout:.0f} s"
                    ) from None
                time.sleep(0.1)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def free_port() -> int:
    """A port on 127.0.0.1 that is free now (another process may take it before it is bound)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _write_record(home: Path, server: LocalServer) -> None:
    """Write the record atomically; a file planted at the temporary name (a symbolic link to
    somebody's file) is removed, never written through."""
    tmp = _state_path(home).with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(json.dumps(server.to_json(), sort_keys=True))
    tmp.replace(_state_path(home))


def start(
    home: Path,
    port: int | None = None,
    timeout: float = 180.0,
    settings: dict[str, str] | None = None,
) -> LocalServer:
    """Start a background Prefect server with its database in ``home`` (or return the one
    already running there) and wait until it answers.

    The server listens on 127.0.0.1 only; its output goes to :data:`LOG_FILE` in ``home``;
    ``settings`` are extra ``PREFECT_*`` environment variables for it (e.g. the UI off). It is
    recorded (identity included) as soon as it is started, so ``stop`` finds it even when this
    call is killed while waiting. Concurrent calls on one home are serialised by its lock: the
    second finds the first's server. Raises ServerError naming the log when it exits or does
    not answer within ``timeout`` (the process is then stopped and the record removed).
    """
    home = Path(home)
    home.mkdir(parents=True, exist_ok=True)
    with _home_lock(home, timeout + 30.0):
        existing = running(home)
        if existing is not None:
            return existing
        port = port or free_port()
        url = f"http://127.0.0.1:{port}/api"
        token = secrets.token_hex(16)
        env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
        env.update(settings or {})
        env.update(
            PREFECT_HOME=str(home.resolve()),
            PREFECT_SERVER_ANALYTICS_ENABLED="false",
            **{TOKEN_ENV: token},
        )
        log = home / LOG_FILE
        with log.open("ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "prefect", "server", "start",
                 "--host", "127.0.0.1", "--port", str(port)],
                env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,  # not stopped by the terminal's Ctrl-C or exit
            )  # fmt: skip
        try:
            server = identify(proc.pid, url=url, home=home, token=token)
        except (OSError, ValueError, IndexError):  # it exited at once
            code = proc.wait()
            raise ServerError(f"prefect server exited with code {code}; see {log}") from None
        _write_record(home, server)
        deadline = time.monotonic() + timeout
        while not (listens(proc.pid, url) and healthy(url)):
            failure = startup_failure(proc, "prefect server", deadline, timeout, log)
            if failure:
                _terminate(server)
                _state_path(home).unlink(missing_ok=True)
                raise ServerError(failure)
            time.sleep(0.25)
        return server


def _descendants(pid: int) -> list[tuple[int, int]]:
    """(pid, start time) of every process below ``pid`` now, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                children.setdefault(int(_proc_stat(int(entry))[1]), []).append(int(entry))
    found: list[tuple[int, int]] = []
    todo = list(children.get(pid, []))
    while todo:
        child = todo.pop()
        with contextlib.suppress(OSError, ValueError, IndexError):
            found.append((child, _start_time(child)))
            todo.extend(children.get(child, []))
    return found


def _is(pid: int, start_time: int) -> bool:
    try:
        stat = _proc_stat(pid)
    except (OSError, IndexError):
        return False
    return stat[0] not in ("Z", "X") and int(stat[19]) == start_time


def _signal(pid: int, started: int, sig: signal.Signals) -> None:
    """Send ``sig`` to ``pid`` only if it is still the process that started at ``started``.

    Through a pidfd where there is one (Linux): the descriptor names that very process, so a
    pid reused between the check and the signal cannot receive it.
    """
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        if _is(pid, started):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        return
    try:
        fd = pidfd_open(pid)
    except OSError:  # gone already
        return
    try:
        if _is(pid, started):
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(fd, sig)
    finally:
        os.close(fd)


def _terminate(server: LocalServer, wait: float = 20.0) -> None:
    """SIGTERM the server's pid (and the descendants it has now, each identified by its start
    time), then SIGKILL what is left after ``wait`` seconds. Nothing else is signalled: no
    process group, no pid that was reused meanwhile."""
    assert server.start_time is not None
    targets = [(server.pid, server.start_time), *_descendants(server.pid)]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid, started in targets:
            _signal(pid, started, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):  # our own child (start): reap it
                os.waitpid(server.pid, os.WNOHANG)
            if not any(_is(pid, started) for pid, started in targets):
                return
            time.sleep(0.1)


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and has not exited (a zombie awaiting its parent has)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc (macOS): the signal check is all there is
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def stop(home: Path, timeout: float = 60.0) -> bool:
    """Stop the server recorded in ``home``; False when none was recorded.

    The recorded pid is signalled only when it is provably the server duetflow started
    (:func:`mismatch`); otherwise ServerError names the pid and the cause, and nothing
    is signalled. The record is removed either way (a record that fails its checks describes no
    server of ours).
    """
    home = Path(home)
    if not home.is_dir():
        return False
    with _home_lock(home, timeout):
        server = recorded(home)
        if server is None:
            if _state_path(home).exists():
                _state_path(home).unlink(missing_ok=True)
                raise ServerError(
                    f"{_state_path(home)}: not a duetflow server record (unreadable or wrong "
                    "shape); nothing was signalled, the record was removed"
                )
            return False
        cause = mismatch(server, home)
        if cause is not None:
            _state_path(home).unlink(missing_ok=True)
            raise ServerError(
                f"not signalling pid {server.pid} recorded in {_state_path(home)}: {cause}; "
                "nothing was signalled, the record was removed"
            )
        _terminate(server)
        _state_path(home).unlink(missing_ok=True)
        return True
