"""Design fields are columns everywhere a trainer looks; validate catches PH ↔ source leakage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import datasets
import lhotse
import pyarrow.parquet as pq
import pytest

from duetflow.config import RunConfig
from duetflow.records.dialogue import DESIGN_COLUMNS
from duetflow.release import publish as publish_module
from duetflow.release.export_hf import export_hf
from duetflow.release.export_lhotse import export_lhotse
from duetflow.release.publish import publish
from duetflow.release.pull import open_release, pull
from duetflow.release.splits import SplitPlan
from duetflow.release.validate import validate_release
from release_fixtures import Spec, make_workdir

HM = {
    "topic": "tourism",
    "source_topic": "tourism",
    "system_name": "demo-s2s",
    "system_version": "0.3.1",
    "strategy": "role_playing",
    "opening_line": "Hi, I'd like to plan a weekend trip.",
}


def _workdirs(root: Path) -> list[Path]:
    hh = [Spec(f"dt__d{i}__w000", f"d{i}", corpus="dailytalk") for i in range(12)]
    hm = [Spec(f"studio__s{i}", f"s{i}", category="HM", corpus="studio") for i in range(6)]
    # PH rewrites of d0 and d1 (their recordings' source ids) and one generated script
    ph = [
        Spec("ph__default__rw-d0", "d0", "PH", corpus="ph"),
        Spec("ph__default__rw-d1", "d1", "PH", corpus="ph"),
        Spec("ph__default__gen-en-work-001", "gen-en-work-001", "PH", corpus="ph"),
    ]
    overrides: dict[str, dict[str, Any]] = {s.dialogue_id: dict(HM) for s in hm}
    for s in hh:
        overrides[s.dialogue_id] = {"topic": "ordinary_life", "source_topic": "Ordinary Life"}
    for s in ph:
        overrides[s.dialogue_id] = {"topic": "work", "tts_backend": "default"}
    return [
        make_workdir(root / "hh", hh, row_overrides=overrides),
        make_workdir(root / "hm", hm, row_overrides=overrides),
        make_workdir(root / "ph", ph, row_overrides=overrides),
    ]


def test_design_columns_in_release_pull_open_release_and_exports(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    info = publish(_workdirs(tmp_path), store, RunConfig())
    assert validate_release(store) == []
    for split in ("train", "val", "test"):
        pull(store, "latest", split, tmp_path / "pulled")
    rows = {
        r["dialogue_id"]: r
        for s in ("train", "val", "test")
        for r in pq.read_table(tmp_path / "pulled" / f"{s}.parquet").to_pylist()
    }
    assert len(rows) == info.counts["dialogues"] == 21
    for r in rows.values():
        assert set(DESIGN_COLUMNS) <= set(r)
    hm = rows["studio__s0"]
    assert {k: hm[k] for k in HM} == HM and hm["tts_backend"] is None
    ph = rows["ph__default__rw-d0"]
    assert ph["tts_backend"] == "default" and ph["system_name"] is None
    # the PH rewrites and their source recordings are test-only
    for did in ("ph__default__rw-d0", "ph__default__rw-d1", "dt__d0__w000", "dt__d1__w000"):
        assert rows[did]["split"] == "test"

    rel = open_release(store, cache_dir=tmp_path / "cache")
    for split in ("train", "test"):
        assert set(DESIGN_COLUMNS) <= set(rel[split].columns)
    assert rel.test.set_index("dialogue_id").loc["ph__default__rw-d0", "tts_backend"] == "default"

    lh = export_lhotse(tmp_path / "pulled", tmp_path / "lhotse")
    by_rec = {
        sup.recording_id: sup.custom
        for _, sup_path in lh.values()
        for sup in lhotse.load_manifest(sup_path)
    }
    assert set(by_rec) == set(rows)
    for custom in by_rec.values():
        assert set(DESIGN_COLUMNS) | {"topic"} <= set(custom)
    assert {k: by_rec["studio__s0"][k] for k in HM} == HM
    assert by_rec["ph__default__rw-d0"]["tts_backend"] == "default"
    assert by_rec["dt__d3__w000"]["source_topic"] == "Ordinary Life"

    hf = export_hf(tmp_path / "pulled", tmp_path / "hf")
    ds = datasets.load_dataset(str(hf), cache_dir=str(tmp_path / "hf-cache"))
    for split in ds:
        assert set(DESIGN_COLUMNS) | {"topic"} <= set(ds[split].column_names)
    test = {ex["dialogue_id"]: ex for ex in ds["test"].remove_columns("audio")}
    assert test["ph__default__rw-d0"]["tts_backend"] == "default"


def test_validate_reports_a_ph_whose_source_is_in_train(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = publish_module.plan_splits

    def leaky(items: Any, config: Any) -> SplitPlan:
        plan = real(items, config)
        splits = dict(plan.splits)
        splits["dt__d0__w000"] = "train"  # what a splitter without the PH rule could do
        return SplitPlan(splits, plan.groups, plan.dropped)

    monkeypatch.setattr(publish_module, "plan_splits", leaky)
    store = str(tmp_path / "store")
    publish(_workdirs(tmp_path), store, RunConfig())
    problems = [str(p) for p in validate_release(store)]
    assert any(
        "leakage" in p and "ph__default__rw-d0" in p and "dt__d0__w000" in p for p in problems
    ), problems
