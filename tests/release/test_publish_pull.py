"""Publish → store → pull, for a local directory and for S3 (moto over HTTP)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import boto3
import pyarrow.parquet as pq
import pytest

from duetflow.config import RunConfig, build_config
from duetflow.errors import ManifestError, StorageError
from duetflow.hashing import sha256_file
from duetflow.release.layout import LATEST_KEY, list_releases, manifest_key, read_release_json
from duetflow.release.publish import publish
from duetflow.release.pull import open_release, pull
from duetflow.release.validate import parse_release_uri, validate_release
from duetflow.report import release_report
from duetflow.storage import open_store
from release_fixtures import make_workdir, specs


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def workdirs(tmp_path: Path) -> list[Path]:
    hh = make_workdir(tmp_path / "hh", specs(14, per_source=2), stats={"kept": 14})
    ph = make_workdir(tmp_path / "ph", specs(4, prefix="ph", category="PH", per_source=1))
    return [hh, ph]


def test_local_and_s3_publish_and_pull_are_byte_identical(
    workdirs: list[Path], tmp_path: Path, s3_uri: str, s3_cfg: RunConfig
) -> None:
    local_uri = str(tmp_path / "store")
    a = publish(workdirs, local_uri, RunConfig())
    b = publish(workdirs, s3_uri, s3_cfg)
    assert a.release_id == b.release_id  # the id depends on content, not on where it goes
    assert a.counts == b.counts and a.counts["dialogues"] == 18
    assert a.counts["test"] >= 4  # PH is test-only
    pa_ = pull(local_uri, "latest", "train", tmp_path / "from-local")
    pb = pull(s3_uri, a.release_id, "train", tmp_path / "from-s3", s3_cfg)
    assert tree(pa_.dest) == tree(pb.dest)
    # ... and byte-identical to what was published
    store = open_store(local_uri)
    rid = a.release_id
    assert (pa_.dest / "train.parquet").read_bytes() == store.get_bytes(manifest_key(rid, "train"))
    # turns: the published rows of the pulled split only, in the published order
    published = open_store(local_uri).get_bytes(manifest_key(rid, "turns"))
    (tmp_path / "published-turns.parquet").write_bytes(published)
    train_ids = {r["dialogue_id"] for r in pq.read_table(pa_.manifest).to_pylist()}
    want = [
        t
        for t in pq.read_table(tmp_path / "published-turns.parquet").to_pylist()
        if t["dialogue_id"] in train_ids
    ]
    assert pq.read_table(pa_.turns).to_pylist() == want and want
    rows = pq.read_table(pa_.manifest).to_pylist()
    assert len(rows) == a.counts["train"] == pa_.dialogues
    src_audio = {p.read_bytes() for wd in workdirs for p in (wd / "audio").iterdir()}
    for row in rows:
        local = pa_.dest / row["audio_path"]  # relative to the pulled folder
        assert row["audio_path"] == row["audio_key"]
        assert sha256_file(local) == row["sha256"] and local.read_bytes() in src_audio
        assert row["split"] == "train"


def test_release_layout_and_record(workdirs: list[Path], tmp_path: Path) -> None:
    report = tmp_path / "report"
    (report / "plots").mkdir(parents=True)
    (report / "card.md").write_text("# card\n")
    (report / "plots" / "gaps.png").write_bytes(b"\x89PNG fake")
    info = publish(workdirs, str(tmp_path / "store"), RunConfig(), report_dir=report)
    store = open_store(tmp_path / "store")
    rid = info.release_id
    assert rid.startswith("rel-") and info.uri.endswith(f"/releases/{rid}")
    doc = read_release_json(store, rid)
    keys = {o["key"] for o in doc["objects"]}
    prefix = f"releases/{rid}/"
    for name in ("train", "val", "test", "dialogues", "turns", "rejections"):
        assert f"{prefix}manifests/{name}.parquet" in keys
    assert {f"{prefix}report/card.md", f"{prefix}report/plots/gaps.png"} <= keys
    assert f"{prefix}stats/00-hh.json" in keys and f"{prefix}splits.md" in keys
    for o in doc["objects"]:  # every object listed with its real checksum and size
        info_ = store.head(o["key"])
        assert info_ is not None and (info_.sha256, info_.size) == (o["sha256"], o["size"])
    claim = prefix + "CLAIM.json"  # created first, exclusively: the content that owns the id
    assert set(store.list()) == keys | {claim, prefix + "RELEASE.json", LATEST_KEY}
    assert doc["code_version"] and len(doc["config_hash"]) == 16
    assert doc["counts"]["rejections"] == 2  # one per work directory
    dialogues = pq.read_table(store.root / prefix / "manifests/dialogues.parquet")
    names = dialogues.schema.names
    assert names[names.index("sha256") + 1 : names.index("sha256") + 3] == ["split", "audio_key"]
    assert store.get_bytes(LATEST_KEY) == f"{rid}\n".encode()
    assert validate_release(str(tmp_path / "store")) == []


def test_republishing_same_content_uploads_nothing(
    workdirs: list[Path], tmp_path: Path, s3_uri: str, s3_cfg: RunConfig
) -> None:
    for uri, cfg in ((str(tmp_path / "store"), RunConfig()), (s3_uri, s3_cfg)):
        first = publish(workdirs, uri, cfg)
        again = publish(workdirs, uri, cfg)
        assert first.release_id == again.release_id
        assert first.uploaded_objects > 0 and first.skipped_objects == 0
        assert again.uploaded_objects == 0 and again.skipped_objects == first.uploaded_objects


def test_publish_is_deterministic(workdirs: list[Path], tmp_path: Path) -> None:
    publish(workdirs, str(tmp_path / "s1"), RunConfig())
    publish(workdirs, str(tmp_path / "s2"), RunConfig())
    assert tree(tmp_path / "s1") == tree(tmp_path / "s2")


def test_adding_ten_dialogues_keeps_every_existing_split(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    old = specs(30, per_source=3)
    r1 = publish([make_workdir(tmp_path / "v1", old)], store, RunConfig())
    r2 = publish([make_workdir(tmp_path / "v2", old + specs(10, start=30))], store, RunConfig())
    assert r1.release_id != r2.release_id
    assert r2.counts["dialogues"] == 40
    st = open_store(store)
    assert list_releases(st) == sorted([r1.release_id, r2.release_id])
    assert st.get_bytes(LATEST_KEY).decode().strip() == r2.release_id

    def splits(rid: str) -> dict[str, str]:
        t = pq.read_table(st.root / f"releases/{rid}/manifests/dialogues.parquet")
        return dict(zip(t["dialogue_id"].to_pylist(), t["split"].to_pylist(), strict=True))

    before, after = splits(r1.release_id), splits(r2.release_id)
    assert len(before) == 30 and all(after[d] == s for d, s in before.items())


@pytest.mark.parametrize("where", ["local", "s3"])
def test_bad_row_is_refused_and_nothing_published(
    tmp_path: Path, where: str, request: pytest.FixtureRequest
) -> None:
    items = specs(4)
    wd = make_workdir(
        tmp_path / "wd", items, row_overrides={items[2].dialogue_id: {"duration_s": -1.0}}
    )
    if where == "local":
        uri, cfg = str(tmp_path / "store"), RunConfig()
    else:
        uri, cfg = request.getfixturevalue("s3_uri"), request.getfixturevalue("s3_cfg")
    with pytest.raises(ManifestError) as exc:
        publish([wd], uri, cfg)
    assert items[2].dialogue_id in exc.value.table and "duration_s" in exc.value.table
    assert list(open_store(uri, cfg.release).list()) == []


def test_duplicate_dialogue_ids_across_workdirs_refused(tmp_path: Path) -> None:
    a = make_workdir(tmp_path / "a", specs(2))
    b = make_workdir(tmp_path / "b", specs(2))
    with pytest.raises(ManifestError, match="repeat across work directories"):
        publish([a, b], str(tmp_path / "store"))
    assert not (tmp_path / "store").exists()


def test_existing_release_id_with_other_content_refused(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    publish([make_workdir(tmp_path / "a", specs(3))], store, release_id="v1")
    with pytest.raises(StorageError, match="already exists with different content"):
        publish([make_workdir(tmp_path / "b", specs(4))], store, release_id="v1")
    assert validate_release(store, "v1") == []
    with pytest.raises(StorageError, match="invalid release id"):
        publish([tmp_path / "a"], store, release_id="../x")


def test_corrupted_object_fails_validate_and_pull_naming_key(
    workdirs: list[Path], tmp_path: Path, s3_uri: str, s3_cfg: RunConfig
) -> None:
    info = publish(workdirs, s3_uri, s3_cfg)
    st = open_store(s3_uri, s3_cfg.release)
    doc = read_release_json(st, info.release_id)
    rows = pq.read_table(pull(s3_uri, "latest", "train", tmp_path / "ok", s3_cfg).manifest)
    key = rows["audio_key"][0].as_py()
    # bit rot: same key, same recorded checksum metadata, different bytes
    raw = boto3.client("s3", endpoint_url=s3_cfg.release.endpoint_url)
    size = next(o["size"] for o in doc["objects"] if o["key"] == key)
    raw.put_object(
        Bucket=st.bucket,  # type: ignore[attr-defined]
        Key=st.prefix + key,  # type: ignore[attr-defined]
        Body=b"\0" * size,
        Metadata={"sha256": rows["sha256"][0].as_py()},
    )
    problems = validate_release(f"{s3_uri}/releases/{info.release_id}", config=s3_cfg)
    assert [p.key for p in problems] == [key]
    assert "checksum mismatch" in problems[0].problem
    with pytest.raises(StorageError, match=re.escape(key)):
        pull(s3_uri, "latest", "train", tmp_path / "fresh", s3_cfg)


def test_corrupted_manifest_and_missing_object_local(workdirs: list[Path], tmp_path: Path) -> None:
    store = tmp_path / "store"
    info = publish(workdirs, str(store), RunConfig())
    turns = store / f"releases/{info.release_id}/manifests/turns.parquet"
    turns.write_bytes(turns.read_bytes()[:-10] + b"0123456789")
    audio = sorted((store / "audio").rglob("*.flac"))[0]
    audio.unlink()
    problems = validate_release(str(store))
    keys = {p.key for p in problems}
    assert f"releases/{info.release_id}/manifests/turns.parquet" in keys
    assert audio.relative_to(store).as_posix() in keys
    assert any("missing" in p.problem for p in problems)
    assert validate_release(str(tmp_path / "empty"))[0].key == "releases/LATEST"


def test_pull_is_resumable(workdirs: list[Path], tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    publish(workdirs, store)
    first = pull(store, "latest", "test", tmp_path / "dest")
    files = sorted((tmp_path / "dest" / "audio").rglob("*.flac"))
    files[0].unlink()  # an interrupted pull
    files[1].write_bytes(b"partial")
    again = pull(store, "latest", "test", tmp_path / "dest")
    assert again.downloaded == 2 and again.skipped == first.dialogues - 2
    assert all(sha256_file(f) == f.stem for f in files)


def test_open_release_gives_dataframes_with_local_paths(
    workdirs: list[Path], tmp_path: Path
) -> None:
    store = str(tmp_path / "store")
    info = publish(workdirs, store)
    rel = open_release(store, cache_dir=tmp_path / "cache")
    assert rel.release_id == info.release_id
    assert len(rel.train) + len(rel.val) + len(rel.test) == 18
    for df in rel.splits.values():
        for path, sha in zip(df["audio_path"], df["sha256"], strict=True):
            assert Path(path).is_absolute() and sha256_file(path) == sha
    assert set(rel.turns["dialogue_id"]) >= set(rel.train["dialogue_id"])
    assert rel.table("test").num_rows == len(rel.test)
    assert rel.info["counts"]["dialogues"] == 18
    with pytest.raises(KeyError, match="not fetched"):
        open_release(store, cache_dir=tmp_path / "cache", splits=["val"])["train"]


def test_balance_test_surplus_becomes_rejections(tmp_path: Path) -> None:
    wd = make_workdir(
        tmp_path / "wd",
        specs(30, per_source=1) + specs(2, prefix="ph", category="PH", per_source=1),
    )
    cfg = build_config({"release": {"balance_test": True}}, environ={})
    info = publish([wd], str(tmp_path / "store"), cfg)
    rej = pq.read_table(
        tmp_path / "store" / f"releases/{info.release_id}/manifests/rejections.parquet"
    ).to_pylist()
    surplus = [r for r in rej if r["reason"] == "test_balance_surplus"]
    assert info.counts["by_split_category"]["test"]["PH"] == 2
    assert info.counts["by_split_category"]["test"].get("HH", 0) <= 2
    assert info.counts["dialogues"] + len(surplus) == 32  # inputs = kept + rejected
    assert all(r["stage"] == "publish" for r in surplus)


def test_parse_release_uri() -> None:
    assert parse_release_uri("s3://b/p/releases/r1") == ("s3://b/p", "r1")
    assert parse_release_uri("/x/store/") == ("/x/store", "latest")
    assert parse_release_uri("/x/store/releases/r1/") == ("/x/store", "r1")


def test_release_json_is_valid_json_with_counts(workdirs: list[Path], tmp_path: Path) -> None:
    info = publish(workdirs, str(tmp_path / "store"))
    doc = json.loads((tmp_path / "store" / f"releases/{info.release_id}/RELEASE.json").read_text())
    assert doc["counts"]["train"] + doc["counts"]["val"] + doc["counts"]["test"] == 18
    assert doc["release_config"]["ratios"]["PH"] == [0.0, 0.0, 1.0]


def test_every_release_carries_its_report(workdirs: list[Path], tmp_path: Path) -> None:
    info = publish(workdirs, str(tmp_path / "store"), RunConfig(), report=release_report)
    store = open_store(tmp_path / "store")
    prefix = f"releases/{info.release_id}/report/"
    keys = set(store.list(prefix))
    assert {prefix + "index.html", prefix + "README.md"} <= keys
    card = store.get_bytes(prefix + "README.md").decode()
    assert info.release_id in card
    # the card counts what the release holds, split by split (18 = 14 HH + 4 PH dialogues)
    assert "| all | all | all | all | 18 |" in card
    for split in ("train", "val", "test"):
        n = open_release(str(tmp_path / "store")).table(split).num_rows
        assert any(line.startswith(f"| {split} | {n} |") for line in card.splitlines())
