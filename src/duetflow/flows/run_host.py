"""A run host: Prefect and the pipeline imported once, each ``duetflow run`` forked from it.

A ``duetflow run`` against a kept server (``duetflow server start``) spends most of its fixed
cost importing Prefect and the pipeline (its settings, client schemas and blocks are pydantic
models built at import: ~2-3 s of CPU on a small machine, docs/performance.md, *A run's fixed
cost, round six*). ``duetflow server start`` therefore also starts a **run host** next to the
server: a process that has imported what a run needs and then waits on a Unix socket in the
server's Prefect home (:data:`SOCKET_FILE`). ``duetflow run`` (:func:`hand_off`) sends it its
command line, working directory, environment and umask, and passes its standard input, output
and error (``SCM_RIGHTS``); the host forks a child that becomes the command: it takes those
descriptors, folder and environment, rebuilds Prefect's settings and logging from that
environment (:func:`refresh_prefect_settings`), runs the same click command in the same way and
exits with its code, which the host sends back. The run's output goes straight to the caller's
terminal or pipe; its files, flow runs and exit code are those of the same command run in
process.

The caller runs the command itself, exactly as without a host, whenever the host cannot serve it
the same way: no host answers within :data:`HANDSHAKE_S`; ``PREFECT_API_URL`` is given (a host
belongs to one home's server); the command is not one the host serves (:data:`SERVED`); the
interpreter or ``sys.path`` differ; an environment variable read as libraries load
(:data:`IMPORT_TIME_PREFIXES`: thread counts, Arrow's allocator, ``PYTHON*``, ``LD_*``...)
differs from the host's; a module the host imported changed on disk since it started (an
upgrade or an edit); or the host has a thread running (a fork would copy its locks). Set
``DUETFLOW_RUN_HOST=off`` to never hand a run off.

Safety (docs/failure-modes.md, *Processes, locks and disk*):

* the socket is created with mode 0600 in the home and a connecting process must have the
  host's uid (``SO_PEERCRED``);
* the host signals only its own children, before it has reaped them (so their pids cannot
  have been reused), and each child's own process group (the child starts a session);
* a caller that dies (SIGKILL included) closes its connection: the host sends the run SIGTERM,
  and SIGKILL after :data:`GRACE_S`; Ctrl-C, SIGTERM and SIGHUP of the caller are forwarded;
* a child dies with the host (``PR_SET_PDEATHSIG``), and the host stops serving when the server
  recorded in its home is no longer the process duetflow started there
  (:func:`duetflow.flows.local_server.mismatch`);
* :func:`stop` asks the host over its socket to stop (it ends its runs and removes its socket);
  nothing is signalled by pid.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duetflow.errors import ServerError
from duetflow.flows.spawned import startup_failure

log = logging.getLogger(__name__)

#: the host's socket, inside the server's Prefect home
SOCKET_FILE = "duetflow-run-host.sock"
#: the host's own output, inside the server's Prefect home
LOG_FILE = "duetflow-run-host.log"
#: ``off`` (or ``0``, ``false``, ``no``): never hand a run to a host
OFF_ENV = "DUETFLOW_RUN_HOST"
#: the commands a host runs (``duetflow`` subcommands)
SERVED = frozenset({"run"})
#: environment variables read as the interpreter and its libraries load: a run whose values
#: differ from the host's is run by the caller itself
IMPORT_TIME_PREFIXES = (
    "PYTHON", "LD_", "MALLOC_", "NUMBA_", "OMP_", "OPENBLAS_", "MKL_", "ARROW_", "NUMEXPR_",
    "DUETFLOW_KERNELS", "LANG", "LC_",
)  # fmt: skip
#: seconds a caller waits for the host to take or refuse its run (and the host for a request)
HANDSHAKE_S = 5.0
#: the longest message either side accepts (bytes)
MAX_MESSAGE = 1 << 20
#: seconds a run has between SIGTERM and SIGKILL when its caller went away or the host stops
GRACE_S = 10.0
#: seconds between the host's checks of its server and its socket
POLL_S = 1.0
#: modules a host imports before it serves (what a run imports: the command line, the flows,
#: the pipeline, and the parts of Prefect's engine a flow run imports as it starts)
PRELOAD = (
    "duetflow.cli", "duetflow.flows.build", "duetflow.pipeline.driver",
    "prefect.flow_engine", "prefect.task_engine", "prefect.task_runners",
)  # fmt: skip
#: the function a host's child runs: ``module:function`` taking the command line, returning the
#: exit code
ENTRY = "duetflow.flows.run_host:cli_entry"

#: set in a host's child: a run is never handed off twice
_in_child = False


def socket_path(home: Path) -> Path:
    """Where the run host of ``home`` listens."""
    return Path(home) / SOCKET_FILE


# --- the wire: one JSON object per line ----------------------------------------------------------


class _Lines:
    """JSON lines read from a stream socket, at most :data:`MAX_MESSAGE` bytes each."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""

    def feed(self, data: bytes) -> None:
        self.buf += data

    def pop(self) -> dict[str, Any] | None:
        """The next complete message, or None."""
        line, sep, rest = self.buf.partition(b"\n")
        if not sep:
            if len(self.buf) > MAX_MESSAGE:
                raise ValueError(f"a message longer than {MAX_MESSAGE} bytes")
            return None
        self.buf = rest
        msg = json.loads(line)
        if not isinstance(msg, dict):
            raise ValueError("a message that is not a JSON object")
        return msg

    def read(self) -> dict[str, Any] | None:
        """The next message, reading as needed (the socket's timeout bounds each read); None
        at the end of the stream."""
        while (msg := self.pop()) is None:
            data = self.sock.recv(65536)
            if not data:
                return None
            self.feed(data)
        return msg


