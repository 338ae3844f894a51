"""prefect.yaml on a real server: deploy, trigger with sample data, a process worker runs it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from uuid import UUID

import pytest
from flow_helpers import write_config

from duetflow import manifest
from duetflow.cli.deploy import POOL, deploy
from duetflow.flows import process, weekly_release
from duetflow.release.validate import validate_release

pytestmark = [pytest.mark.prefect, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[2]


def _prefect(env: dict[str, str], *args: str, timeout: float = 300) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "prefect", *args],
        env=env, cwd=PROJECT, capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, f"prefect {args}: {proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


def test_nightly_studio_ingest_deployment_runs_on_a_process_worker(
    tmp_path: Path, flow_samples: Path, prefect_server: dict[str, str]
) -> None:
    env = dict(prefect_server)
    cfg_path = write_config(tmp_path / "studio.yaml", flow_samples, corpora=("studio",))

    out = deploy(PROJECT)
    for name in ("nightly-studio-ingest", "weekly-release", "build-dataset"):
        assert name in out
    listing = _prefect(env, "deployment", "ls")
    assert "nightly-studio-ingest" in listing and "weekly-release" in listing

    run = _prefect(
        env, "deployment", "run", "nightly-studio-ingest/nightly-studio-ingest",
        "--param", f"config={cfg_path}",
    )  # fmt: skip
    match = re.search(r"UUID: ([0-9a-f-]{36})", run)
    assert match, run
    flow_run_id = UUID(match.group(1))

    _prefect(env, "worker", "start", "--pool", POOL, "--run-once", timeout=600)

    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        state = client.read_flow_run(flow_run_id).state
    assert state is not None and state.type.value == "COMPLETED", state
    rendered = tmp_path / "work" / "rendered" / "studio"
    kept = list(manifest.iter_rows(rendered / manifest.DIALOGUES))
    assert kept and all((rendered / r["audio_path"]).is_file() for r in kept)

    # a stage flow on its own finds the finished ingest of the same files and config
    shards, merged = process(config=str(cfg_path), corpora=["studio"])
    assert shards and all(s.reused for s in shards) and merged[0].kept == len(kept)

    # the weekly flow picks up what the nightly one rendered: synthesize, then publish
    release = weekly_release(config=str(cfg_path))
    validate_release(release.store, release.release_id)
    assert release.info["counts"]["dialogues"] >= len(kept)
