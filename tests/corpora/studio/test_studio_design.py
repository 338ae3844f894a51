"""Studio sessions: topic from the taxonomy, design fields as columns, the opening-line check."""

from __future__ import annotations

from pathlib import Path

from duetflow.config import build_config
from duetflow.corpora.studio import StudioAdapter, opening_line_similarity
from duetflow.records.convert import dialogue_from_rows, dialogue_records, dialogue_to_rows
from duetflow.records.dialogue import DesignFields, Dialogue, Rejection
from studio_helpers import NO_STATE, transcript, write_session

TEXTS = ("Hi, I'd like to plan a weekend trip.", "Sure, where to?", "The lake.")


def _scan(root: Path, **cfg: object) -> Dialogue | Rejection:
    [item] = StudioAdapter(root, NO_STATE, config=build_config(dict(cfg))).scan()
    return item


def test_hm_design_fields_are_columns(tmp_path: Path) -> None:
    write_session(
        tmp_path / "s1",
        "tracks",
        transcript=transcript(TEXTS, timed=True),
        strategy="human_guided_initiation",
    )
    d = _scan(tmp_path)
    assert isinstance(d, Dialogue) and d.topic == "tourism"
    assert d.design == DesignFields(
        source_topic="tourism",
        system_name="s2s",
        system_version="1.0",
        strategy="human_guided_initiation",
        opening_line=TEXTS[0],
    )
    row, _ = dialogue_to_rows(d)
    assert row["system_name"] == "s2s" and row["tts_backend"] is None
    assert dialogue_from_rows(*dialogue_records(d)).design == d.design


def test_hh_sessions_have_no_system(tmp_path: Path) -> None:
    write_session(tmp_path / "s1", "stereo", category="HH", topic="Work")
    d = _scan(tmp_path)
    assert isinstance(d, Dialogue) and d.topic == "work"
    assert (d.design.system_name, d.design.source_topic) == (None, "Work")
    assert d.design.strategy == "role_playing"


def test_a_topic_outside_the_taxonomy_is_rejected(tmp_path: Path) -> None:
    write_session(tmp_path / "s1", "tracks", topic="weekend plans")
    r = _scan(tmp_path)
    assert isinstance(r, Rejection) and r.reason == "unknown_topic"
    assert "'weekend plans'" in r.detail and "session.yaml" in r.detail
    assert "topics.taxonomy" in r.detail
    aliased = _scan(tmp_path, topics={"aliases": {"studio": {"weekend plans": "tourism"}}})
    assert isinstance(aliased, Dialogue) and aliased.topic == "tourism"
    assert aliased.design.source_topic == "weekend plans"


def test_an_empty_topic_is_other(tmp_path: Path) -> None:
    write_session(tmp_path / "s1", "tracks", topic="")
    d = _scan(tmp_path)
    assert isinstance(d, Dialogue) and d.topic == "other" and d.design.source_topic is None


def test_opening_line_similarity() -> None:
    line = "Hi, I'd like to plan a weekend trip."
    assert opening_line_similarity(line, "hi i'd like to plan a weekend trip") == 1.0
    # the human goes on after the line: the prefix still matches
    assert opening_line_similarity(line, line + " Somewhere warm, maybe?") == 1.0
    assert opening_line_similarity(line, "Hi, I would like to plan a weekend trip.") > 0.85
    assert opening_line_similarity(line, "What's the weather like tomorrow?") < 0.5
    assert opening_line_similarity("我们周末去哪儿？", "我们周末去哪儿呀") > 0.9
    assert opening_line_similarity(line, "") == 0.0


def test_an_hm_session_that_does_not_start_with_its_opening_line_is_flagged(
    tmp_path: Path,
) -> None:
    write_session(
        tmp_path / "s1",
        "tracks",
        transcript=transcript(TEXTS, timed=True),
        opening_line="Tell me about your favourite film.",
    )
    r = _scan(tmp_path)
    assert isinstance(r, Rejection) and r.reason == "opening_line_mismatch"
    assert "Tell me about your favourite film." in r.detail and "weekend trip" in r.detail
    lenient = _scan(tmp_path, studio={"opening_line_min_similarity": 0.0})
    assert isinstance(lenient, Dialogue)
    assert lenient.provenance["hm_checks"]["opening_line"] == "passed"


def test_without_transcript_the_opening_line_is_not_checked(tmp_path: Path) -> None:
    write_session(tmp_path / "s1", "tracks")
    d = _scan(tmp_path)
    assert isinstance(d, Dialogue)
    assert d.provenance["hm_checks"]["opening_line"] == "not checked"
