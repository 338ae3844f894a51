from __future__ import annotations

from pathlib import Path

from duetflow.manifest import IntakeWriter, iter_dialogues, iter_rejections
from duetflow.model import (
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
