"""Filtered pulls: ``duetflow pull --category PH --language zh ...`` and ``open_release(...)``.

Ground truth is the fixture's own specs (category, language, corpus, topic each dialogue was
written with) and the audio files written into the work directories, not the rows under test.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from duetflow.cli import main
from duetflow.config import RunConfig
from duetflow.errors import StorageError
from duetflow.hashing import sha256_file
from duetflow.release.publish import publish
from duetflow.release.pull import open_release, pull
from duetflow.release.view import ReleaseFilter
from release_fixtures import Spec, make_workdir

TOPICS = ("work", "weather", "travel")


def _specs() -> list[Spec]:
    out = []
    for i in range(24):
        category = ("HH", "HM", "PH")[i % 3]
        language = ("zh", "en")[(i // 3) % 2]
        corpus = {"HH": "ramc" if language == "zh" else "talk", "HM": "studio", "PH": "ph"}
        out.append(
            Spec(f"{corpus[category]}__d{i:03d}__w000", f"src{i:03d}", category, language,
                 corpus[category])
        )  # fmt: skip
    return out


def _topic(s: Spec) -> str:
    return TOPICS[int(s.dialogue_id.split("__d")[1][:3]) % len(TOPICS)]


@pytest.fixture(scope="module")
def filtered_release(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Spec], Path]:
    tmp = tmp_path_factory.mktemp("filtered")
    items = _specs()
    wd = make_workdir(
        tmp / "work", items, row_overrides={s.dialogue_id: {"topic": _topic(s)} for s in items}
    )
    publish([wd], str(tmp / "store"), RunConfig())
    return tmp / "store", items, wd


def _split_of(store: Path) -> dict[str, str]:
    (rid,) = [p.name for p in (store / "releases").iterdir() if p.is_dir()]
    rows = pq.read_table(store / "releases" / rid / "manifests" / "dialogues.parquet").to_pylist()
    return {r["dialogue_id"]: r["split"] for r in rows}


def _check_pulled(dest: Path, split: str, want: set[str], wd: Path) -> None:
    """Exactly ``want`` in the split manifest, its turns only, each audio file the bytes that
    were written into the work directory."""
    rows = pq.read_table(dest / f"{split}.parquet").to_pylist()
    assert {r["dialogue_id"] for r in rows} == want
    assert len(rows) == len(want)
    turns = pq.read_table(dest / "turns.parquet").to_pylist()
    assert {t["dialogue_id"] for t in turns} == want
    audio = {p.name for p in (dest / "audio").rglob("*.flac")} if want else set()
    assert audio == {f"{sha256_file(wd / 'audio' / f'{d}.flac')}.flac" for d in want}
    for r in rows:
        assert sha256_file(dest / r["audio_key"]) == r["sha256"]


def test_ph_test_dialogues_in_chinese_are_exactly_those_rows(
    filtered_release: tuple[Path, list[Spec], Path], tmp_path: Path
) -> None:
    store, items, wd = filtered_release
    want = {s.dialogue_id for s in items if s.category == "PH" and s.language == "zh"}
    assert len(want) == 4 and set(_split_of(store)[d] for d in want) == {"test"}
    where = ReleaseFilter.of(category="PH", language="zh")
    res = pull(str(store), split="test", dest=tmp_path / "d", where=where)
    assert res.dialogues == len(want) and res.where == where
    _check_pulled(tmp_path / "d", "test", want, wd)
    again = pull(str(store), split="test", dest=tmp_path / "d", where=where)
    assert again.downloaded == 0 and again.skipped == len(want)


def test_or_within_a_field_and_across_fields_on_the_command_line(
    filtered_release: tuple[Path, list[Spec], Path], tmp_path: Path
) -> None:
    store, items, _wd = filtered_release
    split_of = _split_of(store)
    dest = tmp_path / "cli"
    args = ["pull", "--store", str(store), "--dest", str(dest), "--split", "train",
            "--split", "test", "--category", "HH", "--category", "HM", "--language", "zh",
            "--topic", "work", "--topic", "travel", "--no-progress"]  # fmt: skip
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    assert "category=HH|HM language=zh topic=travel|work" in res.output
    for split in ("train", "test"):
        want = {
            s.dialogue_id for s in items
            if s.category in ("HH", "HM") and s.language == "zh"
            and _topic(s) in ("work", "travel") and split_of[s.dialogue_id] == split
        }  # fmt: skip
        rows = pq.read_table(dest / f"{split}.parquet").to_pylist()
        assert {r["dialogue_id"] for r in rows} == want
    kept = {r["dialogue_id"] for s in ("train", "test")
            for r in pq.read_table(dest / f"{s}.parquet").to_pylist()}  # fmt: skip
    assert (
        kept
        and {t["dialogue_id"] for t in pq.read_table(dest / "turns.parquet").to_pylist()} == kept
    )


def test_a_filtered_pull_still_verifies_every_object_it_fetches(
    filtered_release: tuple[Path, list[Spec], Path], tmp_path: Path
) -> None:
    store, _items, _ = filtered_release
    copy = tmp_path / "store"
    shutil.copytree(store, copy)
    (rid,) = [p.name for p in (copy / "releases").iterdir() if p.is_dir()]
    rows = pq.read_table(copy / "releases" / rid / "manifests" / "test.parquet").to_pylist()
    ph_zh = next(r for r in rows if r["category"] == "PH" and r["language"] == "zh")
    ph_en = next(r for r in rows if r["category"] == "PH" and r["language"] == "en")
    # an object outside the view is never fetched, so its damage does not matter here
    (copy / ph_en["audio_key"]).write_bytes(b"not the audio")
    where = ReleaseFilter.of(category="PH", language="zh")
    pull(str(copy), split="test", dest=tmp_path / "ok", where=where)
    # an object inside the view is checked against RELEASE.json
    (copy / ph_zh["audio_key"]).write_bytes(b"not the audio either")
    with pytest.raises(StorageError, match=ph_zh["audio_key"]):
        pull(str(copy), split="test", dest=tmp_path / "bad", where=where)
    # the published manifest is verified before it is filtered
    manifest = copy / "releases" / rid / "manifests" / "test.parquet"
    manifest.write_bytes(manifest.read_bytes() + b"\0")
    with pytest.raises(StorageError, match=r"test\.parquet"):
        pull(str(copy), split="test", dest=tmp_path / "bad2", where=where)


def test_open_release_takes_the_same_filters_and_caches_the_view_apart(
    filtered_release: tuple[Path, list[Spec], Path], tmp_path: Path
) -> None:
    store, items, _wd = filtered_release
    rel = open_release(str(store), cache_dir=tmp_path, splits=("test",), category="PH",
                       language=["zh"], corpus=("ph",))  # fmt: skip
    want = {s.dialogue_id for s in items if s.category == "PH" and s.language == "zh"}
    assert set(rel.test["dialogue_id"]) == want
    assert set(rel.turns["dialogue_id"]) == want
    assert rel.where == ReleaseFilter.of(category="PH", language="zh", corpus="ph")
    for path, sha in zip(rel.test["audio_path"], rel.test["sha256"], strict=True):
        assert sha256_file(Path(path)) == sha
    whole = open_release(str(store), cache_dir=tmp_path, splits=("test",))
    assert whole.root != rel.root and rel.root.name.startswith(whole.release_id + "@")
    assert len(whole.test) > len(rel.test)
    assert set(rel.test["dialogue_id"]) < set(whole.test["dialogue_id"])
