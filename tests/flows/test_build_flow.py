"""build_dataset on a real Prefect server: caching, resume, thresholds, Dask = threads."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from duetflow.config import load_config
from duetflow.flows import build_dataset
from duetflow.release.validate import validate_release
from flow_helpers import release_content, write_config

pytestmark = [pytest.mark.prefect, pytest.mark.slow]


def _audio_stamps(workdir: Path) -> dict[str, tuple[int, int]]:
    """(inode, mtime) of every audio file the steps wrote: unchanged means not re-rendered."""
    return {
        str(p): (p.stat().st_ino, p.stat().st_mtime_ns)
        for p in sorted((workdir / "cache").rglob("*.flac"))
    }


def _latest_artifacts() -> tuple[str, list[dict[str, object]]]:
    """The newest build summary (markdown) and counts table this server holds."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    keys = ["duetflow-build-summary", "duetflow-counts"]
    with get_client(sync_client=True) as client:
        found = client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=keys))
        )
    latest = {k: max((a for a in found if a.key == k), key=lambda a: a.created) for k in keys}
    table = latest["duetflow-counts"].data
    rows = json.loads(table) if isinstance(table, str) else table
    return str(latest["duetflow-build-summary"].data), rows


def test_build_rerun_does_no_audio_work_and_one_threshold_recomputes_one_stage(
    tmp_path: Path, flow_samples: Path, prefect_server: dict[str, str]
) -> None:
    cfg_path = write_config(tmp_path / "run.yaml", flow_samples)
    cfg = load_config(cfg_path)

    first = build_dataset(config=str(cfg_path))
    assert first.release_id and first.kept["dailytalk"] > 0 and first.kept["ph"] > 0
    assert first.reused == {"ingest": 0, "process": 0, "synth": 0, "report": 0}
    validate_release(first.store, first.release_id)
    # inputs = kept + rejected per corpus, stage by stage, in the counts the artifact shows
    assert first.rejected["dailytalk"] == sum(first.by_reason["dailytalk"].values())
    stamps = _audio_stamps(Path(cfg.workdir))
    assert stamps
    summary_md, counts = _latest_artifacts()
    assert first.release_id in summary_md and "| dailytalk |" in summary_md
    kept_rows = {r["corpus"]: r["count"] for r in counts if r["outcome"] == "kept"}
    assert kept_rows == dict(first.kept)
    rejected_rows = [r for r in counts if r["outcome"] == "rejected"]
    assert sum(r["count"] for r in rejected_rows) == sum(first.rejected.values())
    assert {r["stage"] for r in rejected_rows} >= {"ingest"}

    again = build_dataset(config=str(cfg_path))
    assert again.computed == {"ingest": 0, "process": 0, "synth": 0, "report": 0}
    assert again.reused == {k: v for k, v in first.computed.items()}
    assert again.release_id == first.release_id
    assert _audio_stamps(Path(cfg.workdir)) == stamps

    # a split ratio is read by publish (and recorded by the report): no audio is rendered or
    # synthesized again
    split = build_dataset(
        config=str(cfg_path),
        overrides={
            "release": {"ratios": {"HH": [0.5, 0.25, 0.25], "HM": [0.8, 0.1, 0.1], "PH": [0, 0, 1]}}
        },
    )
    assert split.computed == {"ingest": 0, "process": 0, "synth": 0, "report": 1}
    assert split.release_id != first.release_id

    # a render threshold: ingest is reused, every process shard is rendered again
    gaps = build_dataset(config=str(cfg_path), overrides={"render": {"gap_ms_max": 260.0}})
    assert gaps.computed["ingest"] == 0 and gaps.reused["ingest"] == 1
    assert gaps.computed["process"] == first.computed["process"] and gaps.reused["process"] == 0
    validate_release(gaps.store, gaps.release_id)


def test_dask_cluster_gives_the_same_release_content_as_threads(
    tmp_path: Path, flow_samples: Path, prefect_server: dict[str, str]
) -> None:
    assert os.environ.get("PREFECT_API_URL")
    runs = {}
    for kind in ("threads", "dask"):
        (tmp_path / kind).mkdir()
        cfg_path = write_config(
            tmp_path / kind / "run.yaml",
            flow_samples,
            scripts=False,
            runner={"kind": kind, "max_workers": 2, "dask_workers": 2, "shard_size": 2},
        )
        summary = build_dataset(config=str(cfg_path))
        assert summary.computed["process"] > 1  # several shards, spread over the workers
        runs[kind] = release_content(Path(summary.store), str(summary.release_id))
    assert runs["dask"] == runs["threads"]
    assert any(k.startswith("audio/") for k in runs["dask"])
