"""The trainer's path: licences in the release, pull of one split, exports with an empty split.

Ground truth is what the fixtures wrote: each dialogue's licence comes from its spec (not from
the rows under test) and its audio from ``fixture_samples``; the exports are read back with the
real libraries (``datasets``, ``lhotse``, ``soundfile``).
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import datasets
import lhotse
import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner

from duetflow.cli import main
from duetflow.config import RunConfig, build_config
from duetflow.errors import ManifestError
from duetflow.records.manifest import (
    DIALOGUES,
    INTAKE_DIALOGUE_SCHEMA,
    INTAKE_TURN_SCHEMA,
    REJECTION_SCHEMA,
    REJECTIONS,
    TURNS,
    write_table,
)
from duetflow.release.export_hf import export_hf, hf_decode
from duetflow.release.export_lhotse import export_lhotse
from duetflow.release.layout import read_release_json
from duetflow.release.publish import publish
from duetflow.release.pull import pull
from duetflow.report import release_report
from duetflow.storage import open_store
from release_fixtures import SR, Spec, fixture_samples, make_workdir, specs

PH_LICENCE = "CC-BY-NC-SA-4.0 AND CC-BY-SA-4.0"
#: val is empty by construction: no category sends anything there
NO_VAL = build_config(
    {"release": {"ratios": {"HH": (0.7, 0.0, 0.3), "HM": (0.7, 0.0, 0.3), "PH": (0, 0, 1)}}}
)


def _licensed(items: list[Spec], licence: str) -> list[Spec]:
    return [Spec(s.dialogue_id, s.source_id, s.category, s.language, s.corpus, licence)
            for s in items]  # fmt: skip


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict[str, str]]:
    """A release of three licences (two corpora + PH) with an empty val split.

    Returns the store, the release id and the licence each dialogue was written with.
    """
    tmp = tmp_path_factory.mktemp("trainer")
    sa = _licensed(specs(12, prefix="talk", per_source=1), "CC-BY-SA-4.0")
    nd = _licensed(specs(6, prefix="ramc", per_source=1), "CC-BY-NC-ND-4.0")
    ph = _licensed(specs(3, prefix="ph", category="PH", per_source=1), PH_LICENCE)
    wds = [make_workdir(tmp / "talk", sa), make_workdir(tmp / "ramc", nd),
           make_workdir(tmp / "ph", ph)]  # fmt: skip
    info = publish(wds, str(tmp / "store"), NO_VAL, report=release_report)
    truth = {s.dialogue_id: s.licence for s in (*sa, *nd, *ph)}
    return tmp / "store", info.release_id, truth


def test_release_json_records_the_licence_set_with_counts(
    release: tuple[Path, str, dict[str, str]], tmp_path: Path
) -> None:
    store, rid, truth = release
    doc = read_release_json(open_store(store), rid)
    assert doc["licences"] == sorted(set(truth.values()))
    index = tmp_path / "dialogues.parquet"
    index.write_bytes(open_store(store).get_bytes(f"releases/{rid}/manifests/dialogues.parquet"))
    rows = pq.read_table(index, columns=["dialogue_id", "split", "licence"]).to_pylist()
    assert {r["dialogue_id"]: r["licence"] for r in rows} == truth  # every row carries its own
    want: dict[str, Counter[str]] = {}
    for r in rows:
        want.setdefault(truth[r["dialogue_id"]], Counter())[r["split"]] += 1
    by = doc["counts"]["by_licence"]
    assert set(by) == set(want)
    for lic, cnt in want.items():
        assert by[lic] == {"dialogues": sum(cnt.values()), "train": cnt["train"],
                           "val": cnt["val"], "test": cnt["test"]}  # fmt: skip


def test_pull_brings_the_card_and_only_the_pulled_splits_turns(
    release: tuple[Path, str, dict[str, str]], tmp_path: Path
) -> None:
    store, rid, _ = release
    dest = tmp_path / "pulled"
    res = pull(str(store), rid, "train", dest, NO_VAL)
    train = {r["dialogue_id"] for r in pq.read_table(res.manifest).to_pylist()}
    turns = pq.read_table(res.turns).to_pylist()
    assert train and {t["dialogue_id"] for t in turns} == train
    assert len(turns) == 3 * len(train)
    assert res.report == dest / "report"
    card = (dest / "report" / "README.md").read_text(encoding="utf-8")
    assert f"duetflow release {rid}" in card and (dest / "report" / "index.html").is_file()
    test = pull(str(store), rid, "test", dest, NO_VAL)
    test_ids = {r["dialogue_id"] for r in pq.read_table(test.manifest).to_pylist()}
    both = {t["dialogue_id"] for t in pq.read_table(dest / "turns.parquet").to_pylist()}
    assert both == train | test_ids  # pulling another split adds its turns
    assert not any(p.name.startswith(".turns") for p in dest.iterdir())  # no full copy left


def test_dataset_card_licence_section_is_computed_from_the_release(
    release: tuple[Path, str, dict[str, str]], tmp_path: Path
) -> None:
    store, rid, truth = release
    pull(str(store), rid, "train", tmp_path / "mixed", NO_VAL)
    card = (tmp_path / "mixed" / "report" / "README.md").read_text(encoding="utf-8")
    front = yaml.safe_load(card.split("---")[1])
    assert front["license"] == "other"
    section = card.split("## Provenance and licences")[1]
    for lic in set(truth.values()):
        n = sum(1 for v in truth.values() if v == lic)
        assert f"| {lic} |" in section and f"| {n} |" in section
    assert "Non-commercial use only for dialogues under CC-BY-NC-ND-4.0, CC-BY-NC-SA-4.0" in section
    assert "CC-BY-NC-ND-4.0 forbid(s) sharing adapted material" in section

    # a release holding one permissive licence says so, and nothing about NC or ND
    wd = make_workdir(tmp_path / "open", _licensed(specs(4, per_source=1), "CC-BY-4.0"))
    info = publish([wd], str(tmp_path / "store2"), NO_VAL, report=release_report)
    pull(str(tmp_path / "store2"), info.release_id, "train", tmp_path / "open-pulled", NO_VAL)
    card = (tmp_path / "open-pulled" / "report" / "README.md").read_text(encoding="utf-8")
    assert yaml.safe_load(card.split("---")[1])["license"] == "cc-by-4.0"
    section = card.split("## Provenance and licences")[1]
    assert "Every dialogue is under CC-BY-4.0." in section
    assert "Non-commercial" not in section and "forbid" not in section and "(ND)" not in section


def _pull_all(store: Path, rid: str, dest: Path) -> Path:
    for split in ("train", "val", "test"):
        pull(str(store), rid, split, dest, NO_VAL)
    assert pq.ParquetFile(dest / "val.parquet").metadata.num_rows == 0
    return dest


def test_hf_export_with_an_empty_split_loads_and_decodes(
    release: tuple[Path, str, dict[str, str]], tmp_path: Path
) -> None:
    store, rid, truth = release
    pulled = _pull_all(store, rid, tmp_path / "pulled")
    out = export_hf(pulled, tmp_path / "hf", shard_rows=5)
    assert not list((out / "data").glob("val-*"))  # the empty split is left out
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert "split: val" not in readme and "| CC-BY-NC-ND-4.0 |" in readme
    assert yaml.safe_load(readme.split("---")[1])["license"] == "other"
    ds = datasets.load_dataset(str(out), cache_dir=str(tmp_path / "cache"))
    assert set(ds) == {"train", "test"}
    for split in ("train", "test"):
        rows = {r["dialogue_id"]: r for r in pq.read_table(pulled / f"{split}.parquet").to_pylist()}
        part = ds[split]
        assert part.num_rows == len(rows)
        assert isinstance(part.features["audio"], datasets.Audio)
        assert {"corpus", "category", "licence", "source_sample_rate"} <= set(part.column_names)
        assert not {"audio_path", "audio_key", "split"} & set(part.column_names)
        raw = part.cast_column("audio", datasets.Audio(decode=False))
        for ex in raw:
            did = ex["dialogue_id"]
            assert ex["licence"] == truth[did] and ex["corpus"] == rows[did]["corpus"]
            assert ex["source_sample_rate"] == 2 * SR
            samples, sr = hf_decode(ex["audio"])
            want = fixture_samples(did)
            assert sr == SR and samples.shape == want.shape
            assert np.max(np.abs(samples - want)) < 1e-3  # 16-bit FLAC of what was written
            assert [t["turn_index"] for t in ex["turns"]] == [0, 1, 2]


def test_lhotse_export_with_an_empty_split_validates_and_loads_audio(
    release: tuple[Path, str, dict[str, str]], tmp_path: Path
) -> None:
    store, rid, truth = release
    pulled = _pull_all(store, rid, tmp_path / "pulled")
    out = export_lhotse(pulled, tmp_path / "lhotse")
    assert set(out) == {"train", "test"}
    for _split, (rec_path, sup_path) in out.items():
        recs = lhotse.load_manifest(rec_path)
        sups = lhotse.load_manifest(sup_path)
        lhotse.validate_recordings_and_supervisions(recs, sups)
        for cut in lhotse.CutSet.from_manifests(recordings=recs, supervisions=sups):
            audio = cut.load_audio()
            want = fixture_samples(cut.recording_id)
            assert audio.shape == (1, len(want))
            assert np.max(np.abs(audio[0] - want)) < 1e-3
            for sup in cut.supervisions:
                assert sup.custom["licence"] == truth[cut.recording_id]
                assert sup.custom["corpus"] == cut.recording_id.split("__")[0]


def test_readers_fail_on_a_store_that_does_not_exist(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-store")
    exe = str(Path(sys.executable).parent / "duetflow")
    for args in (["releases", "list", "--store", missing],
                 ["pull", "--store", missing, "--dest", str(tmp_path / "d")]):  # fmt: skip
        proc = subprocess.run([exe, *args], capture_output=True, text=True, check=False)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "no such store" in proc.stderr
    assert not (tmp_path / "no-such-store").exists()


def test_publish_says_when_a_folder_is_not_rendered(tmp_path: Path) -> None:
    intake = tmp_path / "intake"
    write_table(intake / DIALOGUES, INTAKE_DIALOGUE_SCHEMA, [])
    write_table(intake / TURNS, INTAKE_TURN_SCHEMA, [])
    write_table(intake / REJECTIONS, REJECTION_SCHEMA, [])
    args = ["publish", "--workdir", str(intake), "--store", str(tmp_path / "s")]
    res = CliRunner().invoke(main, args)
    assert isinstance(res.exception, ManifestError)
    msg = str(res.exception)
    assert "not a rendered work directory" in msg and "run `duetflow process`" in msg
    assert "\n" not in msg  # one line, not a failure table
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ManifestError, match="not a work directory"):
        publish([empty], str(tmp_path / "s"), RunConfig())


def test_old_option_names_still_work_with_a_warning(tmp_path: Path) -> None:
    wd = make_workdir(tmp_path / "wd", specs(2, per_source=1))
    store = str(tmp_path / "store")
    res = CliRunner().invoke(main, ["publish", "--work", str(wd), "--store", store])
    assert res.exit_code == 0, res.output
    assert "warning: --work is deprecated; use --workdir" in res.output
    both = ["publish", "--work", str(wd), "--workdir", str(wd), "--store", store]
    res = CliRunner().invoke(main, both)
    assert res.exit_code == 2 and "old name of --workdir" in res.output
    res = CliRunner().invoke(main, ["publish", "--store", store])
    assert res.exit_code == 2 and "Missing option '--workdir'" in res.output
    help_text = CliRunner().invoke(main, ["publish", "--help"]).output
    assert "--workdir" in help_text and "--work " not in help_text
    assert (Path(store) / "releases" / "LATEST").is_file()
