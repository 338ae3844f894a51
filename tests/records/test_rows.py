"""Typed records on the read path: Parquet → records → Parquet is lossless, readers stream and
name what is wrong, and the exports' columns follow the record declarations."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from duetflow.errors import ManifestError
from duetflow.licences import UNDECLARED
from duetflow.records.convert import rejection_to_row
from duetflow.records.dialogue import DESIGN_COLUMNS, DesignFields, Rejection, Stage
from duetflow.records.manifest import (
    REJECTION_SCHEMA,
    RENDERED_DIALOGUE_SCHEMA,
    RENDERED_TURN_SCHEMA,
    TableWriter,
    iter_column,
    iter_record_groups,
    iter_records,
    read_rejections,
    write_table,
    zip_lockstep,
)
from duetflow.records.rows import (
    ReleaseDialogueRow,
    RenderedDialogueRow,
    RenderedTurnRow,
    TurnEventRow,
    arrow_schema,
    columns,
)
from duetflow.release import export_hf, export_lhotse
from duetflow.release.layout import RELEASE_DIALOGUE_SCHEMA


def _dialogue(i: int, *, design: DesignFields | None = None) -> RenderedDialogueRow:
    return RenderedDialogueRow(
        dialogue_id=f"d{i:03d}",
        source_id=f"s{i // 2}",
        corpus="toy",
        category="HM" if i % 2 else "HH",
        language="zh" if i % 3 == 0 else "en",
        topic="",  # empty strings must survive as empty strings, not None
        speaker_a=f"a{i}",
        speaker_b=f"b{i}",
        design=design or DesignFields(source_topic=f"topic {i}", opening_line=""),
        audio_path=f"audio/d{i:03d}.flac",
        sha256=f"{i:064x}",
        duration_s=20.0 + i / 7,
        sample_rate=16000,
        num_channels=2,
        n_turns=i % 4,
        loudness_lufs_a=-23.0 - i / 3,
        loudness_lufs_b=-23.5,
        gain_db_a=1.25,
        gain_db_b=-0.5,
        gap_ms_min=None if i % 2 else 180.0,
        gap_ms_max=None if i % 2 else 230.0,
        provenance='{"k":"' + "x" * i + '"}',
        licence="CC-BY-4.0" if i % 2 else "",
        source_sample_rate=44100,
    )


def _turns(d: RenderedDialogueRow) -> list[RenderedTurnRow]:
    return [
        RenderedTurnRow(
            dialogue_id=d.dialogue_id,
            turn_index=k,
            speaker=d.speaker_a if k % 2 == 0 else d.speaker_b,
            kind="backchannel" if k == 2 else "turn",
            start_s=k * 1.5,
            end_s=k * 1.5 + 1.0,
            orig_start_s=10.0 + k,
            orig_end_s=11.0 + k,
            text=f"turn {k} 你好" if k else "",
        )
        for k in range(d.n_turns)
    ]


def _write(
    path: Path, schema: pa.Schema, records: Sequence[RenderedDialogueRow | RenderedTurnRow]
) -> None:
    """One row at a time, in row groups of 3, so the readers cross row-group boundaries."""
    with TableWriter(path, schema, batch_rows=3) as w:
        for r in records:
            w.write([r.to_row()])


def test_records_read_back_equal_to_what_was_written(tmp_path: Path) -> None:
    dialogues = [_dialogue(i) for i in range(11)]
    turns = [t for d in dialogues for t in _turns(d)]
    _write(tmp_path / "d.parquet", RENDERED_DIALOGUE_SCHEMA, dialogues)
    _write(tmp_path / "t.parquet", RENDERED_TURN_SCHEMA, turns)
    assert pq.ParquetFile(tmp_path / "d.parquet").num_row_groups == 4  # really streamed

    assert list(iter_records(tmp_path / "d.parquet", RenderedDialogueRow)) == dialogues
    assert list(iter_records(tmp_path / "t.parquet", RenderedTurnRow)) == turns
    grouped = list(iter_record_groups(tmp_path / "d.parquet", tmp_path / "t.parquet",
                                      RenderedDialogueRow))  # fmt: skip
    assert grouped == [(d, _turns(d)) for d in dialogues]  # n_turns 0 gives an empty list
    assert list(iter_column(tmp_path / "d.parquet", "dialogue_id")) == [
        d.dialogue_id for d in dialogues
    ]


def test_a_record_written_back_gives_the_same_bytes(tmp_path: Path) -> None:
    dialogues = [_dialogue(i) for i in range(7)]
    _write(tmp_path / "a.parquet", RENDERED_DIALOGUE_SCHEMA, dialogues)
    again = list(iter_records(tmp_path / "a.parquet", RenderedDialogueRow))
    _write(tmp_path / "b.parquet", RENDERED_DIALOGUE_SCHEMA, again)
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()


def test_release_rows_carry_split_and_audio_key_after_sha256(tmp_path: Path) -> None:
    row = ReleaseDialogueRow.released(_dialogue(3), "val", "audio/00/key.flac")
    assert (row.split, row.audio_key, row.audio_path) == ("val", *("audio/00/key.flac",) * 2)
    assert set(RELEASE_DIALOGUE_SCHEMA.names) == set(columns(ReleaseDialogueRow))
    names = RELEASE_DIALOGUE_SCHEMA.names
    assert names[names.index("sha256") + 1 : names.index("sha256") + 3] == ["split", "audio_key"]
    _write(tmp_path / "r.parquet", RELEASE_DIALOGUE_SCHEMA, [row])
    assert list(iter_records(tmp_path / "r.parquet", ReleaseDialogueRow)) == [row]


def test_a_table_without_a_declared_column_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "old.parquet"
    table = pq.read_table(_write_one(tmp_path)).drop_columns(["licence", "tts_backend"])
    pq.write_table(table, path)
    with pytest.raises(ManifestError, match=r"old\.parquet.*tts_backend, licence"):
        next(iter_records(path, RenderedDialogueRow))
    with pytest.raises(ManifestError, match=r"old\.parquet.*no column 'x'"):
        next(iter_column(path, "x"))


def _write_one(tmp_path: Path) -> Path:
    _write(tmp_path / "one.parquet", RENDERED_DIALOGUE_SCHEMA, [_dialogue(1)])
    return tmp_path / "one.parquet"


def test_rejections_read_back_as_rejections(tmp_path: Path) -> None:
    rejs = [
        Rejection(f"item{i}", Stage.FILTER, "too_short", f"{i} s", corpus="toy", source_path="p")
        for i in range(5)
    ]
    write_table(tmp_path / "r.parquet", REJECTION_SCHEMA, (rejection_to_row(r) for r in rejs))
    assert list(read_rejections(tmp_path / "r.parquet")) == rejs


def test_zip_lockstep_pairs_children_with_their_parent() -> None:
    parents = ["a", "b", "c", "d"]
    children = [("a", 1), ("a", 2), ("c", 3), ("d", 4), ("d", 5)]
    got = list(zip_lockstep(parents, children, lambda p: p, lambda c: c[0]))
    assert got == [
        ("a", [("a", 1), ("a", 2)]),
        ("b", []),
        ("c", [("c", 3)]),
        ("d", [("d", 4), ("d", 5)]),
    ]


# --- exports follow the records -----------------------------------------------------------------


def test_every_record_column_is_exported_to_lhotse_or_excluded_by_name() -> None:
    turn_cols, dia_cols = set(columns(RenderedTurnRow)), set(columns(ReleaseDialogueRow))
    assert set(export_lhotse.LHOTSE_TURN_NATIVE) <= turn_cols  # no stale names
    assert set(export_lhotse.LHOTSE_DIALOGUE_EXCLUDED) <= dia_cols
    d = ReleaseDialogueRow.released(_dialogue(3), "test", "audio/00/k.flac")
    turn = _turns(d)[1]
    sup = export_lhotse.lhotse_supervision(
        turn, export_lhotse.lhotse_dialogue_custom(d), language=d.language, channel=1, duration=99.0
    )
    custom = set(sup["custom"])
    assert custom == (turn_cols - set(export_lhotse.LHOTSE_TURN_NATIVE)) | (
        dia_cols - set(export_lhotse.LHOTSE_DIALOGUE_EXCLUDED)
    ) | {"turn_events"}  # the turn's events (issue 27), from the event table
    assert set(DESIGN_COLUMNS) <= custom
    assert sup["custom"]["licence"] == "CC-BY-4.0"
    assert (sup["id"], sup["recording_id"], sup["text"], sup["speaker"]) == (
        "d003-0001",
        "d003",
        "turn 1 你好",
        "b3",
    )
    assert (sup["start"], sup["duration"]) == (1.5, 1.0)


def test_a_field_added_to_a_record_reaches_the_lhotse_custom_fields() -> None:
    turn_plus = dataclasses.make_dataclass(
        "TurnPlus", [("pitch_hz", float)], bases=(RenderedTurnRow,), frozen=True
    )
    dia_plus = dataclasses.make_dataclass(
        "DialoguePlus", [("room", str)], bases=(ReleaseDialogueRow,), frozen=True
    )
    d = ReleaseDialogueRow.released(_dialogue(2), "train", "audio/00/k.flac")
    values = {f.name: getattr(d, f.name) for f in dataclasses.fields(ReleaseDialogueRow)}
    d_plus = dia_plus(**values, room="booth 2")
    t = _turns(d)[0]
    t_plus = turn_plus(**{f.name: getattr(t, f.name) for f in dataclasses.fields(t)}, pitch_hz=1.0)
    sup = export_lhotse.lhotse_supervision(
        t_plus, export_lhotse.lhotse_dialogue_custom(d_plus), language="en", channel=0, duration=9.0
    )
    assert sup["custom"]["pitch_hz"] == 1.0
    assert sup["custom"]["room"] == "booth 2"
    assert sup["custom"]["licence"] == UNDECLARED  # the dialogue's licence is empty


def test_hf_turn_fields_and_columns_follow_the_records() -> None:
    turn_fields = [f.name for f in arrow_schema(RenderedTurnRow)]
    assert set(export_hf.HF_TURN_DROPPED_FIELDS) <= set(turn_fields)
    schema, features = export_hf.hf_schema()
    kept = [n for n in turn_fields if n not in export_hf.HF_TURN_DROPPED_FIELDS]
    assert schema.field("turns").type.value_type.names == kept
    assert list(features["turns"]["feature"]) == kept
    dia = [n for n in RELEASE_DIALOGUE_SCHEMA.names if n not in export_hf.HF_DROPPED_COLUMNS]
    assert schema.names == ["audio", export_hf.HF_STEREO, *dia, "turns", "events"]
    event_fields = [f.name for f in arrow_schema(TurnEventRow)]
    kept_events = [n for n in event_fields if n not in export_hf.HF_EVENT_DROPPED_FIELDS]
    assert schema.field("events").type.value_type.names == kept_events
    assert list(features["events"]["feature"]) == kept_events


def test_no_two_records_disagree_on_a_shared_column_type() -> None:
    types = {}
    for record in (RenderedTurnRow, RenderedDialogueRow, ReleaseDialogueRow, TurnEventRow):
        for f in arrow_schema(record):
            assert types.setdefault(f.name, f.type) == f.type, f.name
    assert RENDERED_TURN_SCHEMA.names == list(columns(RenderedTurnRow))