def _send(sock: socket.socket, msg: Mapping[str, Any], fds: Sequence[int] = ()) -> None:
    data = json.dumps(msg).encode() + b"\n"
    if fds:
        sent = socket.send_fds(sock, [data], list(fds))
        data = data[sent:]
    sock.sendall(data)


# --- the caller ----------------------------------------------------------------------------------


def _import_time_env(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(IMPORT_TIME_PREFIXES)}


def off() -> bool:
    """Whether runs are never handed off (:data:`OFF_ENV`, or this is a host's child)."""
    return _in_child or os.environ.get(OFF_ENV, "").strip().lower() in ("off", "0", "false", "no")


def hand_off(command: str, argv: Sequence[str], home: Path) -> int | None:
    """Run the ``duetflow`` command line ``argv`` (without the program name; its subcommand is
    ``command``) in the run host of ``home``; returns its exit code, or None when no host takes
    it (the caller then runs it itself).

    Blocks until the run ends; SIGINT, SIGTERM and SIGHUP of this process are passed on to it.
    """
    if off() or command not in SERVED or os.environ.get("PREFECT_API_URL"):
        return None
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None  # signals can be passed on from the main thread only
    path = socket_path(home)
    if not path.is_socket():
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        request = {
            "op": "run",
            "command": command,
            "argv": list(argv),
            "argv0": sys.argv[0] if sys.argv else "duetflow",
            "cwd": os.getcwd(),  # raises where the caller's folder is gone: it runs itself
            "env": dict(os.environ),
            "umask": _umask(),
            "executable": sys.executable,
            "path": list(sys.path),
        }
        sock.settimeout(HANDSHAKE_S)
        sock.connect(str(path))
        _send(sock, request, fds=(0, 1, 2))
        lines = _Lines(sock)
        reply = lines.read()
    except (OSError, ValueError) as e:
        sock.close()
        log.info("run host in %s did not take the run (%s): running here", home, e)
        return None
    if reply is None or "accepted" not in reply:
        sock.close()
        why = (reply or {}).get("refused", "it closed the connection")
        log.info("run host in %s refused the run (%s): running here", home, why)
        return None
    return _follow(sock, lines, home, int(reply["accepted"]))


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _follow(sock: socket.socket, lines: _Lines, home: Path, pid: int) -> int:
    """Wait for the run's exit code, passing this process's signals on to it."""

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(OSError):
            _send(sock, {"signal": signum})

    kept = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        sock.settimeout(None)  # the run takes as long as it takes; the host answers when it ends
        msg = lines.read()
    except (OSError, ValueError):
        msg = None
    finally:
        for s, handler in kept.items():
            signal.signal(s, handler)
        sock.close()
    if msg is None or "exit" not in msg:
        print(
            f"error: the run host in {home} went away during the run (its pid {pid}); "
            "the run was stopped with it",
            file=sys.stderr,
        )
        return 1
    return int(msg["exit"])


