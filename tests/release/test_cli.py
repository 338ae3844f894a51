"""The publish / releases / validate / pull commands."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from release_fixtures import make_workdir, specs

from duetflow.cli import main
from duetflow.errors import ManifestError


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
