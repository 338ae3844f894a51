"""Turn-taking events (issue 27 item 2): the classes on a constructed dialogue, and the event
table through publish, pull, validate and both exports (read back with lhotse and datasets).

Ground truth of the constructed dialogue is written by hand from its timeline (which party
holds the floor, who comes in where, with what words), not computed by the code under test.
"""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import lhotse
import pyarrow.parquet as pq
import pytest

from duetflow.config import TurnsConfig
from duetflow.records.rows import RenderedTurnRow, TurnEventRow
from duetflow.release.events import EVENT_SCHEMA
from duetflow.release.export_hf import export_hf
from duetflow.release.export_lhotse import export_lhotse
from duetflow.release.publish import publish
from duetflow.release.pull import open_release, pull
from duetflow.release.validate import validate_release
from duetflow.turntaking.events import EVENT_KINDS, dialogue_events
from release_fixtures import make_workdir, specs


def _turn(i: int, spk: str, start: float, end: float, text: str, kind: str = "turn"):
    return RenderedTurnRow("dlg", i, spk, kind, start, end, start + 10, end + 10, text)


#: A talks 0-2 s (B says "mm-hm" at 0.8 and tries "wait, what about the budget" at 1.3 while A
#: talks on); 200 ms later B takes the floor until 4.0; A comes in 150 ms before B's end
#: (terminal overlap) and talks to 6.0; B breaks in at 4.5, 1.5 s before A's end, and holds the
#: floor to 7.0 (interruption); A laughs at 7.3 (marked non-speech) and answers at 7.2-8.0.
TURNS = [
    _turn(0, "A", 0.0, 2.0, "so the plan for the quarter is to hire two more people"),
    _turn(1, "B", 0.8, 1.1, "mm-hm", kind="backchannel"),
    _turn(2, "B", 1.3, 1.6, "wait, what about the budget"),
    _turn(3, "B", 2.2, 4.0, "I think we should wait until the numbers are in"),
    _turn(4, "A", 3.85, 6.0, "sure that works for me but then we need a plan for the spring"),
    _turn(5, "B", 4.5, 7.0, "no listen the spring is already planned out in detail"),
    _turn(6, "A", 7.2, 8.0, "okay then"),
    _turn(7, "A", 7.3, 7.6, "[LAUGHTER]", kind="nonspeech"),
]
#: (event, speaker, start, end, own turn, other turn, offset)
TRUTH = [
    ("turn", "A", 0.0, 2.0, 0, None, None),
    ("backchannel", "B", 0.8, 1.1, 1, 0, None),
    ("non_floor_interruption", "B", 1.3, 1.6, 2, 0, None),
    ("gap", "B", 2.0, 2.2, 3, 0, 0.2),
    ("turn", "B", 2.2, 4.0, 3, None, None),
    ("turn", "A", 3.85, 6.0, 4, None, None),
    ("terminal_overlap", "A", 3.85, 4.0, 4, 3, None),
    ("gap", "A", 3.85, 4.0, 4, 3, -0.15),
    ("turn", "B", 4.5, 7.0, 5, None, None),
    ("interruption", "B", 4.5, 6.0, 5, 4, None),
    ("gap", "B", 4.5, 6.0, 5, 4, -1.5),
    ("gap", "A", 7.0, 7.2, 6, 5, 0.2),
    ("turn", "A", 7.2, 8.0, 6, None, None),
    ("nonspeech", "A", 7.3, 7.6, 7, None, None),
]


def test_events_of_a_constructed_dialogue_match_its_timeline() -> None:
    events = dialogue_events(TURNS, TurnsConfig())
    got = [(e.event, e.speaker, e.start_s, e.end_s, e.turn_index, e.other_turn_index,
            e.offset_s) for e in events]  # fmt: skip
    assert got == TRUTH
    assert [e.event_index for e in events] == list(range(len(TRUTH)))
    assert {e.event for e in events} == set(EVENT_KINDS)  # every class at least once


def test_events_follow_the_turn_settings() -> None:
    """Timing alone (no transcript cues): the bid inside A's turn is a backchannel; a wider
    terminal window makes B's break-in at 1.5 s before A's end a terminal overlap."""
    no_cues = dialogue_events(TURNS, TurnsConfig(transcript_cues=False))
    assert [e.event for e in no_cues if e.turn_index == 2] == ["backchannel"]
    wide = dialogue_events(TURNS, TurnsConfig(terminal_overlap_s=2.0))
    assert [e.event for e in wide if e.turn_index == 5] == ["turn", "terminal_overlap", "gap"]


def test_no_turns_no_events() -> None:
    assert dialogue_events([], TurnsConfig()) == []


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("events")
    wd = make_workdir(tmp / "work", specs(8, per_source=1))
    publish([wd], str(tmp / "store"), None)
    return tmp / "store", wd


