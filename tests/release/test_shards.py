"""Sharded exports (issue 27 item 3): WebDataset tar shards and lhotse Shar, read back with the
real readers (``tarfile`` in streaming mode, the ``webdataset`` package, ``lhotse``), every
shard checksummed in SHARDS.json.

Ground truth: the pulled FLAC files and manifest rows (checked against the store's checksums by
the pull), not the shards under test.
"""

from __future__ import annotations

import json
import math
import tarfile
from pathlib import Path

import lhotse
import numpy as np
import pyarrow.parquet as pq
import pytest
import soundfile as sf

from duetflow.hashing import sha256_file
from duetflow.release.publish import publish
from duetflow.release.pull import pull
from duetflow.release.shards import (
    SHARD_INDEX,
    export_shar,
    export_webdataset,
    sample_key,
    verify_shards,
)
from release_fixtures import make_workdir, specs


@pytest.fixture(scope="module")
def pulled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("shards")
    wd = make_workdir(tmp / "work", specs(9, per_source=1))
    publish([wd], str(tmp / "store"), None)
    for split in ("train", "val", "test"):
        pull(str(tmp / "store"), split=split, dest=tmp / "pulled")
    return tmp / "pulled"


def _rows(pulled: Path, split: str) -> dict[str, dict[str, object]]:
    table = pq.read_table(pulled / f"{split}.parquet")
    return {r["dialogue_id"]: r for r in table.to_pylist()}


def _splits(pulled: Path) -> list[str]:
    return [s for s in ("train", "val", "test") if _rows(pulled, s)]


def test_webdataset_shards_stream_back_to_the_same_bytes(pulled: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    shards = export_webdataset(pulled, out, shard_size=2)
    seen: dict[str, int] = {}
    for split in _splits(pulled):
        rows = _rows(pulled, split)
        mine = [s for s in shards if s.split == split]
        assert len(mine) == math.ceil(len(rows) / 2) and all(s.dialogues <= 2 for s in mine)
        assert sum(s.dialogues for s in mine) == len(rows)
        found = set()
        for s in mine:
            with open(out / s.path, "rb") as f, tarfile.open(fileobj=f, mode="r|") as tar:
                members = {}
                for m in tar:  # streaming: one member after the other, no seeking
                    data = tar.extractfile(m)
                    assert data is not None
                    members[m.name] = data.read()
            keys = {name.split(".", 1)[0] for name in members}
            assert len(members) == 2 * len(keys) == 2 * s.dialogues
            for key in keys:
                record = json.loads(members[f"{key}.json"])
                did = record["dialogue_id"]
                assert sample_key(did) == key and did in rows
                assert sha256_file(pulled / rows[did]["audio_key"]) == rows[did]["sha256"]
                assert members[f"{key}.flac"] == (pulled / rows[did]["audio_key"]).read_bytes()
                assert [t["turn_index"] for t in record["turns"]] == [0, 1, 2]
                assert [e["event"] for e in record["events"]] == ["turn", "gap"] * 2 + ["turn"]
                assert not {"audio_path", "audio_key", "provenance"} & set(record)
                found.add(did)
        assert found == set(rows)
        seen[split] = len(found)
    assert sum(seen.values()) == 9
    assert verify_shards(out) == []
    again = export_webdataset(pulled, tmp_path / "again", shard_size=2)
    assert [s.sha256 for s in again] == [s.sha256 for s in shards]  # same pull, same bytes


def test_the_webdataset_package_reads_the_shards(pulled: Path, tmp_path: Path) -> None:
    wds = pytest.importorskip("webdataset")
    out = tmp_path / "out"
    shards = export_webdataset(pulled, out, shard_size=4)
    urls = [str(out / s.path) for s in shards if s.split == "train"]
    rows = _rows(pulled, "train")
    got = {}
    for sample in wds.WebDataset(urls, shardshuffle=False):
        record = json.loads(sample["json"])
        got[record["dialogue_id"]] = sample["flac"]
        assert sample["__key__"] == sample_key(record["dialogue_id"])
    assert set(got) == set(rows)
    for did, data in got.items():
        assert data == (pulled / rows[did]["audio_key"]).read_bytes()


def test_a_damaged_shard_fails_verification(pulled: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    shards = export_webdataset(pulled, out, shard_size=3)
    with open(out / shards[0].path, "r+b") as f:
        f.seek(700)
        byte = f.read(1)
        f.seek(700)
        f.write(bytes([byte[0] ^ 0xFF]))
    assert verify_shards(out) == [f"{shards[0].path}: sha256/size differ from {SHARD_INDEX}"]
    (out / shards[1].path).unlink()
    assert f"{shards[1].path}: missing" in verify_shards(out)


def test_lhotse_shar_reads_back_the_same_samples(pulled: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    export_webdataset(pulled, out, shard_size=2)
    shards = export_shar(pulled, out, shard_size=2)
    index = json.loads((out / SHARD_INDEX).read_text())["shards"]
    assert {s["format"] for s in index} == {"webdataset", "shar"}  # one index for both
    assert verify_shards(out) == []
    for split in _splits(pulled):
        rows = _rows(pulled, split)
        mine = [s for s in shards if s.split == split]
        tars = [s for s in mine if s.path.endswith(".tar")]
        assert len(tars) == math.ceil(len(rows) / 2)
        assert sum(s.dialogues for s in tars) == len(rows)
        cuts = lhotse.CutSet.from_shar(in_dir=out / "shar" / split)
        ids = []
        for cut in cuts:
            ids.append(cut.recording_id)
            want, sr = sf.read(pulled / rows[cut.recording_id]["audio_key"], dtype="int16")
            got = cut.load_audio()
            assert cut.sampling_rate == sr and got.shape == (1, len(want))
            assert np.array_equal(np.round(got[0] * 32768).astype(np.int16), want)
            assert len(cut.supervisions) == 3
            assert cut.supervisions[0].custom["turn_events"][0]["event"] == "turn"
        assert sorted(ids) == sorted(rows)


def test_pull_writes_both_shard_formats_on_the_command_line(pulled: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from duetflow.cli import main

    store = pulled.parent / "store"
    dest = tmp_path / "d"
    args = ["pull", "--store", str(store), "--dest", str(dest), "--split", "train",
            "--export", "webdataset", "--export", "shar", "--shard-size", "3",
            "--no-progress"]  # fmt: skip
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    assert "SHARDS.json" in res.output and verify_shards(dest / "shards") == []
    index = json.loads((dest / "shards" / SHARD_INDEX).read_text())["shards"]
    n = len(_rows(pulled, "train"))
    tars = [s for s in index if s["format"] == "webdataset"]
    assert len(tars) == math.ceil(n / 3) and sum(s["dialogues"] for s in tars) == n
    assert any(s["path"].startswith("shar/train/cuts.") for s in index)
