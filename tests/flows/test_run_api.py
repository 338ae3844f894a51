"""A killed ``duetflow run`` leaves nothing running: its temporary Prefect API dies with it.

Real processes and real signals: the run (or a process holding :func:`temporary_api`) is
killed with SIGKILL once its API answers, and every process it had started must be gone within
a bounded wait. The helpers read /proc themselves, so the test judges any implementation.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from duetflow.cli.run import PREFECT_HOME_ENV
from flow_helpers import write_config

DUETFLOW = str(Path(sys.executable).with_name("duetflow"))
#: how long a process may outlive its killed parent (the watchdog's poll + uvicorn's shutdown)
BOUND_S = 30.0

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()


def _descendants(pid: int) -> set[tuple[int, int]]:
    """(pid, start time) of every live process below ``pid``."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError):
                children.setdefault(int(_stat(int(entry))[1]), []).append(int(entry))
    found, todo = set(), list(children.get(pid, []))
    while todo:
        child = todo.pop()
        try:
            found.add((child, int(_stat(child)[19])))
        except (OSError, IndexError):
            continue
        todo.extend(children.get(child, []))
    return found


def _listening_inodes() -> set[str]:
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            f = line.split()
            if f[3] == "0A":
                inodes.add(f"socket:[{f[9]}]")
    return inodes


def _listens(pid: int) -> bool:
    wanted = _listening_inodes()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") in wanted:
                return True
        except OSError:
            pass
    return False


def _live(proc: tuple[int, int]) -> bool:
    try:
        stat = _stat(proc[0])
    except OSError:
        return False
    return stat[0] not in ("Z", "X") and int(stat[19]) == proc[1]


def _kill_once_serving(
    parent: subprocess.Popen[bytes], wait: float = 300.0
) -> set[tuple[int, int]]:
    """SIGKILL ``parent`` once one of its descendants listens on a port; returns every
    descendant it had then."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        assert parent.poll() is None, "the parent ended before its API was serving"
        below = _descendants(parent.pid)
        if any(_listens(pid) for pid, _ in below):
            break
        time.sleep(0.2)
    else:
        pytest.fail(f"no process below pid {parent.pid} served within {wait:.0f} s")
    below = _descendants(parent.pid)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    return below


def _wait_gone(procs: set[tuple[int, int]]) -> set[tuple[int, int]]:
    deadline = time.monotonic() + BOUND_S
    while (left := {p for p in procs if _live(p)}) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid, _ in left:  # never leave them running after the test
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return left


def _bare_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "PREFECT_HOME")}
    env.update({PREFECT_HOME_ENV: str(tmp_path / "home"), "HOME": str(tmp_path / "user")})
    return env


@pytest.mark.slow
def test_a_process_killed_with_its_api_up_leaves_no_api(tmp_path: Path) -> None:
    holder = textwrap.dedent(
        """
        import time
        from duetflow.flows.run_api import temporary_api
        with temporary_api() as url:
            time.sleep(600)
        """
    )
    env = {**_bare_env(tmp_path), "PREFECT_HOME": str(tmp_path / "home")}
    parent = subprocess.Popen([sys.executable, "-c", holder], env=env)
    below = _kill_once_serving(parent)
    assert below
    assert _wait_gone(below) == set()


@pytest.mark.slow
def test_the_api_of_a_run_ends_with_the_run(tmp_path: Path) -> None:
    """Normal end: the API stops when the block ends."""
    holder = textwrap.dedent(
        """
        import os
        from duetflow.flows.run_api import temporary_api
        from duetflow.flows.local_server import healthy
        with temporary_api() as url:
            assert healthy(url)
        print(url, flush=True)
        """
    )
    env = {**_bare_env(tmp_path), "PREFECT_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-c", holder], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    from duetflow.flows.local_server import healthy

    assert not healthy(done.stdout.strip())


@pytest.mark.slow
def test_a_killed_duetflow_run_leaves_nothing_running(tmp_path: Path, flow_samples: Path) -> None:
    cfg = write_config(tmp_path / "run.yaml", flow_samples, scripts=False)
    run = subprocess.Popen(
        [DUETFLOW, "run", "-c", str(cfg), "--no-publish", "--no-progress"],
        env=_bare_env(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    below = _kill_once_serving(run)
    assert below
    assert _wait_gone(below) == set()