def _truth(did: str) -> list[tuple[str, str, float, float, int, int | None, float | None]]:
    """The fixture's timeline (release_fixtures._turns): A 0-0.3, B 0.5-0.8, A 1.0-1.2."""
    a, b = f"{did}-A", f"{did}-B"
    return [
        ("turn", a, 0.0, 0.3, 0, None, None),
        ("gap", b, 0.3, 0.5, 1, 0, 0.2),
        ("turn", b, 0.5, 0.8, 1, None, None),
        ("gap", a, 0.8, 1.0, 2, 1, 0.2),
        ("turn", a, 1.0, 1.2, 2, None, None),
    ]


def test_the_release_publishes_pulls_and_validates_its_event_table(
    released: tuple[Path, Path], tmp_path: Path
) -> None:
    store, _ = released
    (rid,) = [p.name for p in (store / "releases").iterdir() if p.is_dir()]
    doc = json.loads((store / "releases" / rid / "RELEASE.json").read_text())
    key = f"releases/{rid}/manifests/events.parquet"
    assert key in {o["key"] for o in doc["objects"]} and doc["manifests"]["events"] == key
    assert doc["turns_config"] == TurnsConfig().model_dump(mode="json")
    table = pq.read_table(store / key)
    assert table.schema.equals(EVENT_SCHEMA)
    dids = sorted(s.dialogue_id for s in specs(8, per_source=1))
    rows = table.to_pylist()
    assert doc["counts"]["events"] == len(rows) == 5 * len(dids)
    for did in dids:
        mine = [
            (r["event"], r["speaker"], r["start_s"], r["end_s"], r["turn_index"],
             r["other_turn_index"], r["offset_s"])
            for r in rows if r["dialogue_id"] == did
        ]  # fmt: skip
        assert mine == _truth(did)
    assert validate_release(str(store)) == []

    res = pull(str(store), split="train", dest=tmp_path / "d")
    train = set(pq.read_table(res.manifest).column("dialogue_id").to_pylist())
    assert train and train < set(dids)
    pulled = pq.read_table(tmp_path / "d" / "events.parquet").to_pylist()
    assert {r["dialogue_id"] for r in pulled} == train
    rel = open_release(str(store), cache_dir=tmp_path / "cache", splits=("train",))
    assert set(rel.events["dialogue_id"]) == train and len(rel.events) == 5 * len(train)


def test_a_tampered_event_table_fails_validation(
    released: tuple[Path, Path], tmp_path: Path
) -> None:
    """Rows that are not the turns' events fail, even with a RELEASE.json that lists the
    tampered bytes (the checksum alone would pass)."""
    import shutil

    from duetflow.hashing import sha256_file

    store = tmp_path / "store"
    shutil.copytree(released[0], store)
    (rid,) = [p.name for p in (store / "releases").iterdir() if p.is_dir()]
    path = store / "releases" / rid / "manifests" / "events.parquet"
    table = pq.read_table(path).to_pylist()
    table[1]["event"] = "interruption"
    pq.write_table(pq.read_table(path).from_pylist(table, schema=EVENT_SCHEMA), path)
    rj = store / "releases" / rid / "RELEASE.json"
    doc = json.loads(rj.read_text())
    for o in doc["objects"]:
        if o["key"].endswith("manifests/events.parquet"):
            o["sha256"], o["size"] = sha256_file(path), path.stat().st_size
    rj.write_text(json.dumps(doc))
    problems = validate_release(str(store))
    assert [p.key for p in problems] == [f"releases/{rid}/manifests/events.parquet"]
    assert "not the events of the turns" in problems[0].problem


def test_lhotse_supervisions_and_hf_rows_carry_the_events(
    released: tuple[Path, Path], tmp_path: Path
) -> None:
    store, _ = released
    dest = tmp_path / "d"
    for split in ("train", "val", "test"):
        pull(str(store), split=split, dest=dest)
    paths = export_lhotse(dest, tmp_path / "lhotse")
    n = 0
    for rec_path, sup_path in paths.values():
        recs = lhotse.load_manifest(rec_path)
        sups = lhotse.load_manifest(sup_path)
        lhotse.validate_recordings_and_supervisions(recs, sups)
        for s in sups:
            did, idx = s.recording_id, int(s.id.rsplit("-", 1)[1])
            want = [
                {"event": e, "speaker": spk, "start_s": a, "end_s": b, "other_turn_index": o,
                 "offset_s": off}
                for e, spk, a, b, t, o, off in _truth(did) if t == idx
            ]  # fmt: skip
            assert s.custom["turn_events"] == want
            n += 1
    assert n == 3 * 8

    export_hf(dest, tmp_path / "hf")
    ds = datasets.load_dataset(str(tmp_path / "hf"))
    seen = 0
    for split in ds:
        part = ds[split].remove_columns("audio")
        assert isinstance(part.features["events"], datasets.List)
        for row in part:
            got = [(e["event"], e["speaker"], e["start_s"], e["end_s"], e["turn_index"],
                    e["other_turn_index"], e["offset_s"]) for e in row["events"]]  # fmt: skip
            assert got == _truth(row["dialogue_id"])
            seen += 1
    assert seen == 8


def test_event_rows_are_typed_records() -> None:
    row = dialogue_events(TURNS, TurnsConfig())[0]
    assert isinstance(row, TurnEventRow)
    assert list(row.to_row()) == EVENT_SCHEMA.names
