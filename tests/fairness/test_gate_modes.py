"""The release gate ``release.cue_parity: off | warn | fail`` through a real publish.

The work directories are written for real (tests/release_fixtures.py); the planted
difference is the duration: PH dialogues 30 s, HH 20.5 s (each with a little spread).
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from duetflow.cli import main
from duetflow.config import RunConfig
from duetflow.fairness.gate import CueParityError
from duetflow.hashing import sha256_file
from duetflow.release.layout import list_releases, release_json_key
from duetflow.release.publish import publish
from duetflow.release.pull import pull
from duetflow.report import build_report, release_report
from duetflow.storage import open_store
from release_fixtures import make_workdir, specs

N = 8


def _workdirs(root: Path, ph_s: float) -> list[Path]:
    hh = specs(N, prefix="hh", category="HH")
    ph = specs(N, prefix="ph", category="PH")
    durations = {s.dialogue_id: 20.5 + 0.1 * i for i, s in enumerate(hh)}
    durations.update({s.dialogue_id: ph_s + 0.1 * i for i, s in enumerate(ph)})
    return [
        make_workdir(root / "hh", hh, durations=durations),
        make_workdir(root / "ph", ph, durations=durations),
    ]


def _cfg(mode: str) -> RunConfig:
    return RunConfig.model_validate({"release": {"cue_parity": mode}})


def test_off_audits_nothing(tmp_path: Path) -> None:
    info = publish(_workdirs(tmp_path, 30.0), str(tmp_path / "store"), _cfg("off"))
    doc = json.loads((tmp_path / "store" / release_json_key(info.release_id)).read_text())
    assert not [o for o in doc["objects"] if "/cues/" in o["key"]]
    assert info.cue_parity == () and "cue_parity" not in doc["counts"]


def test_warn_publishes_and_names_the_failing_cues(tmp_path: Path) -> None:
    store = tmp_path / "store"
    info = publish(_workdirs(tmp_path, 30.0), str(store), _cfg("warn"), report=release_report)
    assert any("en HH-PH: duration_s" in line for line in info.cue_parity), info.cue_parity
    rel = store / "releases" / info.release_id
    doc = json.loads((rel / "RELEASE.json").read_text())
    assert doc["counts"]["cue_parity"]["passed"] is False
    # the cue table and its summary are release objects, checksummed like every other
    objects = {o["key"]: o["sha256"] for o in doc["objects"]}
    for name in ("cues.parquet", "summary.json", "summary.md"):
        key = f"releases/{info.release_id}/cues/{name}"
        assert objects[key] == sha256_file(store / key)
    table = pq.read_table(rel / "cues" / "cues.parquet")
    assert table.num_rows == 2 * N and "bandwidth_speech_hz" in table.column_names
    # voice cues measured from the audio stay measured (only the manifest's own, DNSMOS, are
    # read from the row: NaN here, where quality.dnsmos is off)
    for name in ("bandwidth_speech_hz", "snr_unweighted_db", "peak_dbfs", "band_edge_hz"):
        assert all(v is not None and v == v for v in table.column(name).to_pylist()), name
    summary = json.loads((rel / "cues" / "summary.json").read_text())
    assert {f["cue"] for f in summary["verdict"]["failures"]} >= {"duration_s"}
    # the report shows the table and names the failing cue
    card = (rel / "report" / "README.md").read_text()
    assert "## Cue parity" in card and "cue parity FAILS: en HH-PH: duration_s" in card
    assert (rel / "report" / "plots" / "cues.png").is_file()
    # a report drawn later from the release folder reads the same table back
    again = build_report(rel, tmp_path / "again", audio_sample=0)
    assert again.data.cue_audit is not None
    assert "duration_s" in again.data.cue_audit.verdict.failing_cues()
    assert "cue-parity" in again.html.read_text()


def test_fail_refuses_the_release(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with pytest.raises(CueParityError, match=r"en HH-PH: duration_s .*cue_parity: warn"):
        publish(_workdirs(tmp_path, 30.0), str(store), _cfg("fail"))
    assert not store.exists() or list_releases(open_store(str(store))) == []


def test_fail_publishes_when_nothing_tells_the_categories_apart(tmp_path: Path) -> None:
    """The same material in both categories: the strict gate lets the release through."""
    wds = _workdirs(tmp_path, 20.5)  # same durations as HH
    info = publish(wds, str(tmp_path / "store"), _cfg("fail"))
    assert not any("FAILS" in line for line in info.cue_parity), info.cue_parity


def test_publish_and_audit_commands_print_the_failing_cue(tmp_path: Path) -> None:
    wds = _workdirs(tmp_path, 30.0)
    cfg = tmp_path / "config.yaml"
    cfg.write_text("release:\n  cue_parity: warn\n")
    store = tmp_path / "store"
    args = ["publish", "--store", str(store), "-c", str(cfg)]
    for wd in wds:
        args += ["--workdir", str(wd)]
    res = CliRunner().invoke(main, args, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "cue parity FAILS: en HH-PH: duration_s" in res.output
    res = CliRunner().invoke(main, ["audit", str(store)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "| en | HH-PH | 8/8 |" in res.output and "duration_s" in res.output
    with pytest.raises(CueParityError):
        CliRunner().invoke(main, ["audit", str(store), "--mode", "fail"], catch_exceptions=False)
    # a folder made by `duetflow pull` (every split pulled into it) gives the same table
    dest = tmp_path / "pulled"
    for split in ("train", "val", "test"):
        pull(str(store), "latest", split, dest)
    again = CliRunner().invoke(main, ["audit", str(dest)], catch_exceptions=False)
    assert again.exit_code == 0, again.output
    table = [line for line in res.output.splitlines() if line.startswith("| en | HH-PH")]
    assert table and table == [
        line for line in again.output.splitlines() if line.startswith("| en | HH-PH")
    ]
