"""process_dialogues / process_workdir / `duetflow process` over a real intake work directory."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq
from click.testing import CliRunner

from duetflow.cli import main
from duetflow.config import build_config
from duetflow.pipeline.commands import process_workdir
from duetflow.pipeline.process import process_dialogues
from duetflow.records.dialogue import MultichannelSource, Rejection, Stage
from duetflow.records.manifest import (
    DIALOGUES,
    REJECTIONS,
    RENDERED_DIALOGUE_SCHEMA,
    RENDERED_TURN_SCHEMA,
    TURNS,
    IntakeWriter,
    iter_records,
    iter_rows,
)
from duetflow.records.rows import RenderedDialogueRow, RenderedTurnRow
from render_signals import make, script


def _intake(tmp: Path) -> tuple[Path, list[str]]:
    """Two good dialogues (multichannel, per-speaker), one with a missing file, one too short,
    and one intake rejection."""
    src = tmp / "src"
    good = make("multichannel", src, items=script(0, n=12), seed=0)
    other = make("per_speaker", src, items=script(1, n=12), seed=1)
    broken = make("multichannel", src, items=script(2, n=12), seed=2)
    broken = replace(broken, source=MultichannelSource(str(src / "gone.wav"), {"A": 0, "B": 1}))
    short = make("mixed_mono", src, items=script(3, n=4), seed=3)
    wd = tmp / "intake"
    with IntakeWriter(wd) as w:
        for d in (good, other, broken, short):
            w.add(d)
        w.add(Rejection("test__bad", Stage.INGEST, "bad_audio", "unreadable", "test", "x.wav"))
    return wd, [good.id, other.id, broken.id, short.id]


def test_process_workdir_accounts_for_every_input(tmp_path: Path) -> None:
    wd, ids = _intake(tmp_path)
    out = tmp_path / "rendered"
    rep = process_workdir(wd, out, build_config({}))
    assert rep.sources == 4 and rep.carried == 1
    assert rep.rendered == 2
    assert rep.units == rep.rendered + rep.rejected  # windows + window-less sources
    assert rep.rejected_by_reason == {"missing_file": 1, "no_window": 1}

    rows = list(iter_rows(out / DIALOGUES))
    turns = list(iter_rows(out / TURNS))
    rejs = list(iter_rows(out / REJECTIONS))
    assert pq.read_schema(out / DIALOGUES).names == RENDERED_DIALOGUE_SCHEMA.names
    assert pq.read_schema(out / TURNS).names == RENDERED_TURN_SCHEMA.names
    assert len(rows) == 2 and len(rejs) == 3
    assert rejs[0]["stage"] == "ingest"  # carried first
    by_reason = {r["reason"]: r for r in rejs}
    assert by_reason["missing_file"]["stage"] == "render"
    assert "gone.wav" in by_reason["missing_file"]["detail"]
    # lockstep turns, hashes of the real files, paths relative to the work directory
    assert [t["dialogue_id"] for t in turns] == sorted(
        (t["dialogue_id"] for t in turns), key=[r["dialogue_id"] for r in rows].index
    )
    for r in rows:
        data = (out / r["audio_path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == r["sha256"]
        assert r["n_turns"] == sum(t["dialogue_id"] == r["dialogue_id"] for t in turns)
        assert r["dialogue_id"].startswith(tuple(ids[:2]))
    stats = json.loads((out / "stats.json").read_text())
    assert stats["total"]["kept"] == 2
    assert stats["total"]["rejected"] == 3


def test_process_is_deterministic(tmp_path: Path) -> None:
    wd, _ = _intake(tmp_path)
    cfg = build_config({"seed": 3})
    process_workdir(wd, tmp_path / "a", cfg)
    process_workdir(wd, tmp_path / "b", cfg)
    for name in (DIALOGUES, TURNS, REJECTIONS, "stats.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    for f in sorted((tmp_path / "a" / "audio").iterdir()):
        assert f.read_bytes() == (tmp_path / "b" / "audio" / f.name).read_bytes()


def test_process_dialogues_shard(tmp_path: Path) -> None:
    src = tmp_path / "src"
    ds = [make("per_turn", src, items=script(5, n=12), seed=5)]
    res = process_dialogues(ds, build_config({}), tmp_path / "shard")
    assert res.sources == 1 and len(res.dialogues) == 1 and not res.rejections
    assert res.units == len(res.dialogues) + len(res.rejections)
    assert len(res.turns) == res.dialogues[0].n_turns
    assert (tmp_path / "shard" / res.dialogues[0].audio_path).exists()
    assert [r["dialogue_id"] for r in iter_rows(tmp_path / "shard" / DIALOGUES)] == [
        res.dialogues[0].dialogue_id
    ]
    # the records returned are what was written: read back from the tables, field for field
    shard = tmp_path / "shard"
    assert list(iter_records(shard / DIALOGUES, RenderedDialogueRow)) == res.dialogues
    assert list(iter_records(shard / TURNS, RenderedTurnRow)) == res.turns
    assert (tmp_path / "shard" / "stats.json").exists()


def test_cli_process(tmp_path: Path) -> None:
    wd, _ = _intake(tmp_path)
    out = tmp_path / "cli"
    result = CliRunner().invoke(main, ["process", "--intake", str(wd), "--workdir", str(out)])
    assert result.exit_code == 0, result.output
    assert "2 rendered" in result.output and "missing_file" in result.output
    assert len(list(iter_rows(out / DIALOGUES))) == 2
    hint = result.output.rstrip().splitlines()[-1]
    assert hint == f"why each was rejected: duetflow rejections {out} [--reason REASON]"
    listed = CliRunner().invoke(main, ["rejections", str(out)])
    assert listed.exit_code == 0, listed.output
    assert "window.min_s = 20.0, window.max_s = 60.0" in listed.output  # no_window
    assert "render/missing_file" in listed.output and "gone.wav" in listed.output
    assert "ingest/bad_audio" in listed.output
