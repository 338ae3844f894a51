"""A release read from S3 (moto's server over real HTTP): same report as from the local copy."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from duetflow.config import build_config
from duetflow.errors import InputError
from duetflow.report import build_report
from duetflow.storage import open_store
from moto_s3 import moto_server, use_fake_aws


@pytest.fixture
def s3_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    use_fake_aws(monkeypatch)
    with moto_server() as endpoint:
        yield endpoint


def test_report_of_a_release_in_s3(release_dir: Path, s3_endpoint: str, tmp_path: Path) -> None:
    bucket = f"rep-{uuid.uuid4().hex[:10]}"
    boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1").create_bucket(
        Bucket=bucket
    )
    cfg = build_config({"release": {"endpoint_url": s3_endpoint, "max_attempts": 2}}, environ={})
    uri = f"s3://{bucket}/datasets"
    store = open_store(uri, cfg.release)
    local_root = release_dir.parent.parent
    for p in sorted(local_root.rglob("*")):
        if p.is_file():
            store.put_file(p.relative_to(local_root).as_posix(), p)

    local = build_report(release_dir, tmp_path / "local", cfg, audio_sample=3)
    remote = build_report(
        f"{uri}/releases/{release_dir.name}", tmp_path / "s3", cfg, audio_sample=3
    )
    latest = build_report(uri, tmp_path / "latest", cfg, audio_sample=0)
    assert remote.data.counts == local.data.counts == latest.data.counts
    assert remote.data.rejections == local.data.rejections
    assert remote.data.audio_sample == local.data.audio_sample and not remote.data.audio_errors
    assert remote.data.distributions["gap_ms_audio"] == local.data.distributions["gap_ms_audio"]
    assert [s.label for s in remote.data.source_stats] == ["dailytalk"]
    assert remote.data.provenance.release_id == release_dir.name
    assert "| train |" in remote.markdown.read_text()

    # a release without RELEASE.json does not exist for readers
    store.delete(f"releases/{release_dir.name}/RELEASE.json")
    with pytest.raises(InputError, match=r"RELEASE\.json"):
        build_report(f"{uri}/releases/{release_dir.name}", tmp_path / "gone", cfg)