# --- asking a host -------------------------------------------------------------------------------


def ping(home: Path, timeout: float = HANDSHAKE_S) -> dict[str, Any] | None:
    """The host of ``home``'s answer (its pid, the commands it serves), or None when none
    answers within ``timeout``."""
    return _ask(home, {"op": "ping"}, timeout)


def _ask(home: Path, msg: Mapping[str, Any], timeout: float) -> dict[str, Any] | None:
    path = socket_path(home)
    if not path.is_socket():
        return None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.settimeout(timeout)
            sock.connect(str(path))
            _send(sock, msg)
            return _Lines(sock).read()
        except (OSError, ValueError):
            return None


def stop(home: Path, timeout: float = GRACE_S + 20.0) -> bool:
    """Ask the host of ``home`` to stop (it ends its runs, SIGTERM then SIGKILL, and removes its
    socket) and wait until its process has exited; False when none answered. Nothing is
    signalled from here."""
    path = socket_path(home)
    if not path.is_socket():
        return False
    deadline = time.monotonic() + timeout
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.settimeout(HANDSHAKE_S)
            sock.connect(str(path))
            _send(sock, {"op": "stop"})
            lines = _Lines(sock)
            reply = lines.read()
            if reply is None or "stopping" not in reply:
                return False
            sock.settimeout(timeout)
            while lines.read() is not None:  # the host closes the connection as it exits
                pass
        except ConnectionRefusedError:
            return False  # a socket left by a host that died: nobody to stop
        except OSError as e:
            raise ServerError(f"run host in {home} did not stop within {timeout:.0f} s: {e}") from e
    pid = int(reply["stopping"])
    while _running(pid):  # the connection ends a moment before the process does
        if time.monotonic() > deadline:
            raise ServerError(f"run host {pid} in {home} did not exit within {timeout:.0f} s")
        time.sleep(0.02)
    return True


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def start(
    home: Path,
    timeout: float = 120.0,
    *,
    entry: str = ENTRY,
    preload: Sequence[str] = PRELOAD,
    any_server: bool = False,
) -> int:
    """Start the run host of ``home`` in the background (or find the one answering there) and
    wait until it answers; returns its pid.

    Its environment is this process's, less ``PREFECT_API_URL``, with ``PREFECT_HOME`` set to
    ``home``; its output goes to :data:`LOG_FILE` there. ``entry``, ``preload``, ``any_server``:
    see :func:`main`. Two starts at once give one host: the later binds the socket's name, the
    earlier finds it has lost it and exits, and both calls return the host that answers. Raises
    ServerError naming the log when none answers within ``timeout`` (the host this call started
    is then stopped: it is this call's child).
    """
    home = Path(home)
    found = ping(home)
    if found is not None:
        return int(found["pid"])
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env["PREFECT_HOME"] = str(home.resolve())
    env.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    argv = [sys.executable, "-P", "-m", "duetflow.flows.run_host", "--home", str(home.resolve())]
    argv += ["--entry", entry, "--preload", *preload] + (["--any-server"] if any_server else [])
    logfile = home / LOG_FILE
    with logfile.open("ab") as out:
        proc = subprocess.Popen(
            argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,  # not stopped by the terminal's Ctrl-C or exit
        )  # fmt: skip
    deadline = time.monotonic() + timeout
    while True:
        found = ping(home, timeout=1.0)
        if found is not None:
            return int(found["pid"])
        failure = startup_failure(proc, "run host", deadline, timeout, logfile)
        if failure:
            if proc.poll() is None:
                proc.terminate()  # our own child, not yet reaped: its pid is still its own
                try:
                    proc.wait(GRACE_S)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            raise ServerError(failure)
        time.sleep(0.1)


