"""prefect.yaml on a real server: deploy, trigger with sample data, a process worker runs it."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path
from uuid import UUID

import pytest

from duetflow.cli.deploy import POOL, deploy
from duetflow.deploy_steps import PROJECT_DIR_ENV
from duetflow.flows import process, weekly_release
from duetflow.records import manifest
from duetflow.release.validate import validate_release
from flow_helpers import write_config

pytestmark = [pytest.mark.prefect, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[2]
DEPLOYMENTS = ("nightly-studio-ingest", "weekly-release", "build-dataset")
SET_DIR = "prefect.deployments.steps.set_working_directory"


def _prefect(
    env: dict[str, str], *args: str, timeout: float = 300, ok: bool = True
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "prefect", *args],
        env=env, cwd=PROJECT, capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip
    if ok:
        assert proc.returncode == 0, f"prefect {args}: {proc.stdout}\n{proc.stderr}"
    return proc


def _deployments() -> dict[str, object]:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return {d.name: d for d in client.read_deployments() if d.name in DEPLOYMENTS}


def test_prefect_deploy_all_from_a_clone_needs_no_environment_variable(
    prefect_server: dict[str, str], tmp_path: Path
) -> None:
    env = {k: v for k, v in prefect_server.items() if k != PROJECT_DIR_ENV}
    _prefect(env, "work-pool", "create", POOL, "--type", "process")
    out = _prefect(env, "--no-prompt", "deploy", "--all")
    assert all(name in out.stdout + out.stderr for name in DEPLOYMENTS)
    found = _deployments()
    assert set(found) == set(DEPLOYMENTS)
    for d in found.values():
        # the pull step was resolved at deploy time to this checkout, not left as a template
        assert d.pull_steps == [{SET_DIR: {"directory": str(PROJECT)}}]  # type: ignore[attr-defined]
        assert d.work_pool_name == POOL  # type: ignore[attr-defined]
    nightly = found["nightly-studio-ingest"]
    assert [s.active for s in nightly.schedules] == [True]  # type: ignore[attr-defined]
    # a directory that is not a checkout fails the deploy, naming the variable
    bad = _prefect({**env, PROJECT_DIR_ENV: str(tmp_path)}, "--no-prompt", "deploy", "--all",
                   ok=False)  # fmt: skip
    assert bad.returncode != 0 and PROJECT_DIR_ENV in bad.stdout + bad.stderr


def test_deploy_on_a_named_pool_runs_on_a_worker_of_that_pool(
    tmp_path: Path, flow_samples: Path, prefect_server: dict[str, str]
) -> None:
    env = dict(prefect_server)
    pool = "duetflow-test-pool"
    cfg_path = write_config(tmp_path / "studio.yaml", flow_samples, corpora=("studio",))

    out = deploy(PROJECT, pool=pool, paused=True)
    for name in DEPLOYMENTS:
        assert name in out
    found = _deployments()
    assert {d.work_pool_name for d in found.values()} == {pool}  # type: ignore[attr-defined]
    schedules = [s for d in found.values() for s in d.schedules]  # type: ignore[attr-defined]
    assert schedules and not any(s.active for s in schedules)  # --paused

    run = _prefect(
        env, "deployment", "run", "nightly-studio-ingest/nightly-studio-ingest",
        "--param", f"config={cfg_path}",
    ).stdout  # fmt: skip
    match = re.search(r"UUID: ([0-9a-f-]{36})", run)
    assert match, run
    flow_run_id = UUID(match.group(1))

    # the run's INFO lines must reach the server (the fixture's server env says WARNING)
    worker_env = {**env, "PREFECT_LOGGING_LEVEL": "INFO"}
    _prefect(worker_env, "worker", "start", "--pool", pool, "--run-once", timeout=600)

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    with get_client(sync_client=True) as client:
        state = client.read_flow_run(flow_run_id).state
        only_this_run = LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id]))
        for _ in range(30):  # the server stores shipped logs asynchronously
            logs = client.read_logs(only_this_run)
            if any(lg.message.startswith("nightly-studio-ingest:") for lg in logs):
                break
            time.sleep(1)
    assert state is not None and state.type.value == "COMPLETED", state
    rendered = tmp_path / "work" / "rendered" / "studio"
    kept = list(manifest.iter_rows(rendered / manifest.DIALOGUES))
    assert kept and all((rendered / r["audio_path"]).is_file() for r in kept)
    # the nightly flow's own log line carries the counts
    own = [lg.message for lg in logs if lg.message.startswith("nightly-studio-ingest: studio ")]
    assert own and f"kept {len(kept)}," in own[0], [lg.message for lg in logs]
    assert re.search(r"found \d+, kept \d+, rejected \d+", own[0])

    # a stage flow on its own finds the finished ingest of the same files and config
    res = process(config=str(cfg_path), corpora=["studio"])
    assert res.steps and all(s.reused for s in res.steps) and res.output[0].kept == len(kept)

    # the weekly flow picks up what the nightly one rendered: synthesize, then publish
    release = weekly_release(config=str(cfg_path))
    validate_release(release.store, release.release_id)
    assert release.info["counts"]["dialogues"] >= len(kept)
    assert not list((tmp_path / "work").rglob("*.partial"))
