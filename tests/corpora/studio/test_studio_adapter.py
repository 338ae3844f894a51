"""The studio adapter on real session folders: layouts, sidecar validation, files, timings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from duetflow.audio.io import write_audio
from duetflow.config import build_config
from duetflow.corpora import get_adapter
from duetflow.corpora.studio import StudioAdapter, sidecar_json_schema
from duetflow.corpora.studio.segment import score_turns
from duetflow.errors import ConfigError
from duetflow.records.dialogue import (
    Category,
    Dialogue,
    MixedMonoSource,
    MultichannelSource,
    PerSpeakerSource,
    Rejection,
    Role,
    Turn,
)
from studio_helpers import DURATION, NO_STATE, PLAN, SR, transcript, write_session

TRUTH = [Turn(("user", "system")[w], a, b) for w, a, b in PLAN]


def _scan(root: Path, **cfg: Any) -> list[Dialogue | Rejection]:
    return list(StudioAdapter(root, NO_STATE, config=build_config(cfg)).scan())


def _one(root: Path, **cfg: Any) -> Dialogue | Rejection:
    [item] = _scan(root, **cfg)
    return item


def _rejected(root: Path, **cfg: Any) -> Rejection:
    item = _one(root, **cfg)
    assert isinstance(item, Rejection), item
    return item


def _edit_sidecar(folder: Path, **changes: Any) -> None:
    path = folder / "session.yaml"
    data = yaml.safe_load(path.read_text("utf-8"))
    for k, v in changes.items():
        if v is None:
            data.pop(k, None)
        else:
            data[k] = v
    path.write_text(yaml.safe_dump(data), "utf-8")


def test_registered_under_studio() -> None:
    assert get_adapter("studio") is StudioAdapter
    with pytest.raises(ConfigError, match="unknown option"):
        StudioAdapter(Path("."), {"stat_dir": "x"})


def test_tracks_layout_gives_per_speaker_source_and_vad_turns(tmp_path: Path) -> None:
    folder = write_session(tmp_path / "day1" / "s1", "tracks")
    d = _one(tmp_path)
    assert isinstance(d, Dialogue)
    assert d.id == "studio__s1" and d.source_id == "s1" and d.category is Category.HM
    assert [(s.id, s.role, s.gender) for s in d.speakers] == [
        ("user", Role.HUMAN, "F"),
        ("system", Role.MACHINE, "M"),
    ]
    assert isinstance(d.source, PerSpeakerSource)
    assert d.source.paths == {
        "user": str((folder / "a.wav").resolve()),
        "system": str((folder / "b.wav").resolve()),
    }
    assert d.duration_s == pytest.approx(DURATION)
    score = score_turns(TRUTH, d.turns)
    assert score.f1 == 1.0 and score.median_boundary_error_s <= 0.03
    p = d.provenance
    assert p["turn_source"] == "vad" and p["layout"] == "tracks"
    assert p["session_folder"] == "day1/s1" and p["date"] == "2025-01-02"
    assert p["strategy"] == "role_playing" and p["opening_line"] == "Hello there."
    assert p["system"] == {"name": "s2s", "version": "1.0"}
    assert p["hm_checks"]["identity_disclosure"] == "not checked"
    assert p["hm_checks"]["target_language"] == "not checked"


def test_stereo_layout_gives_multichannel_source(tmp_path: Path) -> None:
    folder = write_session(tmp_path / "s1", "stereo", "HH")
    d = _one(tmp_path)
    assert isinstance(d, Dialogue) and d.category is Category.HH
    assert d.source == MultichannelSource(str((folder / "ab.wav").resolve()), {"p1": 0, "p2": 1})
    truth = [Turn(("p1", "p2")[w], a, b) for w, a, b in PLAN]
    assert score_turns(truth, d.turns).f1 == 1.0
    assert d.provenance["hm_checks"]["identity_disclosure"] == "not applicable"


def test_mono_with_rttm_uses_given_timings(tmp_path: Path) -> None:
    rttm = "".join(
        f"SPEAKER s1 1 {a:.3f} {b - a:.3f} <NA> <NA> {('user', 'system')[w]} <NA> <NA>\n"
        for w, a, b in PLAN
    )
    folder = write_session(tmp_path / "s1", "mono", rttm=";; comment\n" + rttm)
    d = _one(tmp_path)
    assert isinstance(d, Dialogue)
    assert d.source == MixedMonoSource(str((folder / "mix.wav").resolve()), None)
    assert [(t.speaker, t.start, t.end) for t in d.turns] == [
        (t.speaker, t.start, t.end) for t in TRUTH
    ]
    assert d.provenance["turn_source"] == "rttm"


def test_mono_without_timings_is_rejected_not_guessed(tmp_path: Path) -> None:
    write_session(tmp_path / "s1", "mono")
    r = _rejected(tmp_path)
    assert r.reason == "mono_without_diarization" and r.item_id == "studio__s1"
    assert "diarization_backend" in r.detail


def test_mono_with_unloadable_backend_is_rejected_with_cause(tmp_path: Path) -> None:
    write_session(tmp_path / "s1", "mono")
    r = _rejected(
        tmp_path,
        segment={"diarization_backend": "pyannote", "diarization_model": str(tmp_path / "none")},
    )
    assert r.reason == "diarization_failed"
    assert "pyannote" in r.detail


def test_timed_transcript_gives_turns_with_text(tmp_path: Path) -> None:
    texts = ("Hi, shall we plan a trip?", "Sure, where to?", "The lake.")
    write_session(tmp_path / "s1", "tracks", transcript=transcript(texts, timed=True))
    d = _one(tmp_path)
    assert isinstance(d, Dialogue)
    assert [(t.speaker, t.start, t.end, t.text) for t in d.turns] == [
        (t.speaker, t.start, t.end, x) for t, x in zip(TRUTH, texts, strict=True)
    ]
    assert d.provenance["turn_source"] == "transcript"
    assert d.provenance["hm_checks"] == {
        "identity_disclosure": "passed",
        "target_language": "passed",
        "opening_line": "passed",
        "opening_line_similarity": 1.0,
    }


def test_untimed_transcript_text_is_aligned_to_detected_turns(tmp_path: Path) -> None:
    texts = ("Hi, shall we plan a trip?", "Sure, where to?", "The lake.")
    write_session(tmp_path / "s1", "tracks", transcript=transcript(texts))
    d = _one(tmp_path)
    assert isinstance(d, Dialogue) and d.provenance["turn_source"] == "vad"
    assert [t.text for t in d.turns] == list(texts)
    assert d.provenance["transcript_alignment"]["status"] == "aligned"
    assert d.provenance["transcript_alignment"]["unplaced_entries"] == 0


@pytest.mark.parametrize(
    ("changes", "field", "needle"),
    [
        ({"opening_line": None}, "opening_line", "missing field 'opening_line'"),
        ({"mood": "happy"}, "mood", "unknown field 'mood'"),
        ({"category": "HX"}, "category", "'HM' or 'HH'"),
        ({"strategy": "chatting"}, "strategy", "human_guided_initiation"),
        ({"date": "yesterday"}, "date", "'date'"),
        ({"system": None}, "<root>", "must name the S2S system"),
        ({"layout": "stereo"}, "<root>", "one file"),
    ],
)
def test_bad_sidecar_names_the_field(
    tmp_path: Path, changes: dict[str, Any], field: str, needle: str
) -> None:
    folder = write_session(tmp_path / "s1", "tracks")
    _edit_sidecar(folder, **changes)
    r = _rejected(tmp_path)
    assert r.reason == "bad_sidecar"
    assert f"[{field}]" in r.detail and needle in r.detail, r.detail
    assert r.source_path == "s1/session.yaml"
    assert r.item_id == "studio__s1"  # the session id is still readable


def test_unreadable_sidecar_is_named_after_its_folder(tmp_path: Path) -> None:
    folder = write_session(tmp_path / "day 1" / "s1", "tracks")
    (folder / "session.yaml").write_bytes(b"\xff\xfe\x00garbage")
    r = _rejected(tmp_path)
    assert r.reason in {"bad_sidecar", "bad_encoding"}
    assert r.item_id.startswith("studio__day-1-s1")


def test_sidecar_speaker_rules(tmp_path: Path) -> None:
    folder = write_session(tmp_path / "s1", "tracks")
    data = yaml.safe_load((folder / "session.yaml").read_text("utf-8"))
    data["speakers"][1]["role"] = "human"
    (folder / "session.yaml").write_text(yaml.safe_dump(data), "utf-8")
    assert "one human and one machine" in _rejected(tmp_path).detail
    data["speakers"][1].update(role="robot")
    (folder / "session.yaml").write_text(yaml.safe_dump(data), "utf-8")
    assert "speakers.1.role" in _rejected(tmp_path).detail


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    folder = write_session(tmp_path / "s1", "tracks")
    (folder / "session.yaml").write_text("session_id: s1\nspeakers: [\n  - {id: a\n", "utf-8")
    r = _rejected(tmp_path)
    assert r.reason == "bad_sidecar" and "invalid YAML" in r.detail
    assert "session.yaml:" in r.detail


def test_missing_audio_file_is_a_rejection(tmp_path: Path) -> None:
    folder = write_session(tmp_path / "s1", "tracks")
    (folder / "b.wav").unlink()
    r = _rejected(tmp_path)
    assert r.reason == "missing_file" and "b.wav" in r.detail and "system" in r.detail


def test_unreferenced_audio_file_is_a_rejection(tmp_path: Path) -> None:
    folder = write_session(tmp_path / "s1", "tracks")
    write_audio(folder / "third_mic.wav", np.zeros(SR, np.float32), SR)
    (folder / "notes.txt").write_text("ignored: not audio", "utf-8")
    r = _rejected(tmp_path)
    assert r.reason == "unknown_file" and "third_mic.wav" in r.detail


def test_path_escape_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    folder = write_session(root / "s1", "tracks")
    outside = tmp_path / "secret.wav"
    write_audio(outside, np.zeros(SR, np.float32), SR)
    data = yaml.safe_load((folder / "session.yaml").read_text("utf-8"))
    data["speakers"][1]["file"] = "../../secret.wav"
    (folder / "session.yaml").write_text(yaml.safe_dump(data), "utf-8")
    (folder / "b.wav").unlink()
    assert _rejected(root).reason == "path_escape"


def test_corrupt_audio_and_bad_channel(tmp_path: Path) -> None:
    folder = write_session(tmp_path / "s1", "tracks")
    (folder / "b.wav").write_bytes(b"RIFF not really a wav")
    assert _rejected(tmp_path).reason == "bad_audio"
    folder = write_session(tmp_path / "s1", "stereo")
    data = yaml.safe_load((folder / "session.yaml").read_text("utf-8"))
    data["speakers"][1]["channel"] = 3
    (folder / "session.yaml").write_text(yaml.safe_dump(data), "utf-8")
    (folder / "a.wav").unlink()
    (folder / "b.wav").unlink()
    r = _rejected(tmp_path)
    assert r.reason == "wrong_channels" and "channel 3" in r.detail


def test_audio_folder_without_sidecar(tmp_path: Path) -> None:
    write_session(tmp_path / "s1", "tracks")
    (tmp_path / "s2").mkdir()
    write_audio(tmp_path / "s2" / "a.wav", np.zeros(SR, np.float32), SR)
    items = _scan(tmp_path)
    assert isinstance(items[0], Dialogue)
    assert isinstance(items[1], Rejection) and items[1].reason == "missing_sidecar"
    assert items[1].item_id == "studio__s2"


def test_duplicate_session_id(tmp_path: Path) -> None:
    write_session(tmp_path / "a", "tracks")
    write_session(tmp_path / "b", "tracks", seed=1)
    first, second = _scan(tmp_path)
    assert isinstance(first, Dialogue)
    assert isinstance(second, Rejection) and second.reason == "duplicate_id"


def test_given_timings_validated_against_audio(tmp_path: Path) -> None:
    rttm = "SPEAKER s1 1 0.5 1.0 <NA> <NA> user <NA> <NA>\n"
    rttm += f"SPEAKER s1 1 {DURATION - 0.5} 0.9 <NA> <NA> system <NA> <NA>\n"
    write_session(tmp_path / "s1", "mono", rttm=rttm)
    r = _rejected(tmp_path)
    assert r.reason == "bad_timing" and "after the audio's end" in r.detail


@pytest.mark.parametrize(
    ("rttm", "reason", "needle"),
    [
        ("SPEAKER s1 1 0.5 1.0 <NA> <NA> nobody <NA> <NA>\n", "bad_rttm", ":1"),
        ("\nSPEAKER s1 1 zero 1.0 <NA> <NA> user <NA> <NA>\n", "bad_rttm", ":2"),
        ("SPEAKER s1 1 0.5 -1 <NA> <NA> user <NA> <NA>\n", "bad_timing", ":1"),
        (";; nothing here\n", "bad_rttm", "no SPEAKER lines"),
    ],
)
def test_bad_rttm(tmp_path: Path, rttm: str, reason: str, needle: str) -> None:
    write_session(tmp_path / "s1", "mono", rttm=rttm)
    r = _rejected(tmp_path)
    assert r.reason == reason and needle in r.detail, r.detail


def test_bad_transcripts(tmp_path: Path) -> None:
    rows = transcript(("a b c", "d e f", "g h i"), timed=True)
    del rows[1]["start"]
    write_session(tmp_path / "s1", "tracks", transcript=rows)
    r = _rejected(tmp_path)
    assert r.reason == "bad_transcript" and "[turns.1]" in r.detail
    rows = transcript(("a b c", "d e f", "g h i"))
    rows[2]["speaker"] = "ghost"
    write_session(tmp_path / "s1", "tracks", transcript=rows)
    assert "unknown speaker 'ghost'" in _rejected(tmp_path).detail
    (tmp_path / "s1" / "transcript.json").write_text("{not json", "utf-8")
    assert _rejected(tmp_path).reason == "bad_transcript"


def test_track_length_mismatch(tmp_path: Path) -> None:
    folder = write_session(tmp_path / "s1", "tracks")
    write_audio(folder / "b.wav", np.zeros(int((DURATION + 3) * SR), np.float32), SR)
    assert _rejected(tmp_path).reason == "track_length_mismatch"


def test_json_schema_is_published_in_docs() -> None:
    doc = (Path(__file__).parents[3] / "docs" / "studio-sessions.md").read_text("utf-8")
    start = doc.index("```json\n", doc.index("## JSON Schema")) + len("```json\n")
    published = json.loads(doc[start : doc.index("```", start)])
    assert published == sidecar_json_schema()


def test_speaker_ids_are_session_roles_unless_a_participant_is_named(tmp_path: Path) -> None:
    write_session(tmp_path / "s1", "tracks", session_id="s1")
    d = _one(tmp_path)
    assert isinstance(d, Dialogue)
    assert d.provenance["participants"] == {"user": "s1/user", "system": "s1/system"}
    data = yaml.safe_load((tmp_path / "s1" / "session.yaml").read_text("utf-8"))
    data["speakers"][0]["participant"] = "P0173"
    _edit_sidecar(tmp_path / "s1", speakers=data["speakers"])
    d = _one(tmp_path)
    assert isinstance(d, Dialogue)
    assert d.provenance["participants"]["user"] == "P0173"
