"""``duetflow server start|stop|status``: a Prefect server kept between runs, which
``duetflow run`` uses when it answers instead of starting the temporary API."""

from __future__ import annotations

import dataclasses
import http.server
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from duetflow.cli.run import PREFECT_HOME_ENV, prefect_env
from duetflow.errors import ServerError
from duetflow.flows import local_server, run_host
from flow_helpers import write_config

DUETFLOW = str(Path(sys.executable).with_name("duetflow"))


class _Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/api/health" else 404)
        self.end_headers()
        self.wfile.write(b"true")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def answering() -> Iterator[str]:
    """An HTTP endpoint on 127.0.0.1 whose ``/api/health`` answers 200, as a Prefect API's does."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/api"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def bare_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No Prefect API or home set; duetflow's home is ``tmp_path/home``."""
    for key in ("PREFECT_API_URL", "PREFECT_HOME"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv(PREFECT_HOME_ENV, str(tmp_path / "home"))
    return tmp_path / "home"


def _record(where: Path, url: str, pid: int, **fields: object) -> None:
    """A state file as a stale or forged one would be: ``pid`` and ``url`` plus ``fields``."""
    where.mkdir(parents=True, exist_ok=True)
    data = {"url": url, "pid": pid, **fields}
    (where / local_server.STATE_FILE).write_text(json.dumps(data))


#: a stand-in for a started server: answers /api/health on its port, optionally with a child
_FAKE_SERVER = """
import http.server, subprocess, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/api/health" else 404)
        self.end_headers()
        self.wfile.write(b"true")
    def log_message(self, *a):
        pass
httpd = http.server.HTTPServer(("127.0.0.1", 0), H)
child = subprocess.Popen(["sleep", "300"]) if sys.argv[1] == "child" else None
print(httpd.server_address[1], child.pid if child else 0, flush=True)
httpd.serve_forever()
"""


@pytest.fixture
def spawn() -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Start processes in their own session (as an unrelated daemon would be); kill any left."""
    started: list[subprocess.Popen[str]] = []

    def _spawn(argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            argv, env=env, stdout=subprocess.PIPE, text=True, start_new_session=True
        )
        started.append(proc)
        return proc

    yield _spawn
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def _fake_server(
    spawn: Callable[..., subprocess.Popen[str]], home: Path, *, child: bool = False
) -> tuple[local_server.LocalServer, int]:
    """A process started and recorded the way ``start`` records a server (token, home, start
    time); returns its record and its child's pid (0 without one)."""
    home.mkdir(parents=True, exist_ok=True)
    token = "t" * 32
    env = {**os.environ, local_server.TOKEN_ENV: token, "PREFECT_HOME": str(home.resolve())}
    proc = spawn([sys.executable, "-c", _FAKE_SERVER, "child" if child else "-"], env=env)
    assert proc.stdout is not None
    port, child_pid = (int(v) for v in proc.stdout.readline().split())
    server = local_server.identify(
        proc.pid, url=f"http://127.0.0.1:{port}/api", home=home, token=token
    )
    (home / local_server.STATE_FILE).write_text(json.dumps(server.to_json()))
    return server, child_pid


def _still_alive(proc: subprocess.Popen[str], seconds: float = 1.0) -> bool:
    """Whether ``proc`` is still running ``seconds`` after a stop (a signal takes effect fast)."""
    time.sleep(seconds)
    return proc.poll() is None


def test_a_recorded_server_that_answers_records_the_run(
    bare_env: Path, spawn: Callable[..., subprocess.Popen[str]]
) -> None:
    server, _ = _fake_server(spawn, bare_env)
    assert prefect_env() == "server"
    assert os.environ["PREFECT_API_URL"] == server.url


def test_a_recorded_server_that_does_not_answer_is_ignored(bare_env: Path, answering: str) -> None:
    dead = answering.replace("/api", "/gone")  # answers 404: not a Prefect API
    _record(bare_env, dead, os.getpid())
    assert local_server.recorded(bare_env) is not None
    assert local_server.running(bare_env) is None
    assert prefect_env() == str(bare_env)  # the temporary API, in the persistent home
    assert "PREFECT_API_URL" not in os.environ


def test_a_url_where_something_else_answers_is_not_the_server(
    bare_env: Path, answering: str, spawn: Callable[..., subprocess.Popen[str]]
) -> None:
    server, _ = _fake_server(spawn, bare_env)
    assert local_server.running(bare_env) == server
    # the same (genuine) process, but the recorded URL is answered by another listener
    moved = dataclasses.replace(server, url=answering)
    (bare_env / local_server.STATE_FILE).write_text(json.dumps(moved.to_json()))
    assert local_server.healthy(answering)
    assert local_server.running(bare_env) is None
    assert prefect_env() == str(bare_env)


def test_stop_never_signals_a_process_that_is_not_the_server(
    bare_env: Path, answering: str, spawn: Callable[..., subprocess.Popen[str]]
) -> None:
    """Stale, reused and forged records: each is refused naming the pid and the cause, and the
    process (a session leader, as a daemon is) and its process group live on."""
    other = spawn(["sleep", "300"])
    cases = {
        # a record from before (no identity), its URL answered by something else
        "no start time": {},
        # a pid reused since: the recorded start time is not this process's
        "start time differs": {
            "start_time": 1, "cmdline": ["sleep", "300"], "token": "x", "home": str(bare_env)
        },
        # the right start time and command line, but not the token the server was given
        "token": {
            "start_time": local_server._start_time(other.pid), "cmdline": ["sleep", "300"],
            "token": "x", "home": str(bare_env.resolve()),
        },
    }  # fmt: skip
    for cause, fields in cases.items():
        _record(bare_env, answering, other.pid, **fields)
        with pytest.raises(ServerError, match=f"pid {other.pid} .*{cause}") as e:
            local_server.stop(bare_env)
        assert "nothing was signalled" in str(e.value) and "\n" not in str(e.value)
        assert _still_alive(other), cause
        assert local_server.recorded(bare_env) is None  # the bad record is gone
    assert local_server.stop(bare_env) is False  # nothing recorded any more


def test_stop_refuses_a_process_whose_command_line_merely_matches(
    bare_env: Path, spawn: Callable[..., subprocess.Popen[str]]
) -> None:
    lookalike = spawn(
        [sys.executable, "-c", "import time; time.sleep(300)", "prefect", "server", "start"]
    )
    argv = local_server.identify(lookalike.pid, url="", home=bare_env, token="").cmdline
    assert b"prefect" in " ".join(argv).encode() and b"server" in " ".join(argv).encode()
    _record(
        bare_env, "http://127.0.0.1:1/api", lookalike.pid,
        start_time=local_server._start_time(lookalike.pid), cmdline=[*argv[:-1], "stop"],
        token="x", home=str(bare_env.resolve()),
    )  # fmt: skip
    with pytest.raises(ServerError, match=f"pid {lookalike.pid} .*: its command line differs"):
        local_server.stop(bare_env)
    assert _still_alive(lookalike)


def test_stop_ends_the_recorded_server_and_its_children_only(
    bare_env: Path, spawn: Callable[..., subprocess.Popen[str]]
) -> None:
    bystander = spawn(["sleep", "300"])
    server, child = _fake_server(spawn, bare_env, child=True)
    assert local_server.running(bare_env) == server
    assert local_server.stop(bare_env) is True
    assert not local_server.alive(server.pid)
    deadline = time.monotonic() + 10
    while local_server.alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not local_server.alive(child)
    assert _still_alive(bystander, 0.2)
    assert local_server.stop(bare_env) is False


def test_a_second_record_in_another_home_is_refused(
    tmp_path: Path, spawn: Callable[..., subprocess.Popen[str]]
) -> None:
    """A genuine record copied into another home does not let that home stop the server."""
    server, _ = _fake_server(spawn, tmp_path / "a")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / local_server.STATE_FILE).write_text(json.dumps(server.to_json()))
    with pytest.raises(ServerError, match=f"pid {server.pid} .*: it was recorded for home"):
        local_server.stop(tmp_path / "b")
    assert local_server.running(tmp_path / "a") == server