# --- the host ------------------------------------------------------------------------------------


def refresh_prefect_settings() -> None:
    """Rebuild Prefect's root settings and its logging from the environment as it is now.

    Prefect reads both once, as it is imported. A process that imported it before its
    environment was final (a run host's child, which takes its caller's environment after the
    fork; a run that sets ``PREFECT_API_URL`` after Prefect was imported) calls this once the
    environment is set. Nothing to do where Prefect is not imported yet.
    """
    context = sys.modules.get("prefect.context")
    if context is None:
        return
    context.GLOBAL_SETTINGS_CONTEXT = context.root_settings_context()  # type: ignore[attr-defined]
    from prefect.logging.configuration import setup_logging

    setup_logging(incremental=False)


def _fingerprint(modules: Mapping[str, Any]) -> dict[str, tuple[int, int]]:
    """(mtime, size) of the file of every module imported: what a code change alters."""
    files: dict[str, tuple[int, int]] = {}
    for mod in list(modules.values()):
        path = getattr(mod, "__file__", None)
        if isinstance(path, str):
            with contextlib.suppress(OSError):
                st = os.stat(path)
                files[path] = (st.st_mtime_ns, st.st_size)
    return files


def _changed(files: Mapping[str, tuple[int, int]]) -> str | None:
    for path, was in files.items():
        try:
            st = os.stat(path)
        except OSError:
            return path
        if (st.st_mtime_ns, st.st_size) != was:
            return path
    return None


def _peer(conn: socket.socket) -> tuple[int, int] | None:
    """The connecting process's (pid, uid); None where the system does not say."""
    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None:
        return None  # no peer credentials here: the socket's mode 0600 is the check
    raw = conn.getsockopt(socket.SOL_SOCKET, opt, struct.calcsize("3i"))
    pid, uid, _gid = struct.unpack("3i", raw)
    return int(pid), int(uid)


@dataclass
class _Run:
    """A run the host forked: its caller's connection and the child's pid (not yet reaped)."""

    conn: socket.socket
    lines: _Lines
    pid: int
    term_at: float | None = None  # when SIGTERM was sent (the caller went away, the host stops)
    killed: bool = False


@dataclass
class Child:
    """What a forked child runs: the command line, with the caller's descriptors and
    environment in place (:meth:`run` returns its exit code)."""

    argv: list[str]
    entry: Callable[[list[str]], int]

    def run(self) -> int:
        return self.entry(self.argv)


