"""copy_rows writes the same bytes as copying the records one by one."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from duetflow.errors import ManifestError
from duetflow.records.manifest import RENDERED_TURN_SCHEMA, TableWriter, iter_records
from duetflow.records.rows import RenderedDialogueRow, RenderedTurnRow
from duetflow.release.rowcopy import copy_rows


def _turn(did: str, k: int) -> dict[str, object]:
    row = {name: None for name in RENDERED_TURN_SCHEMA.names}
    row.update(
        dialogue_id=did, turn_index=k, speaker=f"{did}-{'AB'[k % 2]}", kind="turn",
        start_s=k * 1.0, end_s=k * 1.0 + 0.5, text=f"words {k} ü",
    )  # fmt: skip
    return row


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("keep", [True, False])
def test_copy_rows_matches_record_by_record_copy_across_row_groups(
    tmp_path: Path, keep: bool
) -> None:
    src = tmp_path / "src.parquet"
    with TableWriter(src, RENDERED_TURN_SCHEMA, 7) as w:  # source row groups of 7 rows
        for d in range(13):
            w.write([_turn(f"d{d:02d}", k) for k in range(d % 4 + 1)])
    ids = {f"d{d:02d}" for d in range(13) if d % 3 == 0}
    # ground truth: the records, one row at a time, the way publish and pull used to copy them
    expected = tmp_path / "expected.parquet"
    with TableWriter(expected, RENDERED_TURN_SCHEMA, 5) as w:
        for r in iter_records(src, RenderedTurnRow):
            if (r.dialogue_id in ids) == keep:
                w.write([r.to_row()])
    got = tmp_path / "got.parquet"
    with TableWriter(got, RENDERED_TURN_SCHEMA, 5) as w:
        fed = copy_rows(src, RenderedTurnRow, w, ids, keep=keep)
    assert fed == sum(
        1 for r in iter_records(src, RenderedTurnRow) if (r.dialogue_id in ids) == keep
    )
    assert _sha(got) == _sha(expected)


def test_copy_rows_carries_row_group_ends_over_several_sources(tmp_path: Path) -> None:
    srcs = []
    for s in range(3):
        path = tmp_path / f"src{s}.parquet"
        with TableWriter(path, RENDERED_TURN_SCHEMA, 4) as w:
            w.write([_turn(f"s{s}d{d}", k) for d in range(3) for k in range(s + 2)])
        srcs.append(path)
    expected, got = tmp_path / "expected.parquet", tmp_path / "got.parquet"
    with TableWriter(expected, RENDERED_TURN_SCHEMA, 5) as w:
        for path in srcs:
            for r in iter_records(path, RenderedTurnRow):
                w.write([r.to_row()])
    with TableWriter(got, RENDERED_TURN_SCHEMA, 5) as w:
        for path in srcs:
            copy_rows(path, RenderedTurnRow, w, (), keep=False)
    assert _sha(got) == _sha(expected)


def test_copy_rows_names_the_file_that_lacks_a_column(tmp_path: Path) -> None:
    src = tmp_path / "turns.parquet"
    with TableWriter(src, RENDERED_TURN_SCHEMA, 5) as w:
        w.write([_turn("d0", 0)])
    out = TableWriter(tmp_path / "out.parquet", RENDERED_TURN_SCHEMA)
    with pytest.raises(ManifestError, match=r"turns\.parquet: not a RenderedDialogueRow"):
        copy_rows(src, RenderedDialogueRow, out, (), keep=False)
    out.abort()
