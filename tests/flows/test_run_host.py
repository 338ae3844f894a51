"""The run host (``duetflow.flows.run_host``): a run forked from a process that imported Prefect
and the pipeline already, taking its caller's folder, environment and descriptors.

These hosts run ``tests/run_host_entry.py`` instead of the ``duetflow`` command line, so each
starts in a fraction of a second; ``tests/flows/test_local_server.py`` runs the real command
through the host that ``duetflow server start`` starts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from duetflow.errors import ServerError
from duetflow.flows import local_server, run_host

TESTS = Path(__file__).resolve().parents[1]
#: a caller: hands its command line to the host of argv[1]; exit 99 when no host took it
CALLER = (
    "import json, os, sys; from pathlib import Path; "
    "from duetflow.native_threads import process_defaults; process_defaults(os.environ); "
    "from duetflow.flows.run_host import hand_off; "
    "code = hand_off(sys.argv[3], json.loads(sys.argv[2]), Path(sys.argv[1])); "
    "sys.exit(99 if code is None else code)"
)
NOT_HANDED = 99


def _wait(cond: Callable[[], bool], timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, int]]:
    """A host serving ``run_host_entry.entry`` in ``tmp_path/h`` (any server); (home, pid)."""
    home = tmp_path / "h"
    home.mkdir()
    mods = tmp_path / "mods"
    mods.mkdir()
    (mods / "rh_probe_mod.py").write_text("VALUE = 1\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), str(mods)]))
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.delenv(run_host.OFF_ENV, raising=False)
    pid = run_host.start(
        home, entry="run_host_entry:entry", preload=["rh_probe_mod"], any_server=True
    )
    try:
        yield home, pid
    finally:
        run_host.stop(home)


def _call(home: Path, argv: list[str], command: str = "run", **kw: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CALLER, str(home), json.dumps(argv), command],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw,  # type: ignore[call-overload]
    )  # fmt: skip


def _waiting_run(home: Path, mark: Path) -> tuple[subprocess.Popen[str], int]:
    """A caller whose run writes its pid to ``mark`` and waits; (caller, the run's pid)."""
    proc = _call(home, ["run", "wait", str(mark)])
    assert _wait(mark.exists)
    return proc, int(mark.read_text())


def test_a_run_takes_its_callers_folder_environment_and_descriptors(
    host: tuple[Path, int], tmp_path: Path
) -> None:
    home, pid = host
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "RUN_HOST_TEST": "hello"}
    proc = _call(
        home, ["run", "show", "3", str(home)], cwd=work, env=env, stdin=subprocess.PIPE,
        umask=0o027,
    )  # fmt: skip
    out, err = proc.communicate("from the caller", timeout=60)
    assert proc.returncode == 3, err  # the run's own exit code
    shown = json.loads(out)
    assert shown["cwd"] == str(work)
    assert shown["env"] == "hello"
    assert shown["argv"] == ["-c", "run", "show", "3", str(home)]
    assert shown["ppid"] == pid and shown["pid"] not in (pid, proc.pid)  # forked from the host
    assert shown["sid"] == shown["pid"]  # a session (and process group) of its own
    assert shown["umask"] == 0o027
    assert shown["stdin"] == "from the caller"
    assert shown["again"] is None  # a run never hands itself off again
    assert "to stderr" in err
    log = (home / run_host.LOG_FILE).read_text()
    assert f"run {shown['pid']}: run show 3" in log and f"run {shown['pid']}: exit 3" in log


