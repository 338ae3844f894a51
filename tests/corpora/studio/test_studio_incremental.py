"""Incremental ingest: unchanged sessions skipped without audio work, changed/new processed."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from duetflow.audio.io import write_audio
from duetflow.config import build_config
from duetflow.corpora.studio import StudioAdapter
from duetflow.pipeline.ingest import ingest
from duetflow.records.dialogue import Dialogue, Rejection
from duetflow.records.manifest import iter_dialogues, iter_rejections
from studio_helpers import SR, tracks, write_session


def _adapter(root: Path, state: Path, **cfg: object) -> StudioAdapter:
    return StudioAdapter(root, {"state_dir": str(state)}, config=build_config(cfg))


def _ids(items: list[Dialogue | Rejection]) -> list[str]:
    return [i.id if isinstance(i, Dialogue) else i.item_id for i in items]


def _three_sessions(root: Path) -> None:
    write_session(root / "day1" / "s1", "tracks", session_id="s1")
    write_session(root / "day1" / "s2", "stereo", "HH", session_id="s2", seed=1)
    write_session(root / "day1" / "s3", "mono", session_id="s3")  # rejected: no timings


def test_rerun_does_no_audio_work_and_new_session_is_processed_alone(tmp_path: Path) -> None:
    root, state = tmp_path / "studio", tmp_path / "state"
    _three_sessions(root)
    first = _adapter(root, state)
    out1 = list(first.scan())
    c = first.counters
    assert (c.sessions, c.new, c.processed, c.unchanged) == (3, 3, 3, 0)
    assert c.audio_reads == 4  # two tracks + two channels; the mono session reads none

    again = _adapter(root, state)
    out2 = list(again.scan())
    c = again.counters
    assert (c.processed, c.unchanged, c.audio_reads, c.bytes_hashed) == (0, 3, 0, 0)
    assert out2 == out1  # re-emitted from the state, identical records

    write_session(root / "day2" / "s4", "tracks", session_id="s4", seed=2)
    third = _adapter(root, state)
    out3 = list(third.scan())
    c = third.counters
    assert (c.new, c.processed, c.unchanged, c.changed) == (1, 1, 3, 0)
    assert c.audio_reads == 2
    assert _ids(out3) == [*_ids(out1), "studio__s4"]


def test_changed_session_is_reingested_touched_one_is_not(tmp_path: Path) -> None:
    root, state = tmp_path / "studio", tmp_path / "state"
    _three_sessions(root)
    list(_adapter(root, state).scan())

    # touched, same bytes: hashed again, not processed
    wav = root / "day1" / "s1" / "a.wav"
    st = wav.stat()
    os.utime(wav, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    touched = _adapter(root, state)
    list(touched.scan())
    assert touched.counters.processed == 0 and touched.counters.bytes_hashed > 0

    # the B track replaced by a quieter take: re-ingested, and only that session
    _a, b = tracks(0)
    write_audio(root / "day1" / "s1" / "b.wav", b * np.float32(0.5), SR)
    changed = _adapter(root, state)
    items = list(changed.scan())
    c = changed.counters
    assert (c.changed, c.processed, c.unchanged, c.audio_reads) == (1, 1, 2, 2)
    assert isinstance(items[0], Dialogue)
    assert items[0].provenance["content_hash"] != ""

    # a fixed sidecar turns a rejection into a dialogue
    shutil.rmtree(root / "day1" / "s3")
    write_session(
        root / "day1" / "s3",
        "mono",
        session_id="s3",
        rttm="SPEAKER s3 1 0.3 1.0 <NA> <NA> user <NA> <NA>\n",
    )
    fixed = _adapter(root, state)
    by_id = {i.id if isinstance(i, Dialogue) else i.item_id: i for i in fixed.scan()}
    assert isinstance(by_id["studio__s3"], Dialogue)
    assert fixed.counters.changed == 1


def test_config_change_force_and_removed_sessions(tmp_path: Path) -> None:
    root, state = tmp_path / "studio", tmp_path / "state"
    _three_sessions(root)
    list(_adapter(root, state).scan())
    other = _adapter(root, state, segment={"crosstalk_margin_db": 8.0})
    list(other.scan())
    assert other.counters.processed == 3  # turn detection depends on the changed threshold

    forced = StudioAdapter(root, {"state_dir": str(state), "force": True})
    list(forced.scan())
    assert forced.counters.processed == 3

    shutil.rmtree(root / "day1" / "s2")
    pruned = _adapter(root, state)
    assert _ids(list(pruned.scan())) == ["studio__s1", "studio__s3"]
    assert pruned.counters.pruned == 1
    assert len(list(state.glob("*.json"))) == 2


def test_corrupt_state_record_is_reprocessed(tmp_path: Path) -> None:
    root, state = tmp_path / "studio", tmp_path / "state"
    write_session(root / "s1", "tracks")
    list(_adapter(root, state).scan())
    [record] = state.glob("*.json")
    record.write_text("{truncated", "utf-8")
    again = _adapter(root, state)
    [item] = again.scan()
    assert isinstance(item, Dialogue) and again.counters.processed == 1


def test_ingest_writes_complete_tables_on_rerun(tmp_path: Path) -> None:
    """Skipped sessions still reach the intake tables: inputs = kept + rejected every night."""
    root, work = tmp_path / "studio", tmp_path / "work"
    _three_sessions(root)
    cfg = build_config({"workdir": str(work)})
    r1 = ingest("studio", root, work / "night1", cfg)
    write_session(root / "day2" / "s4", "tracks", session_id="s4", seed=2)
    r2 = ingest("studio", root, work / "night2", cfg)
    assert (r1.found, r1.kept, r1.rejected) == (3, 2, 1)
    assert (r2.found, r2.kept, r2.rejected) == (4, 3, 1)
    assert r2.by_reason == {"mono_without_diarization": 1}
    kept = [d.id for d in iter_dialogues(work / "night2")]
    assert kept == ["studio__s1", "studio__s2", "studio__s4"]
    assert [r.reason for r in iter_rejections(work / "night2")] == ["mono_without_diarization"]
    # the default state lives in the run's work directory, one folder per studio root
    [state_dir] = (work / "studio_state").iterdir()
    assert len(list(state_dir.glob("*.json"))) == 4
    first = pq.read_table(work / "night1" / "dialogues.parquet").to_pylist()
    second = pq.read_table(work / "night2" / "dialogues.parquet").to_pylist()
    assert second[:2] == first  # re-emitted rows are byte-for-byte the rows of night 1
