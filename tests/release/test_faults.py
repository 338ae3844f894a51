"""Transient S3 faults mid-publish are retried; a killed publish leaves no visible release."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from duetflow.config import RunConfig
from duetflow.release.layout import LATEST_KEY, list_releases
from duetflow.release.publish import publish
from duetflow.release.pull import pull
from duetflow.release.validate import validate_release
from duetflow.storage import S3Store, open_store
from release_fixtures import make_workdir, specs
from s3_faults import FaultHook, FlakyProxy, attach, s3_config


@pytest.fixture
def wd(tmp_path: Path) -> Path:
    return make_workdir(tmp_path / "wd", specs(12, per_source=1))


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_throttling_and_dropped_connections_mid_publish_are_retried(
    wd: Path, tmp_path: Path, s3_uri: str, s3_cfg: RunConfig, fast_backoff: None
) -> None:
    store = open_store(s3_uri, s3_cfg.release)
    assert isinstance(store, S3Store)
    store.backoff_s = 0.01
    slow = attach(store, FaultHook(every=4, mode="503"))
    drop = attach(store, FaultHook(every=7, mode="drop"))
    info = publish([wd], s3_uri, s3_cfg, store=store)
    assert slow.injected >= 5 and drop.injected >= 3
    assert validate_release(s3_uri, config=s3_cfg) == []
    local = publish([wd], str(tmp_path / "local"), RunConfig())
    assert local.release_id == info.release_id
    a = pull(s3_uri, "latest", "train", tmp_path / "a", s3_cfg)
    b = pull(str(tmp_path / "local"), "latest", "train", tmp_path / "b")
    assert _files(a.dest) == _files(b.dest)


def test_connections_dropped_by_the_network_are_retried(
    wd: Path, tmp_path: Path, s3_uri: str, s3_cfg: RunConfig, fast_backoff: None,
    flaky_proxy: Callable[[int], FlakyProxy],
) -> None:  # fmt: skip
    proxy = flaky_proxy(3)  # the first and every third TCP connection die mid-request
    cfg = s3_config(proxy.endpoint, max_attempts=6)
    info = publish([wd], s3_uri, cfg, workers=6)
    assert proxy.dropped >= 1
    assert validate_release(s3_uri, config=s3_cfg) == []  # checked around the proxy
    res = pull(s3_uri, info.release_id, "train", tmp_path / "p", cfg)
    assert res.dialogues == info.counts["train"]


def test_killed_publish_is_invisible_and_resumes_uploading_only_missing_objects(
    wd: Path, s3_uri: str, s3_cfg: RunConfig
) -> None:
    store = open_store(s3_uri, s3_cfg.release)
    attach(store, FaultHook(kill_after=5))
    with pytest.raises(RuntimeError, match="killed"):
        publish([wd], s3_uri, s3_cfg, store=store, workers=2)
    fresh = open_store(s3_uri, s3_cfg.release)
    present = list(fresh.list())
    assert 5 <= len(present) < 12  # some audio went up ...
    assert list_releases(fresh) == [] and not fresh.exists(LATEST_KEY)  # ... but no release
    assert validate_release(s3_uri, config=s3_cfg)[0].key == "releases/LATEST"
    info = publish([wd], s3_uri, s3_cfg)
    assert info.skipped_objects == len(present)  # only the missing objects were sent
    assert info.uploaded_objects > 0
    assert list_releases(fresh) == [info.release_id]
    assert validate_release(s3_uri, config=s3_cfg) == []
