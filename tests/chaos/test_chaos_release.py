"""Hostile stores, racing publishers and killed processes (issue 15, items 4, 5, 9).

A store is not trusted by its readers: a manifest can be rewritten by whoever can write the
bucket. Two publishers can race on one release id. A publish can be SIGKILLed at any point.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from chaos_helpers import Cli, duetflow_exe

from duetflow.errors import StorageError
from duetflow.hashing import sha256_bytes
from duetflow.release.layout import manifest_key, release_json_key
from duetflow.release.publish import publish
from duetflow.release.validate import validate_release
from duetflow.storage import LocalStore, Store, open_store
from release_fixtures import make_workdir, specs

pytestmark = pytest.mark.timeout(300)


def _workdir(tmp: Path, name: str, n: int = 6) -> Path:
    return make_workdir(tmp / name, specs(n, prefix=name, per_source=1))


def _empty_report(tmp: Path) -> Path:
    (tmp / "no-report").mkdir(exist_ok=True)
    return tmp / "no-report"


# --- item 4: a tampered release cannot make readers touch other files ----------------------------


def _rewrite_split(store: Store, rid: str, split: str, mutate: Any, extra: list[dict]) -> None:
    """What someone with write access to the bucket can do: rewrite a manifest and the record."""
    key = manifest_key(rid, split)
    table = pq.read_table(io.BytesIO(store.get_bytes(key)))
    rows = table.to_pylist()
    mutate(rows[0])
    buf = io.BytesIO()
    pq.write_table(type(table).from_pylist(rows, schema=table.schema), buf)
    data = buf.getvalue()
    store.put_bytes(key, data)
    doc = json.loads(store.get_bytes(release_json_key(rid)))
    for o in doc["objects"]:
        if o["key"] == key:
            o["sha256"], o["size"] = sha256_bytes(data), len(data)
    doc["objects"].extend(extra)
    store.put_bytes(release_json_key(rid), json.dumps(doc).encode())


def test_tampered_audio_path_never_exfiltrates_a_local_file(cli: Cli, tmp_path: Path) -> None:
    wd = _workdir(tmp_path, "hh")
    store_dir = tmp_path / "store"
    res = cli("publish", "--workdir", wd, "--store", store_dir, "--release", "v1",
              "--report", _empty_report(tmp_path))  # fmt: skip
    assert res.rc == 0, res.text
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"TOP-SECRET-BYTES " * 10)
    store = open_store(store_dir)

    def point_at_secret(row: dict[str, Any]) -> None:
        row["audio_path"] = "../secret.txt"  # relative to the pulled folder: the secret

    _rewrite_split(store, "v1", "train", point_at_secret, [])
    dest = tmp_path / "dest"
    pull = ("pull", "--store", store_dir, "--release", "v1", "--split", "train", "--dest", dest)
    res = cli(*pull, "--export", "hf")
    assert res.rc == 0, res.text
    audio = [p.read_bytes() for p in (dest / "audio").rglob("*.flac")]
    hf = pq.read_table(dest / "hf" / "data").column("audio").to_pylist()
    assert all(b"TOP-SECRET" not in a["bytes"] for a in hf)
    assert sorted(a["bytes"] for a in hf) == sorted(audio)  # the verified audio, nothing else
    res = cli(*pull, "--export", "lhotse")
    assert res.rc == 0, res.text
    for p in (dest / "lhotse").rglob("*recordings*.gz"):
        assert "secret" not in gzip.decompress(p.read_bytes()).decode()


@pytest.mark.parametrize("where", ["local", "s3"])
def test_tampered_audio_key_is_refused_before_anything_is_written(
    cli: Cli, tmp_path: Path, where: str, request: pytest.FixtureRequest
) -> None:
    wd = _workdir(tmp_path, "hh")
    if where == "s3":
        _endpoint, bucket = request.getfixturevalue("s3_bucket")
        uri = f"s3://{bucket}/rel"
    else:
        uri = str(tmp_path / "store")
    res = cli("publish", "--workdir", wd, "--store", uri, "--release", "v1",
              "--report", _empty_report(tmp_path))  # fmt: skip
    assert res.rc == 0, res.text
    store = open_store(uri)
    evil = "audio/../../../escaped/evil.flac"
    sha: dict[str, str] = {}

    def escape(row: dict[str, Any]) -> None:
        row["audio_key"] = evil
        sha["v"] = row["sha256"]

    _rewrite_split(store, "v1", "train", escape, [])
    doc = json.loads(store.get_bytes(release_json_key("v1")))
    doc["objects"].append({"key": evil, "sha256": sha["v"], "size": 10})
    store.put_bytes(release_json_key("v1"), json.dumps(doc).encode())
    dest = tmp_path / "pulled" / "dest"
    res = cli("pull", "--store", uri, "--release", "v1", "--split", "train", "--dest", dest)
    assert not (tmp_path / "escaped").exists()  # nothing created outside --dest
    assert not list(dest.rglob("*.flac"))  # refused before any download
    assert res.rc == 2, res.text
    assert "Traceback" not in res.text and "content address" in res.err


# --- item 5: two publishers, one release id ------------------------------------------------


class _Lockstep(Store):
    """A store proxy that holds every publisher at its first upload until all arrive."""

    def __init__(self, inner: Store, barrier: threading.Barrier) -> None:
        self.inner, self.barrier, self.uri = inner, barrier, inner.uri
        self.waited = False

    def _sync(self) -> None:
        if not self.waited:
            self.waited = True
            # broken: the other publisher was refused before uploading anything
            with contextlib.suppress(threading.BrokenBarrierError):
                self.barrier.wait(timeout=5)

    def put_file(self, key: str, path: str | Path, sha256: str | None = None) -> bool:
        self._sync()
        return self.inner.put_file(key, path, sha256)

    def put_bytes(self, key: str, data: bytes, sha256: str | None = None) -> bool:
        self._sync()
        return self.inner.put_bytes(key, data, sha256)

    #: Real S3 (and the local store's link()) decide a conditional write atomically; moto's
    #: server checks If-None-Match and then writes, so two requests arriving in the same instant
    #: can both pass. The proxies therefore hand their claims to the server one at a time, which
    #: is the server behaviour the claim relies on; everything else still races.
    _claims = threading.Lock()

    def create_exclusive(self, key: str, data: bytes) -> bool:
        with self._claims:
            return self.inner.create_exclusive(key, data)

    def get_file(self, key: str, dest: str | Path, sha256: str | None = None) -> Path:
        return self.inner.get_file(key, dest, sha256)

    def get_bytes(self, key: str, sha256: str | None = None) -> bytes:
        return self.inner.get_bytes(key, sha256)

    def head(self, key: str) -> Any:
        return self.inner.head(key)

    def list(self, prefix: str = "") -> Any:
        return self.inner.list(prefix)

    def delete(self, key: str) -> None:
        self.inner.delete(key)

    def content_sha256(self, key: str) -> str:
        return self.inner.content_sha256(key)


def _race(uri: str, wds: list[Path], report: Path) -> list[object]:
    barrier = threading.Barrier(len(wds))
    results: list[object] = [None] * len(wds)

    def run(i: int) -> None:
        st = _Lockstep(open_store(uri), barrier)
        try:
            results[i] = publish([wds[i]], uri, None, "same", report, store=st, workers=2)
        except StorageError as e:
            results[i] = e

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(wds))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


@pytest.mark.parametrize("where", ["local", "s3"])
def test_racing_publishers_of_different_content_one_wins_whole(
    tmp_path: Path, where: str, request: pytest.FixtureRequest
) -> None:
    wds = [_workdir(tmp_path, "alpha"), _workdir(tmp_path, "beta")]
    if where == "s3":
        _endpoint, bucket = request.getfixturevalue("s3_bucket")
        uri = f"s3://{bucket}/rel"
    else:
        uri = str(tmp_path / "store")
    results = _race(uri, wds, _empty_report(tmp_path))
    errors = [r for r in results if isinstance(r, StorageError)]
    wins = [i for i, r in enumerate(results) if not isinstance(r, BaseException)]
    assert len(wins) == 1 and len(errors) == 1, results
    assert "taken by another publish" in str(errors[0])
    assert validate_release(f"{uri.rstrip('/')}/releases/same") == []
    winner = "alpha" if wins[0] == 0 else "beta"
    st = open_store(uri)
    ids = pq.read_table(io.BytesIO(st.get_bytes(manifest_key("same", "dialogues")))).column(
        "dialogue_id"
    )
    assert {i.split("__")[0] for i in ids.to_pylist()} == {winner}


def test_racing_publishers_of_the_same_content_both_succeed(tmp_path: Path) -> None:
    wd = _workdir(tmp_path, "alpha")
    uri = str(tmp_path / "store")
    results = _race(uri, [wd, wd], _empty_report(tmp_path))
    assert all(not isinstance(r, BaseException) for r in results), results
    assert validate_release(f"{uri}/releases/same") == []


def test_racing_publish_commands(cli: Cli, tmp_path: Path) -> None:
    """Two real `duetflow publish` processes on one id: exactly one says it succeeded."""
    wds = [_workdir(tmp_path, "alpha"), _workdir(tmp_path, "beta")]
    report = _empty_report(tmp_path)
    for attempt in range(2):
        store = tmp_path / f"store{attempt}"
        args = ["publish", "--store", str(store), "--release", "same", "--report", str(report)]
        procs = [
            subprocess.Popen(
                [duetflow_exe(), *args, "--workdir", str(wd)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for wd in wds
        ]
        outs = [p.communicate(timeout=240) for p in procs]
        rcs = [p.returncode for p in procs]
        assert sorted(rcs) == [0, 2], outs
        loser = outs[rcs.index(2)][1]
        # refused at the claim, or (when the winner already finished) at its RELEASE.json
        assert "different content" in loser and "Traceback" not in loser
        res = cli("validate", f"{store}/releases/same")
        assert res.rc == 0, res.text


# --- item 9: what a SIGKILLed publish leaves behind -----------------------------------------

_DIE_MID_UPLOAD = textwrap.dedent(
    """
    import os, shutil, signal, sys
    store = sys.argv[1]
    real = shutil.copyfile
    def copy_then_die(src, dst, *a, **k):
        real(src, dst, *a, **k)
        if str(dst).startswith(store) and str(dst).endswith(".tmp"):
            os.kill(os.getpid(), signal.SIGKILL)  # no finally, no atexit: a real kill
        return dst
    shutil.copyfile = copy_then_die
    sys.argv = ["duetflow", "publish", "--workdir", sys.argv[2], "--store", store,
                "--release", "v1", "--report", sys.argv[3]]
    from duetflow.cli import run
    run()
    """
)


def test_killed_publish_leftovers_are_cleaned_by_the_next_run(cli: Cli, tmp_path: Path) -> None:
    wd = _workdir(tmp_path, "hh")
    store = tmp_path / "store"
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    report = _empty_report(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-c", _DIE_MID_UPLOAD, str(store), str(wd), str(report)],
        env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    left = [p for p in store.rglob(".*.tmp")]
    staged = [p for p in tmp.iterdir() if p.name.startswith("duetflow-publish")]
    assert left and staged  # the kill really left both behind
    res = cli("releases", "list", "--store", store)
    assert "v1" not in res.out  # and no visible release
    again = subprocess.run(
        [duetflow_exe(), "publish", "--workdir", str(wd), "--store", str(store), "--release",
         "v1", "--report", str(report)],
        env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert not list(store.rglob(".*.tmp"))
    assert not [p for p in tmp.iterdir() if p.name.startswith("duetflow-publish")]
    assert validate_release(str(store)) == []


def test_a_live_writers_temporaries_are_left_alone(tmp_path: Path) -> None:
    from duetflow.leftovers import remove_stale_temp_files, temp_file

    store = LocalStore(tmp_path / "store")
    mine = temp_file(store.root / "audio" / "x.flac")  # this process is alive
    mine.parent.mkdir(parents=True)
    mine.write_bytes(b"in flight")
    assert remove_stale_temp_files(store.root) == 0 and mine.exists()


# --- handled before: must stay handled ------------------------------------------------------------


def test_corrupted_object_and_bad_release_id_fail_in_one_line(cli: Cli, tmp_path: Path) -> None:
    wd = _workdir(tmp_path, "hh")
    store = tmp_path / "store"
    res = cli("publish", "--workdir", wd, "--store", store, "--release", "v1",
              "--report", _empty_report(tmp_path))  # fmt: skip
    assert res.rc == 0, res.text
    victim = sorted((store / "audio").rglob("*.flac"))[0]
    victim.write_bytes(b"not what was published")
    for split in ("train", "val", "test"):
        res = cli("pull", "--store", store, "--release", "v1", "--split", split,
                  "--dest", tmp_path / "dest")  # fmt: skip
        if res.rc != 0:
            break
    assert res.rc == 2 and "checksum mismatch" in res.err and "Traceback" not in res.text
    res = cli("publish", "--workdir", wd, "--store", store, "--release", "../../etc")
    assert res.rc == 2 and "invalid release id" in res.err and "Traceback" not in res.text
