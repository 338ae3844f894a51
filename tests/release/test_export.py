"""lhotse and Hugging Face exports, loaded with the real libraries."""

from __future__ import annotations

from pathlib import Path

import datasets
import lhotse
import pyarrow.parquet as pq
import pytest

from duetflow.errors import ManifestError
from duetflow.release.export import iter_dialogues_with_turns
from duetflow.release.export_hf import export_hf
from duetflow.release.export_lhotse import export_lhotse
from duetflow.release.publish import publish
from duetflow.release.pull import pull
from release_fixtures import make_workdir, specs


@pytest.fixture
def pulled(tmp_path: Path) -> Path:
    wd = make_workdir(tmp_path / "wd", specs(16, per_source=1))
    ph = make_workdir(tmp_path / "ph", specs(3, prefix="ph", category="PH", per_source=1))
    publish([wd, ph], str(tmp_path / "store"))
    for split in ("train", "test"):
        pull(str(tmp_path / "store"), "latest", split, tmp_path / "pulled")
    return tmp_path / "pulled"


def test_turns_are_zipped_to_their_dialogues(pulled: Path) -> None:
    n = 0
    for row, turns in iter_dialogues_with_turns(pulled, "test"):
        assert [t.dialogue_id for t in turns] == [row.dialogue_id] * 3
        assert [t.turn_index for t in turns] == [0, 1, 2]
        n += 1
    assert n == pq.ParquetFile(pulled / "test.parquet").metadata.num_rows


def test_lhotse_manifests_load_and_validate(pulled: Path, tmp_path: Path) -> None:
    out = export_lhotse(pulled, tmp_path / "lhotse")
    assert set(out) == {"train", "test"}
    for split, (rec_path, sup_path) in out.items():
        recs = lhotse.load_manifest(rec_path)
        sups = lhotse.load_manifest(sup_path)
        assert isinstance(recs, lhotse.RecordingSet) and isinstance(sups, lhotse.SupervisionSet)
        lhotse.validate_recordings_and_supervisions(recs, sups)
        rows = pq.read_table(pulled / f"{split}.parquet").to_pylist()
        assert sorted(r.id for r in recs) == sorted(r["dialogue_id"] for r in rows)
        assert len(sups) == 3 * len(rows)
        cuts = lhotse.CutSet.from_manifests(recordings=recs, supervisions=sups)
        cut = next(iter(cuts))
        audio = cut.load_audio()
        assert audio.shape == (1, round(cut.duration * cut.sampling_rate))
        speakers = {s.speaker for s in cut.supervisions}
        assert len(speakers) == 2
    again = export_lhotse(pulled, tmp_path / "lhotse2")
    assert again["train"][0].read_bytes() == out["train"][0].read_bytes()  # deterministic


def test_hf_layout_loads_with_datasets(pulled: Path, tmp_path: Path) -> None:
    out = export_hf(pulled, tmp_path / "hf", shard_rows=4)
    ds = datasets.load_dataset(str(out), cache_dir=str(tmp_path / "hf-cache"))
    assert set(ds) == {"train", "test"}
    train_rows = pq.read_table(pulled / "train.parquet").to_pylist()
    assert ds["train"].num_rows == len(train_rows)
    assert len(list((out / "data").glob("train-*.parquet"))) == -(-len(train_rows) // 4)
    assert isinstance(ds["train"].features["audio"], datasets.Audio)
    raw = ds["train"].cast_column("audio", datasets.Audio(decode=False))
    by_id = {r["dialogue_id"]: r for r in train_rows}
    for ex in raw:
        row = by_id[ex["dialogue_id"]]
        assert ex["audio"]["bytes"] == (pulled / row["audio_path"]).read_bytes()
        assert [t["turn_index"] for t in ex["turns"]] == [0, 1, 2]
        assert ex["category"] == row["category"] and ex["sha256"] == row["sha256"]


def test_export_needs_a_pulled_folder(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="duetflow pull"):
        export_lhotse(tmp_path, tmp_path / "out")
