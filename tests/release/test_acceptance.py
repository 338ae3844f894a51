"""Acceptance: the sample pipeline's real rendered output, published locally and to S3."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from duetflow.config import RunConfig
from duetflow.pipeline.commands import process_workdir
from duetflow.pipeline.ingest import ingest
from duetflow.release.layout import manifest_key
from duetflow.release.publish import publish
from duetflow.release.pull import pull
from duetflow.release.validate import validate_release
from duetflow.storage import open_store


@pytest.fixture(scope="module")
def rendered(sample_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("pipeline")
    cfg = RunConfig()
    ingest("dailytalk", sample_root / "dailytalk", tmp / "intake", cfg)
    process_workdir(tmp / "intake", tmp / "rendered", cfg)
    return tmp / "rendered"


@pytest.mark.slow
def test_sample_pipeline_output_local_and_s3_pull_byte_identical(
    rendered: Path, tmp_path: Path, s3_uri: str, s3_cfg: RunConfig
) -> None:
    local = str(tmp_path / "store")
    a = publish([rendered], local, RunConfig())
    b = publish([rendered], s3_uri, s3_cfg)
    assert a.release_id == b.release_id and a.counts["dialogues"] > 0
    assert validate_release(local) == []
    assert validate_release(s3_uri, config=s3_cfg) == []
    split = next(s for s in ("train", "val", "test") if a.counts[s])
    pa_ = pull(local, "latest", split, tmp_path / "from-local")
    pb = pull(s3_uri, "latest", split, tmp_path / "from-s3", s3_cfg)
    files = sorted(p.relative_to(pa_.dest) for p in pa_.dest.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(pb.dest) for p in pb.dest.rglob("*") if p.is_file())
    for rel in files:
        assert (pa_.dest / rel).read_bytes() == (pb.dest / rel).read_bytes()
    st = open_store(local)
    assert pa_.manifest.read_bytes() == st.get_bytes(manifest_key(a.release_id, split))
    src = {
        r["sha256"]: r["audio_path"]
        for r in pq.read_table(rendered / "dialogues.parquet").to_pylist()
    }
    for row in pq.read_table(pa_.manifest).to_pylist():
        assert (pa_.dest / row["audio_path"]).read_bytes() == (
            rendered / src[row["sha256"]]
        ).read_bytes()