class Host:
    """The serving loop (:meth:`serve`): one socket, one child per run.

    ``entry`` is what a child runs (:func:`cli_entry`: the ``duetflow`` command line);
    ``server_alive`` turns False once the server this host serves is gone (asked every
    :data:`POLL_S`).
    """

    def __init__(
        self,
        home: Path,
        entry: Callable[[list[str]], int],
        server_alive: Callable[[], bool] = lambda: True,
    ) -> None:
        self.home = Path(home)
        self.entry = entry
        self.server_alive = server_alive
        self.runs: dict[int, _Run] = {}
        self.pid = os.getpid()
        self.env = _import_time_env(os.environ)
        self.files = _fingerprint(sys.modules)
        self.path = socket_path(self.home)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sel = selectors.DefaultSelector()
        self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.inode = -1
        self.listening = False
        self.stopping = False
        #: the connection of a caller of :func:`stop`: closed as this process exits
        self.stopper: socket.socket | None = None

    def serve(self) -> Child | None:
        """Serve until stopped (returns None in the host) or, in a forked child, return the
        :class:`Child` to run. Nothing of the host's clean-up runs in a child."""
        tmp = self.path.with_name(f"{SOCKET_FILE}.{self.pid}")
        tmp.unlink(missing_ok=True)
        mask = os.umask(0o177)  # the socket is the user's alone from its creation
        try:
            self.listener.bind(str(tmp))
        finally:
            os.umask(mask)
        self.listener.listen(16)
        os.replace(tmp, self.path)  # a host started after this one takes the name: this one ends
        self.inode = os.stat(self.path).st_ino
        self.listening = True
        self.sel.register(self.listener, selectors.EVENT_READ, "listen")
        self.sel.register(self.wake_r, selectors.EVENT_READ, "wake")
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(s, self._on_stop_signal)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # wakes the loop (the wakeup fd)
        signal.set_wakeup_fd(self.wake_w)
        print(f"run host {self.pid} serving {sorted(SERVED)} at {self.path}", flush=True)
        try:
            return self._loop()
        finally:
            if os.getpid() == self.pid:
                self._close()

    def _on_stop_signal(self, *_: object) -> None:
        self.stopping = True

    def _loop(self) -> Child | None:
        checked = time.monotonic()
        while True:
            for key, _ in self.sel.select(POLL_S):
                if isinstance(key.data, _Run):
                    self._from_caller(key.data)
                elif key.data == "listen":
                    child = self._accept()
                    if child is not None:
                        return child
                else:
                    with contextlib.suppress(OSError):
                        os.read(self.wake_r, 4096)
            self._reap()
            now = time.monotonic()
            if self.listening and now - checked >= POLL_S:
                checked = now
                if not self._own() or not self.server_alive():
                    print("run host: its server or socket is gone; no new runs", flush=True)
                    self._stop_listening()
            if self.stopping:
                self._stop_listening()
                for run in self.runs.values():
                    self._terminate(run, now)
            if not self.listening and not self.runs:
                return None

    def _own(self) -> bool:
        try:
            return os.stat(self.path).st_ino == self.inode
        except OSError:
            return False

    def _stop_listening(self) -> None:
        if not self.listening:
            return
        self.listening = False
        with contextlib.suppress(KeyError, ValueError):
            self.sel.unregister(self.listener)
        if self._own():
            self.path.unlink(missing_ok=True)
        self.listener.close()

    def _accept(self) -> Child | None:
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return None
        conn.settimeout(HANDSHAKE_S)
        fds: list[int] = []
        keep = False
        try:
            peer = _peer(conn)
            if peer is not None and peer[1] != os.getuid():
                return None  # another user's process: not even an answer
            lines = _Lines(conn)
            data, fds, _flags, _addr = socket.recv_fds(conn, 65536, 3)
            if not data:
                raise ValueError("an empty request")
            lines.feed(data)
            msg = lines.read()
            if msg is None:
                raise ValueError("an unfinished request")
            op = msg.get("op")
            if op == "ping":
                _send(conn, {"pid": self.pid, "served": sorted(SERVED), "runs": len(self.runs)})
            elif op == "stop":
                _send(conn, {"stopping": self.pid})
                self.stopping, self.stopper, keep = True, conn, True
            elif op == "run":
                why = self._refusal(msg, fds)
                if why is None and peer is not None and peer[0] in self.runs:
                    why = "a run of this host (a run is never handed off twice)"
                if why is not None:
                    print(f"refused: {why}", flush=True)
                    _send(conn, {"refused": why})
                else:
                    keep = True
                    return self._fork(conn, lines, msg, fds)
            else:
                _send(conn, {"refused": f"unknown request {op!r}"})
        except (OSError, ValueError) as e:
            print(f"run host: a request failed: {e}", flush=True)
        finally:
            if os.getpid() == self.pid:  # in a forked child, _become has done this
                for fd in fds:
                    with contextlib.suppress(OSError):
                        os.close(fd)
                if not keep:
                    conn.close()
        return None

    def _refusal(self, msg: Mapping[str, Any], fds: Sequence[int]) -> str | None:
        argv, env, path = msg.get("argv"), msg.get("env"), msg.get("path")
        if not isinstance(argv, list) or msg.get("command") not in SERVED:
            return f"not a command this host runs ({', '.join(sorted(SERVED))})"
        if not isinstance(env, dict) or len(fds) != 3:
            return "a request without its environment and three descriptors"
        if self.stopping:
            return "the host is stopping"
        # the caller's sys.path less its script's folder (a host started with -P has none)
        same_path = isinstance(path, list) and path[1:] == sys.path
        if msg.get("executable") != sys.executable or not same_path:
            return "another interpreter or sys.path"
        theirs = _import_time_env(env)
        if theirs != self.env:
            diff = sorted({k for k, _ in set(theirs.items()) ^ set(self.env.items())})
            return f"environment read at import differs ({', '.join(diff[:5])})"
        if not os.path.isdir(str(msg.get("cwd"))):
            return "the caller's folder is not one the host can enter"
        changed = _changed(self.files)
        if changed is not None:
            return f"{changed} changed since the host started (restart the server)"
        import threading

        if threading.active_count() > 1:
            return "the host has a thread running (a fork would not be safe)"
        return None

    def _fork(
        self, conn: socket.socket, lines: _Lines, msg: Mapping[str, Any], fds: Sequence[int]
    ) -> Child | None:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        pid = os.fork()
        if pid == 0:
            try:
                return self._become(conn, msg, fds)
            except BaseException as e:  # never back into the host's loop: a second host
                with contextlib.suppress(OSError):
                    os.write(2, f"error: the run host could not start the run: {e}\n".encode())
                os._exit(70)
        run = self.runs[pid] = _Run(conn, lines, pid)
        self.sel.register(conn, selectors.EVENT_READ, run)
        print(f"run {pid}: {' '.join(map(str, msg['argv']))}", flush=True)
        try:
            _send(conn, {"accepted": pid})
        except OSError:
            self._terminate(run, time.monotonic())
        return None

    def _become(self, conn: socket.socket, msg: Mapping[str, Any], fds: Sequence[int]) -> Child:
        """In the child: drop the host's descriptors and signal handlers; take the caller's
        descriptors, folder, umask, environment and ``sys.path``, in a session of its own."""
        global _in_child
        _in_child = True
        signal.set_wakeup_fd(-1)
        for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
            signal.signal(s, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        self.sel.close()
        self.listener.close()
        for fd in (self.wake_r, self.wake_w):
            os.close(fd)
        for other in [conn, *(run.conn for run in self.runs.values()), self.stopper]:
            if other is not None:
                other.close()
        os.setsid()  # its own process group: the host signals the run and its children alone
        _die_with_parent(self.pid)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        _std_streams()
        os.umask(int(msg["umask"]))
        os.chdir(str(msg["cwd"]))
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in msg["env"].items()})
        sys.argv = [str(msg.get("argv0", "duetflow")), *map(str, msg["argv"])]
        sys.path[:] = [str(p) for p in msg["path"]]
        _fresh_logging()
        return Child([str(a) for a in msg["argv"]], self.entry)

    def _from_caller(self, run: _Run) -> None:
        try:
            data = run.conn.recv(65536)
        except OSError:
            data = b""
        if not data:  # the caller went away: the run goes with it
            with contextlib.suppress(KeyError, ValueError):
                self.sel.unregister(run.conn)
            self._terminate(run, time.monotonic())
            return
        run.lines.feed(data)
        with contextlib.suppress(ValueError):
            while (msg := run.lines.pop()) is not None:
                sig = msg.get("signal")
                if sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                    self._signal(run, signal.Signals(sig))

    def _signal(self, run: _Run, sig: signal.Signals) -> None:
        # the child is ours and not reaped, so its pid (and the group it leads) is its own
        if run.pid in self.runs:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(run.pid, sig)

    def _terminate(self, run: _Run, now: float) -> None:
        if run.term_at is None:
            run.term_at = now
            self._signal(run, signal.SIGTERM)
        elif not run.killed and now - run.term_at > GRACE_S:
            run.killed = True
            self._signal(run, signal.SIGKILL)

    def _reap(self) -> None:
        for pid in list(self.runs):
            run = self.runs[pid]
            try:
                done, status, usage = os.wait4(pid, os.WNOHANG)
            except ChildProcessError:  # not ours after all: nothing to report
                done, status, usage = pid, 1 << 8, None
            if done == 0:
                if run.term_at is not None:
                    self._terminate(run, time.monotonic())
                continue
            del self.runs[pid]
            code = os.waitstatus_to_exitcode(status)
            code = 128 - code if code < 0 else code  # ended by a signal: the shell's code
            cpu = None if usage is None else usage.ru_utime + usage.ru_stime
            print(f"run {pid}: exit {code}", flush=True)
            with contextlib.suppress(KeyError, ValueError):
                self.sel.unregister(run.conn)
            with contextlib.suppress(OSError):
                _send(run.conn, {"exit": code, "cpu_s": cpu})
            run.conn.close()

    def _close(self) -> None:
        with contextlib.suppress(OSError):
            self._stop_listening()
        signal.set_wakeup_fd(-1)
        self.sel.close()
        for fd in (self.wake_r, self.wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.path.with_name(f"{SOCKET_FILE}.{self.pid}").unlink(missing_ok=True)


def _std_streams() -> None:
    """``sys.stdin``, ``stdout`` and ``stderr`` anew over descriptors 0-2 (now the caller's),
    buffered as Python buffers them at start-up: a terminal line by line, stderr always."""
    import io

    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        old = getattr(sys, name)
        try:
            tty = os.isatty(fd)
            raw = open(fd, "rb" if fd == 0 else "wb", buffering=-1, closefd=False)  # noqa: SIM115
        except OSError:
            continue
        stream = io.TextIOWrapper(
            raw,
            encoding=getattr(old, "encoding", None),
            errors=getattr(old, "errors", None),
            line_buffering=fd == 2 or (fd == 1 and tty),
            write_through=fd == 2 or (fd == 1 and unbuffered),
        )
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def _die_with_parent(parent: int) -> None:
    """The kernel sends this process SIGTERM when its parent (the host) dies (Linux)."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the host died before that was armed
        os._exit(1)


def _fresh_logging() -> None:
    """The root logger as a new process has it before Prefect loads: the command configures it
    (``duetflow -v``) and Prefect's settings are applied over it once the run's environment is
    set (:func:`refresh_prefect_settings`), in the same order as in a process of its own."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.setLevel(logging.WARNING)
    config = sys.modules.get("prefect.logging.configuration")
    if config is not None:
        config.PROCESS_LOGGING_CONFIG.clear()  # type: ignore[attr-defined]


def cli_entry(argv: list[str]) -> int:
    """The ``duetflow`` command line ``argv`` run as the console script runs it; its exit code."""
    from duetflow.cli import run as cli_run

    try:
        cli_run(argv)
    except SystemExit as e:
        if e.code is None:
            return 0
        if isinstance(e.code, int):
            return e.code
        print(e.code, file=sys.stderr)
        return 1
    return 0


def _server_alive(home: Path) -> Callable[[], bool]:
    from duetflow.flows import local_server

    def alive() -> bool:
        server = local_server.recorded(home)
        return server is not None and local_server.mismatch(server, home) is None

    return alive


def _load(spec: str) -> Callable[[list[str]], int]:
    import importlib

    module, _, name = spec.partition(":")
    fn: Callable[[list[str]], int] = getattr(importlib.import_module(module), name)
    return fn


def main(args: Sequence[str] | None = None) -> int:
    """``python -m duetflow.flows.run_host --home HOME [--entry MOD:FN] [--preload MOD ...]
    [--any-server]``: import, then serve until stopped; a forked child runs its command."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m duetflow.flows.run_host")
    ap.add_argument("--home", type=Path, required=True)
    ap.add_argument("--entry", default=ENTRY)
    ap.add_argument("--preload", nargs="*", default=list(PRELOAD))
    ap.add_argument(
        "--any-server", action="store_true", help="serve whether or not a server is recorded"
    )
    ns = ap.parse_args(args)
    from duetflow.native_threads import process_defaults, tune_malloc

    process_defaults(os.environ)  # as the console script does, before the libraries load
    tune_malloc(os.environ)
    import importlib

    for name in ns.preload:
        importlib.import_module(name)
    alive = (lambda: True) if ns.any_server else _server_alive(ns.home)
    child = Host(ns.home, _load(ns.entry), alive).serve()
    if child is None:
        return 0
    return child.run()  # in a forked child: the command, then a normal interpreter exit


if __name__ == "__main__":  # ``-m``: run the importable module's main, so the flag a child
    # sets (``_in_child``) is the one ``duetflow.cli.run`` reads
    from duetflow.flows.run_host import main as _main

    sys.exit(_main())
