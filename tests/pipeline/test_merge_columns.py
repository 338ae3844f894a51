"""The merge of shard work directories and a shard table that lacks a declared column.

The merge copies only the declared columns of each table (``manifest.RENDERED_*_SCHEMA``,
``REJECTION_SCHEMA``); a shard whose table lacks one — wherever the shard sits in the order —
fails with a :class:`ManifestError` that names the shard's file and the missing column, and
leaves neither a merged nor a partial directory behind.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from duetflow.errors import ManifestError
from duetflow.pipeline.cache import StepOutcome
from duetflow.pipeline.merge import merge_workdirs
from duetflow.records import manifest
from duetflow.records.dialogue import DesignFields
from duetflow.records.rows import RejectionRow, RenderedDialogueRow, RenderedTurnRow

SCHEMAS = {
    manifest.DIALOGUES: manifest.RENDERED_DIALOGUE_SCHEMA,
    manifest.TURNS: manifest.RENDERED_TURN_SCHEMA,
    manifest.REJECTIONS: manifest.REJECTION_SCHEMA,
}


def _records(i: int) -> dict[str, list[RenderedDialogueRow | RenderedTurnRow | RejectionRow]]:
    did = f"c__d{i}"
    dialogue = RenderedDialogueRow(
        dialogue_id=did, source_id=f"s{i}", corpus="c", category="HH", language="en",
        topic="weather", speaker_a="a", speaker_b="b", design=DesignFields(),
        audio_path=f"audio/{did}.flac", sha256="0" * 64, duration_s=20.0, sample_rate=16000,
        num_channels=1, n_turns=1, loudness_lufs_a=-23.0, loudness_lufs_b=-23.0,
        gain_db_a=0.0, gain_db_b=0.0, gap_ms_min=None, gap_ms_max=None, provenance="{}",
        licence="CC-BY-4.0", source_sample_rate=16000,
    )  # fmt: skip
    turn = RenderedTurnRow(did, 0, "a", "turn", 0.0, 1.0, 0.0, 1.0, "hello")
    rejection = RejectionRow(f"c__r{i}", "c", "x.wav", "filter", "imbalanced", "")
    return {
        manifest.DIALOGUES: [dialogue],
        manifest.TURNS: [turn],
        manifest.REJECTIONS: [rejection],
    }


def _shard(root: Path, index: int, drop: tuple[str, str] | None = None) -> StepOutcome:
    """A shard work directory with one dialogue, its turn and one rejection (``drop``: the
    (table, column) that shard's file lacks)."""
    root.mkdir(parents=True)
    for name, records in _records(index).items():
        table = pa.Table.from_pylist([r.to_row() for r in records], schema=SCHEMAS[name])
        if drop is not None and drop[0] == name:
            table = table.drop_columns([drop[1]])
        pq.write_table(table, root / name)
    by_reason = {"filter:imbalanced": 1}
    return StepOutcome("process", "c", f"k{index}", str(root), 1, 1, 1, by_reason, index)


def test_complete_shards_merge_every_row_under_the_declared_columns(tmp_path: Path) -> None:
    shards = [_shard(tmp_path / f"s{i}", i) for i in range(2)]
    out = tmp_path / "merged"
    merged = merge_workdirs("c", shards, out, stage="process")
    assert (merged.kept, merged.rejected) == (2, 2)
    for name, schema in SCHEMAS.items():
        table = pq.read_table(out / name)
        assert table.schema.names == schema.names
        assert table.num_rows == 2


@pytest.mark.parametrize(
    ("bad", "table", "column"),
    [
        (1, manifest.DIALOGUES, "gain_db_a"),
        (0, manifest.DIALOGUES, "licence"),  # the first shard's lack is not the merge's schema
        (0, manifest.TURNS, "kind"),
        (1, manifest.REJECTIONS, "reason"),
    ],
)
def test_a_shard_missing_a_column_fails_naming_the_file_and_column(
    tmp_path: Path, bad: int, table: str, column: str
) -> None:
    shards = [
        _shard(tmp_path / f"s{i}", i, (table, column) if i == bad else None) for i in range(2)
    ]
    out = tmp_path / "merged"
    with pytest.raises(ManifestError) as err:
        merge_workdirs("c", shards, out, stage="process")
    message = str(err.value)
    assert str(tmp_path / f"s{bad}" / table) in message
    assert f"missing column(s) {column}" in message
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s0", "s1"]  # no partial left
