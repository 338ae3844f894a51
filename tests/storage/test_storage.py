"""Stores: the same behaviour for a local directory and S3 (moto over HTTP)."""

from __future__ import annotations

import os
from pathlib import Path

import boto3
import pytest

from duetflow.config import ReleaseConfig
from duetflow.errors import StorageError
from duetflow.hashing import sha256_bytes
from duetflow.storage import LocalStore, S3Store, Store, audio_key, open_store
from s3_faults import FaultHook, attach


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "local":
        return open_store(tmp_path / "store")
    endpoint = request.getfixturevalue("aws_env")
    uri = request.getfixturevalue("s3_uri")
    return open_store(uri, ReleaseConfig(endpoint_url=endpoint))


def test_open_store_picks_implementation(tmp_path: Path, aws_env: str) -> None:
    assert isinstance(open_store(tmp_path), LocalStore)
    assert isinstance(open_store(tmp_path.as_uri()), LocalStore)
    assert open_store(tmp_path.as_uri()).root == tmp_path.resolve()
    s3 = open_store("s3://bucket/a/b", ReleaseConfig(endpoint_url=aws_env))
    assert isinstance(s3, S3Store)
    assert (s3.bucket, s3.prefix) == ("bucket", "a/b/")
    with pytest.raises(StorageError, match="unsupported store URI"):
        open_store("gs://bucket")


def test_put_get_roundtrip_and_skip(store: Store, tmp_path: Path) -> None:
    src = tmp_path / "x.bin"
    src.write_bytes(b"hello duet" * 100)
    sha = sha256_bytes(src.read_bytes())
    key = audio_key(sha)
    assert key == f"audio/{sha[:2]}/{sha}.flac"
    assert store.put_file(key, src, sha) is True
    assert store.put_file(key, src, sha) is False  # same checksum: skipped
    info = store.head(key)
    assert info is not None and info.size == 1000 and info.sha256 == sha
    out = store.get_file(key, tmp_path / "out" / "x.bin", sha)
    assert out.read_bytes() == src.read_bytes()
    assert store.put_bytes("releases/LATEST", b"r1\n") is True
    assert store.put_bytes("releases/LATEST", b"r1\n") is False
    assert store.get_bytes("releases/LATEST") == b"r1\n"
    assert list(store.list("releases/")) == ["releases/LATEST"]
    assert sorted(store.list()) == sorted([key, "releases/LATEST"])
    assert store.head("nope") is None and not store.exists("nope")
    store.delete("releases/LATEST")
    assert not store.exists("releases/LATEST")


def test_wrong_checksum_fails_naming_key(store: Store, tmp_path: Path) -> None:
    src = tmp_path / "x.bin"
    src.write_bytes(b"abc")
    store.put_file("a/b.bin", src)
    with pytest.raises(StorageError, match=r"checksum mismatch for a/b\.bin"):
        store.get_file("a/b.bin", tmp_path / "o.bin", "0" * 64)
    assert not (tmp_path / "o.bin").exists()  # nothing half-written left behind
    with pytest.raises(StorageError, match=r"a/b\.bin"):
        store.get_bytes("a/b.bin", "0" * 64)
    with pytest.raises(StorageError, match="not found"):
        store.get_bytes("missing.bin")


@pytest.mark.parametrize("key", ["../escape", "/abs", "a/../../b", "a//b", ""])
def test_keys_cannot_escape_the_root(tmp_path: Path, key: str) -> None:
    with pytest.raises(StorageError, match="invalid object key"):
        LocalStore(tmp_path).put_bytes(key, b"x")


def test_local_store_ignores_interrupted_writes(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    store.put_bytes("a/x", b"1")
    (tmp_path / "a" / ".x.1234.tmp").write_bytes(b"partial")
    assert list(store.list()) == ["a/x"]


def test_s3_multipart_upload_with_checksum_metadata(
    aws_env: str, s3_uri: str, tmp_path: Path
) -> None:
    store = open_store(s3_uri, ReleaseConfig(endpoint_url=aws_env, multipart_threshold_mb=1))
    assert isinstance(store, S3Store)
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(6 * 1024 * 1024 + 123))
    assert store.put_file("audio/big.bin", big) is True
    raw = boto3.client("s3", endpoint_url=aws_env).head_object(
        Bucket=store.bucket, Key=store.prefix + "audio/big.bin"
    )
    assert raw["ETag"].strip('"').endswith("-2")  # two parts: 5 MiB + the rest
    assert raw["Metadata"]["sha256"] == sha256_bytes(big.read_bytes())
    assert store.put_file("audio/big.bin", big) is False
    got = store.get_file("audio/big.bin", tmp_path / "got.bin")
    assert got.read_bytes() == big.read_bytes()


def test_s3_retries_throttling_and_dropped_connections(
    s3_uri: str, aws_env: str, fast_backoff: None
) -> None:
    store = open_store(s3_uri, ReleaseConfig(endpoint_url=aws_env, max_attempts=4))
    assert isinstance(store, S3Store)
    store.backoff_s = 0.01
    hook = attach(store, FaultHook(every=2, mode="503"))
    for i in range(5):
        store.put_bytes(f"k/{i}", f"v{i}".encode())
    drop = attach(store, FaultHook(every=3, mode="drop"))
    assert [store.get_bytes(f"k/{i}") for i in range(5)] == [f"v{i}".encode() for i in range(5)]
    assert hook.injected >= 5 and drop.injected >= 2


def test_s3_gives_up_after_max_attempts_with_storage_error(
    s3_uri: str, aws_env: str, fast_backoff: None
) -> None:
    store = open_store(s3_uri, ReleaseConfig(endpoint_url=aws_env, max_attempts=2))
    assert isinstance(store, S3Store)
    store.backoff_s = 0.01
    hook = attach(store, FaultHook(every=1, mode="503", operations=("PutObject",)))
    with pytest.raises(StorageError, match="put k failed"):
        store.put_bytes("k", b"v")
    # botocore's attempts inside each of the store's own attempts
    assert hook.injected == 2 * 2


@pytest.mark.parametrize("mode", ["503", "drop"])
def test_s3_outer_retry_recovers_when_botocore_gives_up(
    s3_uri: str, aws_env: str, fast_backoff: None, mode: str
) -> None:
    store = open_store(s3_uri, ReleaseConfig(endpoint_url=aws_env, max_attempts=3))
    assert isinstance(store, S3Store)
    store.backoff_s = 0.01
    # more consecutive failures than botocore's own attempts: only the outer retry saves it
    hook = attach(store, FaultHook(mode=mode, operations=("PutObject",), fail_times=4))
    assert store.put_bytes("k", b"v") is True
    assert hook.injected == 4
    assert store.get_bytes("k") == b"v"