def test_a_run_the_host_cannot_run_the_same_way_is_left_to_its_caller(
    host: tuple[Path, int], tmp_path: Path
) -> None:
    home, _ = host
    # another thread count than the host loaded its libraries with
    more = {**os.environ, "OMP_NUM_THREADS": "7"}
    assert _call(home, ["run", "show", "0", str(home)], env=more).wait(60) == NOT_HANDED
    # a command the host does not serve: not even asked
    assert _call(home, ["ingest"], command="ingest").wait(60) == NOT_HANDED
    # handing off switched off
    off = {**os.environ, run_host.OFF_ENV: "off"}
    assert _call(home, ["run", "show", "0", str(home)], env=off).wait(60) == NOT_HANDED
    # the same caller is served ...
    assert _call(home, ["run", "show", "0", str(home)]).wait(60) == 0
    # ... until a module the host imported changes on disk
    probe = tmp_path / "mods" / "rh_probe_mod.py"
    probe.write_text("VALUE = 2  # edited\n")
    assert _call(home, ["run", "show", "0", str(home)]).wait(60) == NOT_HANDED
    log = (home / run_host.LOG_FILE).read_text()
    assert "refused: " in log and "rh_probe_mod.py changed since the host started" in log
    assert "refused: environment read at import differs (OMP_NUM_THREADS)" in log


def test_signals_reach_the_run_and_a_dead_caller_ends_it(
    host: tuple[Path, int], tmp_path: Path
) -> None:
    home, pid = host
    # Ctrl-C of the caller is the run's Ctrl-C
    proc, _ = _waiting_run(home, tmp_path / "first")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted" in out, err
    # a caller killed outright: the run gets SIGTERM and ends
    proc, child = _waiting_run(home, tmp_path / "second")
    proc.kill()
    proc.wait(30)
    assert _wait(lambda: not local_server.alive(child))
    assert _wait(lambda: f"run {child}: exit 143" in (home / run_host.LOG_FILE).read_text())
    assert run_host.ping(home) == {"pid": pid, "served": ["run"], "runs": 0}


def test_stop_ends_the_host_and_its_runs_and_nothing_else(
    host: tuple[Path, int], tmp_path: Path
) -> None:
    home, pid = host
    proc, child = _waiting_run(home, tmp_path / "running")
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        assert run_host.stop(home) is True
        assert not local_server.alive(pid) and not local_server.alive(child)
        assert not run_host.socket_path(home).exists()
        assert proc.wait(30) == 128 + signal.SIGTERM  # the caller is told how its run ended
        assert bystander.poll() is None  # never signalled
        assert run_host.stop(home) is False  # nothing left to stop
    finally:
        bystander.kill()
        bystander.wait()


def test_a_host_whose_server_is_gone_stops_serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "h"
    home.mkdir()
    monkeypatch.setenv("PYTHONPATH", str(TESTS))
    # no server recorded in this home: the host has nothing to serve
    try:
        pid = run_host.start(home, entry="run_host_entry:entry", preload=[])
    except ServerError:
        pid = None  # it had already stopped
    assert _wait(lambda: not run_host.socket_path(home).exists())
    if pid is not None:
        assert _wait(lambda: not local_server.alive(pid))
    assert "its server or socket is gone" in (home / run_host.LOG_FILE).read_text()


def test_prefect_settings_follow_the_environment_when_rebuilt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import prefect.context

    saved = prefect.context.GLOBAL_SETTINGS_CONTEXT
    try:
        monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")
        assert saved.settings.api.url != "http://127.0.0.1:9/api"
        run_host.refresh_prefect_settings()
        assert prefect.context.GLOBAL_SETTINGS_CONTEXT.settings.api.url == "http://127.0.0.1:9/api"
    finally:
        prefect.context.GLOBAL_SETTINGS_CONTEXT = saved


def test_a_socket_left_by_a_dead_host_is_no_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.delenv(run_host.OFF_ENV, raising=False)
    home = tmp_path / "h"
    home.mkdir()
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(run_host.socket_path(home)))  # bound, never listening: as a killed host left it
    dead.close()
    started = time.monotonic()
    assert run_host.hand_off("run", ["run"], home) is None  # the caller runs it itself
    assert run_host.ping(home) is None and run_host.stop(home) is False
    assert time.monotonic() - started < run_host.HANDSHAKE_S  # refused at once, not waited for
