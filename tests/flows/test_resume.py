"""Kill build_dataset midway with SIGTERM, run it again: it resumes and the release is the same."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from duetflow.config import load_config
from duetflow.flows import build_dataset
from flow_helpers import tree_digest, write_config

pytestmark = [pytest.mark.prefect, pytest.mark.slow]

DUETFLOW = str(Path(sys.executable).with_name("duetflow"))


def _finished(work: Path) -> int:
    return len(list((work / "cache" / "process").glob("*/result.json")))


def test_sigterm_midway_then_rerun_reuses_shards_and_publishes_the_same_bytes(
    tmp_path: Path, flow_samples: Path, prefect_server: dict[str, str]
) -> None:
    # one dialogue per shard, one worker: the process stage is many small steps in a row
    cfg_path = write_config(
        tmp_path / "run.yaml", flow_samples, scripts=False,
        runner={"max_workers": 1, "shard_size": 1},
    )  # fmt: skip
    cfg = load_config(cfg_path)
    work, store = Path(cfg.workdir), Path(cfg.release.store)

    reference_run = build_dataset(config=str(cfg_path))
    reference = tree_digest(store)
    shards = reference_run.computed["process"]
    assert shards >= 4 and any(k.endswith("RELEASE.json") for k in reference)
    shutil.rmtree(work)
    shutil.rmtree(store)

    proc = subprocess.Popen(
        [DUETFLOW, "run", "-c", str(cfg_path), "--no-progress"],
        env=prefect_server,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 300
    while _finished(work) < 1:
        assert proc.poll() is None, "the run ended before any shard finished"
        assert time.monotonic() < deadline, "no shard finished in time"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        rc = proc.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        rc = proc.wait(10)
    assert rc != 0
    done_before = _finished(work)
    assert 1 <= done_before < shards, "the kill did not land midway"
    assert not list(store.rglob("RELEASE.json")) if store.exists() else True

    resumed = build_dataset(config=str(cfg_path))
    assert resumed.reused["process"] == done_before
    assert resumed.computed["process"] == shards - done_before
    assert resumed.reused["ingest"] == 1
    assert resumed.release_id == reference_run.release_id
    assert tree_digest(store) == reference
