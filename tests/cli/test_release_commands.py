"""The publish / releases / validate / pull commands."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from duetflow.cli import main
from duetflow.errors import ManifestError
from release_fixtures import make_workdir, specs


def test_publish_list_validate_pull_roundtrip(tmp_path: Path) -> None:
    wd = make_workdir(tmp_path / "wd", specs(8, per_source=1))
    store = str(tmp_path / "store")
    runner = CliRunner()
    res = runner.invoke(
        main, ["publish", "--workdir", str(wd), "--store", store, "--release", "v1"]
    )
    assert res.exit_code == 0, res.output
    assert "release v1: 8 dialogues" in res.output and "object(s) uploaded" in res.output
    res = runner.invoke(main, ["releases", "list", "--store", store])
    assert res.exit_code == 0 and res.output.startswith("* v1  dialogues 8")
    res = runner.invoke(main, ["validate", f"{store}/releases/v1"])
    assert res.exit_code == 0 and "valid" in res.output
    dest = tmp_path / "dest"
    args = ["pull", "--store", store, "--release", "v1", "--split", "train", "--dest", str(dest)]
    res = runner.invoke(main, [*args, "--export", "lhotse", "--export", "hf"])
    assert res.exit_code == 0, res.output
    assert (dest / "train.parquet").is_file() and (dest / "turns.parquet").is_file()
    assert (dest / "lhotse" / "duetflow_recordings_train.jsonl.gz").is_file()
    assert (dest / "hf" / "README.md").is_file()


def test_validate_exits_non_zero_on_a_corrupted_release(tmp_path: Path) -> None:
    wd = make_workdir(tmp_path / "wd", specs(3))
    store = tmp_path / "store"
    runner = CliRunner()
    assert (
        runner.invoke(main, ["publish", "--workdir", str(wd), "--store", str(store)]).exit_code == 0
    )
    victim = sorted((store / "audio").rglob("*.flac"))[0]
    victim.write_bytes(b"not audio")
    exe = shutil.which("duetflow", path=str(Path(sys.executable).parent))
    assert exe is not None
    proc = subprocess.run([exe, "validate", str(store)], capture_output=True, text=True)
    assert proc.returncode == 1
    assert victim.relative_to(store).as_posix() in proc.stderr
    assert "checksum mismatch" in proc.stderr


def test_publish_refuses_bad_rows_with_the_table(tmp_path: Path) -> None:
    items = specs(2)
    wd = make_workdir(tmp_path / "wd", items, row_overrides={items[0].dialogue_id: {"n_turns": 9}})
    res = CliRunner().invoke(
        main, ["publish", "--workdir", str(wd), "--store", str(tmp_path / "s")]
    )
    assert isinstance(res.exception, ManifestError)
    assert items[0].dialogue_id in res.exception.table and "n_turns" in res.exception.table
    assert not (tmp_path / "s").exists()


def test_validate_fails_a_release_holding_dialogues_outside_20_to_60_s(tmp_path: Path) -> None:
    """The rendered length is part of the release contract: 13.9 s and 71.4 s dialogues fail
    ``duetflow validate`` (and ``publish`` refuses them under the default settings)."""
    items = specs(4, per_source=1)
    short, long = items[0].dialogue_id, items[1].dialogue_id
    wd = make_workdir(tmp_path / "wd", items, durations={short: 13.9, long: 71.4})
    runner = CliRunner()
    res = runner.invoke(main, ["publish", "--work", str(wd), "--store", str(tmp_path / "s0")])
    assert isinstance(res.exception, ManifestError)
    table = res.exception.table
    assert short in table and long in table and "window.min_s" in table
    # A release made under looser settings (or by older code) can still hold them.
    loose = tmp_path / "loose.yaml"
    loose.write_text("window: {min_s: 5, max_s: 100}\n", encoding="utf-8")
    strict = tmp_path / "default.yaml"
    strict.write_text("{}\n", encoding="utf-8")
    store = tmp_path / "store"
    args = ["publish", "--work", str(wd), "--store", str(store), "--release", "r1"]
    assert runner.invoke(main, [*args, "-c", str(loose)]).exit_code == 0
    # checked against the settings it records, it is valid ...
    res = runner.invoke(main, ["validate", f"{store}/releases/r1"])
    assert res.exit_code == 0, res.output
    # ... against the 20-60 s contract it is not
    res = runner.invoke(main, ["validate", f"{store}/releases/r1", "-c", str(strict)])
    assert res.exit_code == 1
    assert short in res.output and long in res.output and "duration_s" in res.output
    # a release that records no window settings (older code) is held to the defaults
    doc_path = store / "releases" / "r1" / "RELEASE.json"
    doc = json.loads(doc_path.read_text(encoding="utf-8"))
    assert doc["window_config"]["min_s"] == 5
    del doc["window_config"]
    doc_path.write_text(json.dumps(doc), encoding="utf-8")
    res = runner.invoke(main, ["validate", f"{store}/releases/r1"])
    assert res.exit_code == 1 and short in res.output and long in res.output