def test_the_cli_refuses_in_one_line(
    tmp_path: Path, spawn: Callable[..., subprocess.Popen[str]]
) -> None:
    other = spawn(["sleep", "300"])
    home = tmp_path / "home"
    _record(home, "http://127.0.0.1:1/api", other.pid)
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "PREFECT_HOME")}
    done = subprocess.run(
        [DUETFLOW, "server", "stop", "--home", str(home)],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"error: not signalling pid {other.pid} ")
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert _still_alive(other)


def _flow_runs(db: Path) -> int:
    with sqlite3.connect(db) as con:
        return int(con.execute("select count(*) from flow_run").fetchone()[0])


@pytest.mark.prefect
@pytest.mark.slow
def test_runs_use_the_started_server_until_it_is_stopped(
    tmp_path: Path, flow_samples: Path
) -> None:
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "PREFECT_HOME")}
    env.update(
        {PREFECT_HOME_ENV: str(home), "PREFECT_SERVER_UI_ENABLED": "false"},
        HOME=str(tmp_path / "user"),
    )

    def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [DUETFLOW, *args], env=env, check=check, capture_output=True, text=True, timeout=600
        )

    cli("server", "start")
    try:
        server = local_server.running(home)
        assert server is not None
        assert server.url in cli("server", "status").stdout
        again = cli("server", "start").stdout
        assert again.count(f"prefect server at {server.url}") == 1  # the same one, not a second
        assert f"export PREFECT_API_URL={server.url}" in again
        assert "UI: off" in again  # PREFECT_SERVER_UI_ENABLED=false
        host = run_host.ping(home)
        assert host is not None and f"run host: pid {host['pid']}" in cli("server", "status").stdout
        cfg = write_config(tmp_path / "run.yaml", flow_samples, scripts=False)
        run = cli("run", "-c", str(cfg), "--no-publish", "--no-progress")
        # forked from the run host that `server start` started next to the server ...
        hosted = (home / run_host.LOG_FILE).read_text()
        assert f": run -c {cfg} --no-publish --no-progress" in hosted
        # ... the run's flow links point at the kept server, and its database holds the run
        assert f"{server.url.removesuffix('/api')}/runs/flow-run/" in run.stdout + run.stderr
        assert _flow_runs(home / "prefect.db") >= 1
        # the same files as the same command run in its own process (no host)
        env[run_host.OFF_ENV] = "off"
        alone = tmp_path / "work-alone"
        off = cli("run", "-c", str(cfg), "--workdir", str(alone), "--no-publish", "--no-progress")
        assert str(alone) not in (home / run_host.LOG_FILE).read_text()
        assert _flac_digests(run.stdout) == _flac_digests(off.stdout) != {}
    finally:
        cli("server", "stop")
    assert cli("server", "status", check=False).returncode == 1
    assert not local_server.alive(server.pid)
    assert run_host.ping(home) is None and not run_host.socket_path(home).exists()


