"""Lazy validation of rendered work directories: every failure in one readable table."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from duetflow.config import build_config
from duetflow.errors import ManifestError
from duetflow.records.dialogue import DESIGN_COLUMNS
from duetflow.records.manifest import RENDERED_TURN_SCHEMA, TURNS, iter_rows, write_table
from duetflow.records.rows import DNSMOS_COLUMNS
from duetflow.release.failures import schema_failures
from duetflow.release.table_schemas import dialogue_schema, release_index_schema
from duetflow.release.workdir_checks import collect_workdir_failures, validate_workdir
from release_fixtures import make_workdir, specs


def test_valid_workdir_passes(tmp_path: Path) -> None:
    wd = make_workdir(tmp_path / "wd", specs(3))
    validate_workdir(wd)
    assert collect_workdir_failures(wd) == []


def test_bad_rows_reported_together_as_a_table(tmp_path: Path) -> None:
    items = specs(6)
    ids = [s.dialogue_id for s in items]
    wd = make_workdir(
        tmp_path / "wd",
        items,
        row_overrides={
            ids[0]: {"category": "XX"},
            ids[1]: {"loudness_lufs_b": -26.0},  # 3 LU apart, tolerance 0.5
            ids[2]: {"gap_ms_max": 400.0},
            ids[3]: {"sha256": "f" * 64},
            ids[4]: {"duration_s": 1.0},  # the last turn ends at 1.2 s; the file lasts 20.5 s
            ids[5]: {"speaker_b": "somebody-else"},
        },
    )
    with pytest.raises(ManifestError) as exc:
        validate_workdir(wd)
    table = exc.value.table
    got = {(f.row_id, f.column) for f in collect_workdir_failures(wd)}
    assert (ids[0], "category") in got
    assert (ids[1], "loudness_lufs_b") in got
    assert (ids[2], "gap_ms_max") in got
    assert (ids[3], "sha256") in got
    assert (ids[4], "duration_s") in got  # audio header disagrees
    assert (f"{ids[4]}#2", "end_s") in got  # a turn outside the audio
    assert (ids[5], "speaker_b") in got  # speaker B has no turns
    assert (f"{ids[5]}#1", "speaker") in got  # a turn by neither A nor B
    header = table.splitlines()[0].split()
    assert header == ["table", "row", "id", "column", "check", "value"]
    assert "XX" in table and "-26" in table and "400" in table
    assert str(exc.value).startswith(str(wd))


def test_turn_checks_start_end_gaps_and_dialogue_exists(tmp_path: Path) -> None:
    wd = make_workdir(tmp_path / "wd", specs(2))
    turns = list(iter_rows(wd / TURNS))
    turns[0]["end_s"] = 0.0  # start == end
    turns[1]["start_s"] = 0.9  # gap A→B of 600 ms (window 180–230)
    turns[1]["end_s"] = 0.95
    turns.append({**turns[-1], "dialogue_id": "ghost", "turn_index": 0})
    write_table(wd / TURNS, RENDERED_TURN_SCHEMA, turns)
    failures = collect_workdir_failures(wd)
    checks = {(f.row_id, f.check) for f in failures}
    did = turns[0]["dialogue_id"]
    assert (f"{did}#0", "start_lt_end") in checks
    assert any(r == f"{did}#1" and "speaker-change gap" in c for r, c in checks)
    assert ("ghost#0", "dialogue_exists") in checks


def test_gap_window_follows_config(tmp_path: Path) -> None:
    wd = make_workdir(tmp_path / "wd", specs(1))
    narrow = build_config({"render": {"gap_ms_min": 250, "gap_ms_max": 300}}, environ={})
    failures = collect_workdir_failures(wd, narrow)
    assert {f.column for f in failures} >= {"gap_ms_min", "start_s"}


def test_missing_file_and_missing_audio(tmp_path: Path) -> None:
    wd = make_workdir(tmp_path / "wd", specs(2))
    audio = next((wd / "audio").iterdir())
    audio.unlink()
    failures = collect_workdir_failures(wd)
    assert [f.check for f in failures if f.table == "audio"] == ["missing_file"]
    (wd / TURNS).unlink()
    assert [f.check for f in collect_workdir_failures(wd)] == ["file_exists"]


def test_duplicate_ids_and_escaping_audio_path(tmp_path: Path) -> None:
    items = specs(2)
    wd = make_workdir(
        tmp_path / "wd",
        items,
        row_overrides={items[1].dialogue_id: {"audio_path": "../outside.flac"}},
    )
    failures = collect_workdir_failures(wd)
    assert any(
        f.column == "audio_path" and f.check == "relative_path_inside_root" for f in failures
    )


def test_release_index_schema_checks_key_and_disjoint_groups() -> None:
    sha = "ab" + "0" * 62
    base = {
        "dialogue_id": "d1", "source_id": "s1", "corpus": "c", "category": "HH",
        "language": "en", "topic": "", "speaker_a": "a", "speaker_b": "b",
        "audio_path": f"audio/ab/{sha}.flac", "sha256": sha, "duration_s": 30.0,
        "sample_rate": 16000, "num_channels": 1, "n_turns": 2, "loudness_lufs_a": -23.0,
        "loudness_lufs_b": -23.0, "gain_db_a": 0.0, "gain_db_b": 0.0, "gap_ms_min": 200.0,
        "gap_ms_max": 210.0, "provenance": "{}", "split": "train",
        "audio_key": f"audio/ab/{sha}.flac", "licence": "CC-BY-4.0", "source_sample_rate": 8000,
        "stereo_path": None, "stereo_sha256": None, "voice_cloned": False,  # issue 27
        "reference_speaker_a": None, "reference_speaker_b": None,
        **dict.fromkeys(DESIGN_COLUMNS),
        **dict.fromkeys(DNSMOS_COLUMNS, 3.0),  # issue 29
    }  # fmt: skip
    rows = [
        base,
        {**base, "dialogue_id": "d2", "split": "test"},  # same source, other split
        {**base, "dialogue_id": "d3", "source_id": "s3", "audio_key": f"audio/cd/{sha}.flac"},
    ]
    df = pd.DataFrame(rows).astype({"sample_rate": "int32", "num_channels": "int32",
                                    "n_turns": "int32", "source_sample_rate": "int32"})  # fmt: skip
    failures = schema_failures(
        release_index_schema(), df, "dialogues", lambda i: rows[i]["dialogue_id"]
    )
    got = {(f.row_id, f.check) for f in failures}
    assert ("d3", "audio_key_matches_sha256") in got
    assert any(r == "d2" and "share one split" in c for r, c in got)
    assert schema_failures(dialogue_schema(), df.iloc[[0]], "d", str) == []
    # DNSMOS lies on the MOS scale (issue 29); null is fine (quality.dnsmos off)
    off = (
        df.iloc[[0]]
        .assign(**dict.fromkeys(DNSMOS_COLUMNS, None))
        .astype(dict.fromkeys(DNSMOS_COLUMNS, "float64"))
    )
    assert schema_failures(dialogue_schema(), off, "d", str) == []
    bad = schema_failures(dialogue_schema(), df.iloc[[0]].assign(dnsmos_ovrl=6.0), "d", str)
    assert [(f.column, f.check) for f in bad] == [("dnsmos_ovrl", "in_range(1.0, 5.0)")]


def test_acoustic_gaps_and_holes_measured_on_the_audio(tmp_path: Path) -> None:
    """The rows say 200 ms; one file's pause really is 80 ms, another's holds digital zeros
    although its provenance says room tone was laid: both are reported, from the audio."""
    import json

    import numpy as np

    from duetflow.audio.io import write_audio
    from duetflow.hashing import sha256_file
    from duetflow.release.workdir_checks import collect_workdir_failures

    items = specs(3, per_source=1)
    wd = make_workdir(
        tmp_path / "wd",
        items,
        row_overrides={
            items[2].dialogue_id: {
                "provenance": json.dumps({"room_tone": {"used": True, "floor_dbfs": -60.0}})
            }
        },
    )
    assert not collect_workdir_failures(wd, build_config({}))
    from release_fixtures import SR as sr

    d = pd.read_parquet(wd / "dialogues.parquet")
    short, holed = d.iloc[1], d.iloc[2]
    from release_fixtures import fixture_samples

    rng = np.random.default_rng(0)
    x = fixture_samples(str(short.dialogue_id))
    x[int(0.3 * sr) : int(1.0 * sr)] = 0.001 * rng.standard_normal(int(0.7 * sr))
    b0 = int(0.38 * sr)  # B starts 80 ms after A ends, rows still say 0.5 s
    x[b0 : int(0.8 * sr)] += 0.1 * rng.standard_normal(int(0.8 * sr) - b0).astype(np.float32)
    write_audio(wd / short.audio_path, x, sr)
    y = fixture_samples(str(holed.dialogue_id))
    y[int(0.85 * sr) : int(0.95 * sr)] = 0.0  # a hole in the pause between B and A
    write_audio(wd / holed.audio_path, y, sr)
    for row in (short, holed):
        d.loc[d.dialogue_id == row.dialogue_id, "sha256"] = sha256_file(wd / row.audio_path)
    d.to_parquet(wd / "dialogues.parquet")
    failures = collect_workdir_failures(wd, build_config({}))
    checks = {(f.row_id.split("#")[0], f.check.split(" (")[0].split(" in [")[0]) for f in failures}
    assert (short.dialogue_id, "acoustic gap") in checks, failures
    assert (holed.dialogue_id, "no digital zeros in a pause with room tone") in checks, failures
    assert {f.table for f in failures} == {"audio"}
    assert not collect_workdir_failures(wd, build_config({}), audio_sample=0)
