"""The temporary Prefect API of one ``duetflow run``: a child process that dies with the run.

Without ``PREFECT_API_URL`` (and no ``duetflow server start`` answering) a run needs an API for
its flow and task records. Prefect's own temporary API is a ``uvicorn`` child that is stopped
only by an ``atexit`` hook, so a run killed with SIGKILL (or by the OOM killer) leaves it
running. :func:`temporary_api` starts the same app (``prefect.server.api.server:create_app`` in
its ephemeral mode, 127.0.0.1 only) through :func:`main` of this module, which ties the child to
the run that started it (docs/failure-modes.md, *Processes, locks and disk*):

* Linux: ``prctl(PR_SET_PDEATHSIG, SIGTERM)`` — the kernel sends SIGTERM to the API when the
  run's process dies, however it dies;
* everywhere: a watchdog thread that sees the parent pid disappear (``getppid`` changes) and
  stops the server, then exits hard if shutdown takes more than :data:`GRACE_S`;
* the race before either is armed (the run dies while the child starts) is closed by checking
  ``getppid`` once after ``prctl``.

A run that ends normally (or raises) stops its API itself when :func:`temporary_api` exits.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence

from duetflow.errors import ServerError
from duetflow.flows.local_server import free_port, healthy, listens

#: ``prctl`` option: the signal this process gets when its parent dies (linux/prctl.h)
PR_SET_PDEATHSIG = 1
#: seconds the API has to shut down once its run is gone before it exits hard
GRACE_S = 10.0
#: how often the watchdog looks for its parent
POLL_S = 0.5
#: uvicorn's exit code when it cannot bind its port (another process took it meanwhile)
_BIND_FAILED = 3


def _api_env() -> dict[str, str]:
    """The environment Prefect gives its own temporary API (UI off, ephemeral mode)."""
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(
        PREFECT_UI_ENABLED="0",
        PREFECT_SERVER_UI_ENABLED="false",
        PREFECT__SERVER_EPHEMERAL="1",
        PREFECT__SERVER_FINAL="1",
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
    )
    return env


def _stop(proc: subprocess.Popen[bytes], wait: float = GRACE_S) -> None:
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=wait)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def temporary_api(timeout: float | None = None, attempts: int = 3) -> Iterator[str]:
    """Start the run's temporary Prefect API, yield its URL, stop it on exit.

    The API process dies with this one even when this one is killed (see the module's text).
    ``timeout``: seconds to wait for it to answer (default
    ``PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS``, else 120). ServerError when it exits
    or does not answer in time.
    """
    if timeout is None:
        raw = os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
        try:
            timeout = float(raw)
        except ValueError:
            timeout = 120.0
    for attempt in range(attempts):
        port = free_port()
        url = f"http://127.0.0.1:{port}/api"
        proc = subprocess.Popen(
            [sys.executable, "-m", "duetflow.flows.run_api", str(os.getpid()), str(port)],
            env=_api_env(), stdin=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + timeout
            while not (listens(proc.pid, url) and healthy(url)):
                code = proc.poll()
                if code == _BIND_FAILED and attempt + 1 < attempts:
                    break  # the port was taken meanwhile: another one
                if code is not None:
                    raise ServerError(f"the run's temporary Prefect API exited with code {code}")
                if time.monotonic() > deadline:
                    raise ServerError(
                        f"the run's temporary Prefect API (pid {proc.pid}) did not answer at "
                        f"{url} within {timeout:.0f} s"
                    )
                time.sleep(0.1)
            else:
                yield url
                return
        finally:
            _stop(proc)
    raise ServerError(f"the run's temporary Prefect API found no free port in {attempts} tries")


# --- the child ----------------------------------------------------------------------------------


def die_with_parent(parent: int) -> None:
    """Arrange for this process to end when process ``parent`` (which started it) ends."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    if os.getppid() != parent:  # it died before the line above took effect
        os._exit(0)
    threading.Thread(target=_watchdog, args=(parent,), name="parent-watchdog", daemon=True).start()


def _watchdog(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(POLL_S)
    os.kill(os.getpid(), signal.SIGTERM)  # uvicorn's graceful shutdown
    time.sleep(GRACE_S)
    os._exit(1)


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m duetflow.flows.run_api PARENT_PID PORT``: serve the Prefect API on
    127.0.0.1:PORT until process PARENT_PID ends (or this one is stopped)."""
    args = list(sys.argv[1:] if argv is None else argv)
    parent, port = int(args[0]), int(args[1])
    die_with_parent(parent)
    import uvicorn

    uvicorn.run(
        "prefect.server.api.server:create_app",
        factory=True,
        host="127.0.0.1",
        port=port,
        log_level="error",
        lifespan="on",
    )


if __name__ == "__main__":
    main()
