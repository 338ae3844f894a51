from __future__ import annotations

from pathlib import Path

from duetflow.records.dialogue import (
    Category,
    Dialogue,
    MultichannelSource,
    PerTurnSource,
    Rejection,
    Speaker,
    Stage,
    Turn,
    TurnKind,
    dialogue_id,
    window_id,
)
from duetflow.records.manifest import IntakeWriter, iter_dialogues, iter_rejections


def _dialogue(i: int, n_turns: int) -> Dialogue:
    turns = tuple(
        Turn(
            speaker="A" if k % 2 == 0 else "B",
            start=k * 2.0,
            end=k * 2.0 + 1.5,
            text=f"turn {k}",
            kind=TurnKind.TURN,
            labels={"emotion": "neutral"},
        )
        for k in range(n_turns)
    )
    source = (
        MultichannelSource(path=f"/x/{i}.wav", channels={"A": 0, "B": 1})
        if i % 2
        else PerTurnSource(paths=tuple(f"/x/{i}_{k}.wav" for k in range(n_turns)))
    )
    return Dialogue(
        id=dialogue_id("test", f"d{i}"),
        corpus="test",
        source_id=f"d{i}",
        category=Category.HH,
        language="en",
        topic="t",
        speakers=(Speaker("A", gender="F"), Speaker("B", gender="M")),
        turns=turns,
        source=source,
        duration_s=n_turns * 2.0,
        provenance={"k": [1, 2]},
    )


def test_roundtrip_streaming_including_empty_dialogues(tmp_path: Path) -> None:
    ds = [_dialogue(i, n) for i, n in enumerate([3, 0, 5, 0, 0, 2])]
    with IntakeWriter(tmp_path) as w:
        for d in ds:
            w.add(d)
        w.add(
            Rejection("test__bad", Stage.INGEST, "bad_audio", "x.wav: truncated", "test", "x.wav")
        )
    back = list(iter_dialogues(tmp_path))
    assert back == ds
    rej = list(iter_rejections(tmp_path))
    assert [r.reason for r in rej] == ["bad_audio"]


def test_ids_are_stable_and_file_safe() -> None:
    assert dialogue_id("iemocap", "Ses01F_impro01") == "iemocap__Ses01F_impro01"
    weird = dialogue_id("x", "a/b c")
    assert "/" not in weird and weird == dialogue_id("x", "a/b c")
    assert window_id("x__d1", 2, 12.3456) == "x__d1__w002_00012346"


def test_write_arrow_writes_the_bytes_the_row_path_writes(tmp_path: Path) -> None:
    """Merging copies row groups as Arrow tables: the file must equal the one written from the
    same rows as dicts (same row-group borders: a flush once ``batch_rows`` are buffered)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from duetflow.records.manifest import REJECTION_SCHEMA, TableWriter

    rows = [
        {"item_id": f"c__d{i}", "corpus": "c", "source_path": f"d{i}.wav" if i % 3 else None,
         "stage": "render", "reason": "too_short" if i % 2 else "overlap", "detail": "{}"}
        for i in range(11)
    ]  # fmt: skip
    chunks = [rows[0:3], rows[3:5], rows[5:10], rows[10:]]
    with TableWriter(tmp_path / "rows.parquet", REJECTION_SCHEMA, batch_rows=4) as w:
        for c in chunks:
            w.write(c)
    with TableWriter(tmp_path / "arrow.parquet", REJECTION_SCHEMA, batch_rows=4) as w:
        for c in chunks:
            w.write_arrow(pa.Table.from_pylist(c, schema=REJECTION_SCHEMA))
    with TableWriter(tmp_path / "mixed.parquet", REJECTION_SCHEMA, batch_rows=4) as w:
        for i, c in enumerate(chunks):
            w.write(c) if i % 2 else w.write_arrow(pa.Table.from_pylist(c, schema=REJECTION_SCHEMA))
    expected = (tmp_path / "rows.parquet").read_bytes()
    assert pq.ParquetFile(tmp_path / "rows.parquet").num_row_groups == 3  # 5 + 5 + 1 rows
    assert (tmp_path / "arrow.parquet").read_bytes() == expected
    assert (tmp_path / "mixed.parquet").read_bytes() == expected
    assert pq.read_table(tmp_path / "mixed.parquet").to_pylist() == rows
