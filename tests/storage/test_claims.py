"""Exclusive creation (release claims) and content-addressed keys, on both stores."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from duetflow.errors import StorageError
from duetflow.storage import LocalStore, Store, open_store
from duetflow.storage.store import checked_audio_key

SHA = "ab" + "0" * 62


def _contenders(store: Store, n: int = 8) -> list[bool]:
    barrier = threading.Barrier(n)
    wins: list[bool] = [False] * n

    def run(i: int) -> None:
        barrier.wait()
        wins[i] = store.create_exclusive("releases/x/CLAIM.json", f"owner {i}".encode())

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return wins


def test_local_exclusive_create_has_exactly_one_winner_and_whole_content(tmp_path: Path) -> None:
    for attempt in range(5):
        store = LocalStore(tmp_path / f"s{attempt}")
        wins = _contenders(store)
        assert wins.count(True) == 1
        assert store.get_bytes("releases/x/CLAIM.json") == f"owner {wins.index(True)}".encode()
        assert list(store.list()) == ["releases/x/CLAIM.json"]  # no temp files left


def test_s3_exclusive_create_refuses_the_second_writer(s3_uri: str, s3_cfg: object) -> None:
    store = open_store(s3_uri, s3_cfg.release)  # type: ignore[attr-defined]
    assert store.create_exclusive("releases/x/CLAIM.json", b"first")
    assert not store.create_exclusive("releases/x/CLAIM.json", b"second")
    assert store.get_bytes("releases/x/CLAIM.json") == b"first"


@pytest.mark.parametrize(
    "key",
    [
        "audio/../../../etc/passwd",
        f"/abs/{SHA}.flac",
        f"audio/cd/{SHA}.flac",  # wrong fan-out folder
        f"audio/ab/{'1' * 64}.flac",  # another object's address
        f"audio/ab/{SHA}.flac/../../x",
        None,
    ],
)
def test_only_the_exact_content_address_is_accepted(key: object) -> None:
    with pytest.raises(StorageError, match="content address"):
        checked_audio_key(key, SHA)


def test_the_content_address_is_accepted() -> None:
    assert checked_audio_key(f"audio/ab/{SHA}.flac", SHA) == f"audio/ab/{SHA}.flac"
