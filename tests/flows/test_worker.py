"""`duetflow worker start` against `duetflow server start`, real processes end to end: the server
prints the line Prefect's commands need, a deployment run completes on the worker, SIGTERM
stops a worker, and both are stopped at the end."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from duetflow.flows import local_server
from duetflow.records import manifest
from flow_helpers import write_config

pytestmark = [pytest.mark.prefect, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[2]
RUN = "from duetflow.console import run; run()"
POOL = "duetflow-worker-test"


def _duetflow(env: dict[str, str], *args: str, timeout: float = 600) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", RUN, *args], env=env, cwd=PROJECT, capture_output=True,
        text=True, timeout=timeout, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, f"duetflow {args}: {proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


def _wait_for(pred, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def test_worker_start_runs_a_deployment_on_the_kept_server(
    tmp_path: Path, flow_samples: Path
) -> None:
    home = tmp_path / "prefect-home"
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "PREFECT_HOME")}
    src = os.pathsep.join([str(PROJECT / "src"), env.get("PYTHONPATH", "")])
    env.update(PREFECT_HOME=str(home), PREFECT_SERVER_ANALYTICS_ENABLED="false", PYTHONPATH=src)
    try:
        started = _duetflow(env, "server", "start", "--home", str(home))
        [export] = re.findall(r"^export PREFECT_API_URL=(http://127\.0\.0\.1:\d+/api)$", started,
                              re.M)  # fmt: skip
        status = _duetflow(env, "server", "status", "--home", str(home))
        assert f"UI: {export.removesuffix('/api')}" in status and export in status

        deployed = _duetflow(env, "deploy", "--project-dir", str(PROJECT), "--pool", POOL,
                             "--paused")  # fmt: skip
        assert f"duetflow worker start --pool {POOL}" in deployed
        assert f"export PREFECT_API_URL={export}" in deployed

        # the pasted export line is all Prefect's own commands need
        cfg = write_config(tmp_path / "studio.yaml", flow_samples, corpora=("studio",))
        prefect_env = {**env, "PREFECT_API_URL": export}
        run = subprocess.run(
            [sys.executable, "-m", "prefect", "deployment", "run",
             "nightly-studio-ingest/nightly-studio-ingest", "--param", f"config={cfg}"],
            env=prefect_env, cwd=PROJECT, capture_output=True, text=True, timeout=300,
            check=False,
        )  # fmt: skip
        assert run.returncode == 0, run.stdout + run.stderr
        flow_run_id = re.search(r"UUID: ([0-9a-f-]{36})", run.stdout)
        assert flow_run_id, run.stdout

        # the worker finds the server itself (no PREFECT_API_URL in its environment)
        out = _duetflow(env, "worker", "start", "--pool", POOL, "--run-once")
        assert f"against {export}" in out
        from prefect.client.orchestration import get_client
        from prefect.settings import PREFECT_API_URL, temporary_settings

        with temporary_settings({PREFECT_API_URL: export}), get_client(sync_client=True) as c:
            state = c.read_flow_run(flow_run_id.group(1)).state  # type: ignore[arg-type]
        assert state is not None and state.type.value == "COMPLETED", state
        rendered = tmp_path / "work" / "rendered" / "studio"
        assert list(manifest.iter_rows(rendered / manifest.DIALOGUES))

        # a long-running worker stops on SIGTERM, and takes Prefect's worker with it
        log = tmp_path / "worker.log"
        with log.open("wb") as sink:
            worker = subprocess.Popen(
                [sys.executable, "-c", RUN, "worker", "start", "--pool", POOL, "--grace-s", "5"],
                env=env, cwd=PROJECT, stdout=sink, stderr=subprocess.STDOUT,
            )  # fmt: skip
        try:
            _wait_for(lambda: b"started!" in log.read_bytes(), 180, "the worker to start")
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(timeout=60) == 0
            child = re.search(rb"stopping the worker \(pid (\d+)\)", log.read_bytes())
            assert child, log.read_text()
            assert not local_server.alive(int(child.group(1)))
        finally:
            if worker.poll() is None:
                worker.kill()
    finally:
        _duetflow(env, "server", "stop", "--home", str(home))
    gone = subprocess.run(
        [sys.executable, "-c", RUN, "server", "status", "--home", str(home)],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert gone.returncode == 1 and "no server answering" in gone.stdout
