"""Transcript text on detected turns (issue 29): placed by content and time, never lost silently."""

from __future__ import annotations

from pathlib import Path

from duetflow.corpora.studio import StudioAdapter
from duetflow.corpora.studio.transcript import TranscriptTurn, align_text, attach_text
from duetflow.records.dialogue import Dialogue, Rejection, Turn, TurnKind
from studio_helpers import NO_STATE, transcript, write_session

IDS = ("user", "system")
LONG = "I was thinking we could go somewhere quiet this weekend with the whole family."
SHORT = "Okay."


def _t(speaker: str, text: str, kind: TurnKind = TurnKind.TURN) -> TranscriptTurn:
    return TranscriptTurn(speaker=speaker, text=text, kind=kind)


def test_equal_counts_place_every_entry_on_its_own_turn() -> None:
    entries = [_t("user", LONG), _t("system", "Sure."), _t("user", SHORT)]
    turns = [Turn("user", 0.5, 4.5), Turn("system", 4.8, 5.4), Turn("user", 5.8, 6.2)]
    al = align_text(turns, entries, IDS)
    assert al.complete and al.merged_turns == 0
    assert [(t.speaker, t.start, t.text) for t in al.turns] == [
        ("user", 0.5, LONG), ("system", 4.8, "Sure."), ("user", 5.8, SHORT),
    ]  # fmt: skip


def test_a_turn_split_by_a_pause_is_merged_and_later_texts_stay_in_place() -> None:
    # counting would give the long line to the first half, "Okay." to the second half and
    # leave the last turn without text; the alignment merges the halves instead
    entries = [_t("user", LONG), _t("system", "Sure."), _t("user", SHORT), _t("user", LONG)]
    turns = [
        Turn("user", 0.5, 2.4),
        Turn("user", 3.0, 4.6),  # the same sentence after a 0.6 s pause
        Turn("system", 4.9, 5.5),
        Turn("user", 5.9, 6.3),
        Turn("user", 8.0, 12.0),
    ]
    al = align_text(turns, entries, IDS)
    assert al.complete, al.problem()
    assert al.merged_turns == 1
    assert [(t.speaker, t.start, t.end, t.text) for t in al.turns] == [
        ("user", 0.5, 4.6, LONG),
        ("system", 4.9, 5.5, "Sure."),
        ("user", 5.9, 6.3, SHORT),
        ("user", 8.0, 12.0, LONG),
    ]
    # the count rule of old would have failed here (4 detected user turns, 3 entries)
    assert attach_text(turns, entries, IDS)[1] == "aligned"


def test_two_entries_in_one_detected_turn_share_it() -> None:
    entries = [_t("user", "Hi there."), _t("user", "Shall we plan a trip to the lake?")]
    turns = [Turn("user", 0.5, 3.4)]
    al = align_text(turns, entries, IDS)
    assert al.complete and al.joined_entries == 1
    assert al.turns[0].text == "Hi there. Shall we plan a trip to the lake?"


def test_text_with_no_turn_is_reported_not_dropped() -> None:
    # the system's second line was never said: no turn of 0.6 s holds "Sure." and 14 words more
    entries = [_t("user", LONG), _t("system", "Sure."), _t("system", LONG), _t("user", LONG)]
    turns = [Turn("user", 0.5, 4.5), Turn("system", 4.8, 5.4), Turn("user", 8.0, 12.0)]
    al = align_text(turns, entries, IDS)
    assert not al.complete
    assert al.unplaced == [(2, "system", LONG)]
    assert "1 transcript turn(s) match no detected turn" in al.problem()
    assert al.summary()["status"] == "not aligned"


def test_a_turn_with_no_text_is_reported() -> None:
    entries = [_t("user", LONG), _t("system", "Sure.")]
    # a stray detection far from everything (a cough): no entry can take it
    turns = [Turn("user", 0.5, 4.5), Turn("system", 4.8, 5.4), Turn("user", 20.0, 20.3)]
    al = align_text(turns, entries, IDS)
    assert not al.complete
    assert [(t.speaker, t.start) for t in al.untexted] == [("user", 20.0)]
    assert "1 detected turn(s) get no transcript text" in al.problem()


def test_adapter_rejects_a_session_whose_text_cannot_be_placed(tmp_path: Path) -> None:
    texts = ("Hi, shall we plan a trip?", "Sure, where to?", "The lake.")
    rows = [*transcript(texts), {"speaker": "system", "text": LONG}]  # never said aloud
    write_session(tmp_path / "s1", "tracks", transcript=rows, session_id="s1")
    write_session(tmp_path / "s2", "tracks", transcript=transcript(texts), session_id="s2")
    items = {
        (i.id if isinstance(i, Dialogue) else i.item_id): i
        for i in StudioAdapter(tmp_path, NO_STATE).scan()
    }
    assert len(items) == 2  # inputs = kept + rejected
    bad = items["studio__s1"]
    assert isinstance(bad, Rejection) and bad.reason == "transcript_unaligned"
    assert "1 transcript turn(s) match no detected turn" in bad.detail
    good = items["studio__s2"]
    assert isinstance(good, Dialogue)
    assert all(t.text for t in good.turns)


def test_turns_are_never_joined_across_the_other_partys_turn() -> None:
    # the system starts talking in the user's pause and goes on past it: the user's two turns
    # stay two (a join would invent a floor-taking interruption)
    entries = [
        _t("user", "I was thinking we could go somewhere quiet this weekend."),
        _t("system", "There is a small lake town about two hours away from here."),
        _t("user", "Mm-hm."),
    ]
    turns = [Turn("user", 0.5, 2.4), Turn("system", 2.8, 6.0), Turn("user", 3.6, 3.9)]
    al = align_text(turns, entries, IDS)
    assert al.complete and al.merged_turns == 0
    assert [(t.speaker, t.start, t.end) for t in al.turns] == [
        ("user", 0.5, 2.4), ("system", 2.8, 6.0), ("user", 3.6, 3.9),
    ]  # fmt: skip
