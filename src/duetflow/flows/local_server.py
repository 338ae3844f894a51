"""A Prefect server of duetflow's own that outlives a run, so runs skip the temporary API.

Without ``PREFECT_API_URL`` every ``duetflow run`` has Prefect start a temporary API in a second
process and stop it at exit: ~10–20 s of wall per run on a small machine (docs/performance.md,
*Prefect start-up*). ``duetflow server start`` starts one ``prefect server start`` in the
background instead, bound to 127.0.0.1 on a free port, with its database in duetflow's Prefect
home, and records where it listens in :data:`STATE_FILE` in that home; ``duetflow run`` (through
:func:`duetflow.cli.run.prefect_env`) then uses it whenever it answers its health check.
``duetflow server stop`` stops it. A recorded server that no longer answers is ignored (the
run falls back to the temporary API), so a reboot or a killed server never blocks a run.

Only the standard library here: the server is a child process (``python -m prefect``), and
neither finding nor stopping it imports Prefect.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

#: where a started server is recorded, inside its Prefect home
STATE_FILE = "duetflow-server.json"
#: the server's output, inside its Prefect home
LOG_FILE = "duetflow-server.log"


@dataclass(frozen=True)
class LocalServer:
    """A background Prefect server: its API URL and process id."""

    url: str
    pid: int


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
        return LocalServer(url=str(data["url"]), pid=int(data["pid"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def running(home: Path, timeout: float = 1.0) -> LocalServer | None:
    """The server recorded in ``home`` if it answers its health check, else None."""
    server = recorded(home)
    if server is None or not healthy(server.url, timeout):
        return None
    return server


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(
    home: Path,
    port: int | None = None,
    timeout: float = 180.0,
    settings: dict[str, str] | None = None,
) -> LocalServer:
    """Start a background Prefect server with its database in ``home`` (or return the one
    already running there) and wait until it answers.

    The server listens on 127.0.0.1 only; its output goes to :data:`LOG_FILE` in ``home``;
    ``settings`` are extra ``PREFECT_*`` environment variables for it (e.g. the UI off).
    Raises RuntimeError naming the log when it exits or does not answer within ``timeout``.
    """
    home = Path(home)
    home.mkdir(parents=True, exist_ok=True)
    existing = running(home)
    if existing is not None:
        return existing
    port = port or _free_port()
    url = f"http://127.0.0.1:{port}/api"
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(PREFECT_HOME=str(home), PREFECT_SERVER_ANALYTICS_ENABLED="false")
    env.update(settings or {})
    log = home / LOG_FILE
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "prefect", "server", "start",
             "--host", "127.0.0.1", "--port", str(port)],
            env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,  # not stopped by the terminal's Ctrl-C or exit
        )  # fmt: skip
    deadline = time.monotonic() + timeout
    while not healthy(url):
        if proc.poll() is not None:
            raise RuntimeError(f"prefect server exited with code {proc.returncode}; see {log}")
        if time.monotonic() > deadline:
            _terminate(proc.pid)
            raise RuntimeError(f"prefect server did not answer within {timeout:.0f} s; see {log}")
        time.sleep(0.25)
    server = LocalServer(url=url, pid=proc.pid)
    tmp = _state_path(home).with_suffix(".tmp")
    tmp.write_text(json.dumps({"url": url, "pid": proc.pid}), encoding="utf-8")
    tmp.replace(_state_path(home))
    return server


def _terminate(pid: int, wait: float = 20.0) -> None:
    """SIGTERM the server's process group (uvicorn and its children), then SIGKILL."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):  # our own child: reap it
                os.waitpid(pid, os.WNOHANG)
            if not alive(pid):
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


def _is_prefect_server(server: LocalServer) -> bool:
    """Whether ``server.pid`` is still that server (its id may have been reused since)."""
    if healthy(server.url):
        return True
    try:
        cmdline = Path(f"/proc/{server.pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"prefect" in cmdline and b"server" in cmdline


def stop(home: Path) -> bool:
    """Stop the server recorded in ``home``; False when none was recorded.

    A recorded process id that is no longer a Prefect server (after a reboot) is not signalled;
    the record is removed either way.
    """
    server = recorded(home)
    if server is None:
        return False
    if _is_prefect_server(server):
        _terminate(server.pid)
    _state_path(home).unlink(missing_ok=True)
    return True
