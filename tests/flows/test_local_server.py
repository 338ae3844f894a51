"""``duetflow server start|stop|status``: a Prefect server kept between runs, which
``duetflow run`` uses when it answers instead of starting the temporary API."""

from __future__ import annotations

import http.server
import json
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from flow_helpers import write_config

from duetflow.cli.run import PREFECT_HOME_ENV, prefect_env
from duetflow.flows import local_server

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


def _record(home: Path, url: str, pid: int) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / local_server.STATE_FILE).write_text(json.dumps({"url": url, "pid": pid}))


def test_a_recorded_server_that_answers_records_the_run(bare_env: Path, answering: str) -> None:
    _record(bare_env, answering, os.getpid())
    assert prefect_env() == "server"
    assert os.environ["PREFECT_API_URL"] == answering


def test_a_recorded_server_that_does_not_answer_is_ignored(bare_env: Path, answering: str) -> None:
    dead = answering.replace("/api", "/gone")  # answers 404: not a Prefect API
    _record(bare_env, dead, os.getpid())
    assert local_server.recorded(bare_env) is not None
    assert local_server.running(bare_env) is None
    assert prefect_env() == str(bare_env)  # the temporary API, in the persistent home
    assert "PREFECT_API_URL" not in os.environ


def test_stop_never_signals_a_process_that_is_not_the_server(bare_env: Path) -> None:
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        _record(bare_env, "http://127.0.0.1:1/api", other.pid)  # e.g. a pid reused after reboot
        assert local_server.stop(bare_env) is True
        assert other.poll() is None  # still running
        assert local_server.recorded(bare_env) is None
        assert local_server.stop(bare_env) is False
    finally:
        other.kill()
        other.wait()


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
        cfg = write_config(tmp_path / "run.yaml", flow_samples, scripts=False)
        run = cli("run", "-c", str(cfg), "--no-publish", "--no-progress")
        # the run's flow links point at the kept server, and its database holds the run
        assert f"{server.url.removesuffix('/api')}/runs/flow-run/" in run.stdout + run.stderr
        assert _flow_runs(home / "prefect.db") >= 1
    finally:
        cli("server", "stop")
    assert cli("server", "status", check=False).returncode == 1
    assert not local_server.alive(server.pid)
