"""A store that is not there is named as such: publishing to an S3 bucket that does not exist
fails before any work, pulling from one says so, and `pull` never picks a store relative to
the current directory on its own."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from duetflow.cli import main
from duetflow.config import RunConfig
from duetflow.errors import StorageError
from duetflow.release import publish as publish_module
from duetflow.release.publish import publish
from duetflow.release.pull import pull


def test_publish_to_a_missing_bucket_fails_first_naming_it(
    s3_cfg: RunConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bucket = f"no-such-{uuid.uuid4().hex[:8]}"
    validated: list[object] = []
    monkeypatch.setattr(publish_module, "validate_workdirs", lambda *a: validated.append(a))
    with pytest.raises(StorageError) as e:
        publish([tmp_path / "rendered"], f"s3://{bucket}/datasets", s3_cfg)
    assert f"bucket {bucket!r} does not exist" in str(e.value)
    assert validated == []  # nothing was validated, staged or sent


def test_pull_from_a_missing_bucket_says_so(s3_cfg: RunConfig, tmp_path: Path) -> None:
    bucket = f"no-such-{uuid.uuid4().hex[:8]}"
    with pytest.raises(StorageError) as e:
        pull(f"s3://{bucket}/datasets", "latest", "train", tmp_path / "d", s3_cfg)
    assert f"bucket {bucket!r} does not exist" in str(e.value)
    assert "no release published yet" not in str(e.value)


def test_an_existing_empty_bucket_still_says_no_release(s3_uri: str, s3_cfg: RunConfig,
                                                        tmp_path: Path) -> None:  # fmt: skip
    with pytest.raises(StorageError) as e:
        pull(s3_uri, "latest", "train", tmp_path / "d", s3_cfg)
    assert "no release published yet" in str(e.value)


def test_run_names_a_missing_bucket_before_starting(
    aws_env: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bucket = f"no-such-{uuid.uuid4().hex[:8]}"
    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"release: {{store: 's3://{bucket}/x', endpoint_url: '{aws_env}'}}\n")
    res = CliRunner().invoke(main, ["run", "-c", str(cfg)])
    assert res.exit_code == 2 and f"bucket {bucket!r} does not exist" in res.output
    assert not (tmp_path / "work").exists()


def test_pull_without_a_store_asks_for_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DUETFLOW__RELEASE__STORE", raising=False)
    res = CliRunner().invoke(main, ["pull", "--dest", str(tmp_path / "d")])
    assert res.exit_code == 2 and "which store? pass --store" in res.output
    (tmp_path / "duetflow-demo" / "store").mkdir(parents=True)
    res = CliRunner().invoke(main, ["pull", "--dest", str(tmp_path / "d")])
    assert "(e.g. --store ./duetflow-demo/store)" in res.output
    # a config that names the store is enough
    cfg = tmp_path / "c.yaml"
    cfg.write_text("release: {store: elsewhere}\n")
    res = CliRunner().invoke(main, ["pull", "-c", str(cfg), "--dest", str(tmp_path / "d")])
    assert "which store" not in res.output and "no such store" in str(res.exception)