def _flac_digests(summary: str) -> dict[str, str]:
    """sha256 of every FLAC under the work directory a run's summary names, by relative path."""
    import hashlib

    line = next(x for x in summary.splitlines() if x.startswith("work directory: "))
    work = Path(line.removeprefix("work directory: "))
    return {
        str(f.relative_to(work)): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted(work.rglob("*.flac"))
    }


def _servers_of(home: Path) -> list[int]:
    """Pids of every process started as a duetflow server of ``home`` (token in its env)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                raw = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            env = dict(e.decode("utf-8", "replace").partition("=")[::2] for e in raw if e)
            if local_server.TOKEN_ENV in env and env.get("PREFECT_HOME") == str(home.resolve()):
                found.append(int(entry))
    return found


@pytest.mark.prefect
@pytest.mark.slow
def test_two_concurrent_starts_give_one_server(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "PREFECT_HOME")}
    env["PREFECT_SERVER_UI_ENABLED"] = "false"
    argv = [DUETFLOW, "server", "start", "--home", str(home)]
    starts = [
        subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    try:
        outs = [p.communicate(timeout=400) for p in starts]
        assert [p.returncode for p in starts] == [0, 0], outs
        server = local_server.running(home)
        assert server is not None
        assert all(f"{server.url} (pid {server.pid})" in out for out, _ in outs), outs
        assert _servers_of(home) == [server.pid]  # one server, no orphan
    finally:
        stopped = subprocess.run(
            [DUETFLOW, "server", "stop", "--home", str(home)], env=env, timeout=120,
            capture_output=True, text=True,
        )  # fmt: skip
    assert stopped.stdout.strip().splitlines() == ["run host stopped", "stopped"], stopped.stderr
    assert _servers_of(home) == []


@pytest.mark.parametrize("pid", [0, -1, 1])
def test_stop_never_signals_a_group_or_init(bare_env: Path, pid: int) -> None:
    """pid 0 / -1 would signal this process's own group / every process; 1 is init."""
    fields = {"start_time": 1, "cmdline": ["x"], "token": "x", "home": str(bare_env.resolve())}
    _record(bare_env, "http://127.0.0.1:1/api", pid, **fields)
    with pytest.raises(ServerError, match=f"pid {pid} .*is never a server duetflow started"):
        local_server.stop(bare_env)


def test_a_planted_link_at_the_lock_or_record_is_never_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    home = tmp_path / "home"
    home.mkdir()
    (home / local_server.LOCK_FILE).symlink_to(victim)
    with pytest.raises(ServerError, match="lock file is a symbolic link"):
        local_server.stop(home)
    (home / local_server.LOCK_FILE).unlink()
    os.link(victim, home / local_server.LOCK_FILE)  # a hard link: the same file by another name
    with pytest.raises(ServerError, match="not a plain file of its own"):
        local_server.stop(home)
    (home / local_server.LOCK_FILE).unlink()
    tmp_record = (home / local_server.STATE_FILE).with_suffix(".tmp")
    tmp_record.symlink_to(victim)
    server = local_server.LocalServer(url="http://127.0.0.1:1/api", pid=2, start_time=1)
    local_server._write_record(home, server)
    assert victim.read_text() == "keep me"
    assert local_server.recorded(home) == server
