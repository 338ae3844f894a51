"""Overlap classification (TurnBench's classes + terminal overlap), FTOs and balance on
hand-built timelines whose class is known by construction."""

from __future__ import annotations

from dataclasses import replace

import pytest

from duetflow.config import TurnsConfig
from duetflow.records.dialogue import Turn, TurnKind
from duetflow.turntaking.overlaps import (
    OverlapClass,
    balance,
    classify_overlaps,
    floor_transfer_offsets,
    mark_backchannels,
)

from .helpers import turns

CFG = TurnsConfig()
BC, INT, NFI, TO = (
    OverlapClass.BACKCHANNEL,
    OverlapClass.INTERRUPTION,
    OverlapClass.NON_FLOOR_INTERRUPTION,
    OverlapClass.TERMINAL_OVERLAP,
)
TIMING_ONLY = TurnsConfig(transcript_cues=False)


def classes(ts: tuple[Turn, ...], cfg: TurnsConfig = CFG) -> list[tuple[int, int, OverlapClass]]:
    return [(e.listener_turn_index, e.host_turn_index, e.klass) for e in classify_overlaps(ts, cfg)]


def test_backchannel_inside_host_turn() -> None:
    ts = turns(("A", 0.0, 5.0), ("B", 2.0, 2.4, "mm-hm"), ("B", 5.2, 8.0))
    [ev] = classify_overlaps(ts, CFG)
    assert (ev.listener, ev.speaker, ev.klass) == ("B", "A", BC)
    assert (ev.start, ev.end) == (2.0, 2.4)
    assert (ev.host_turn_index, ev.listener_turn_index) == (0, 1)


@pytest.mark.parametrize(
    ("text", "dur"),
    [
        ("yeah, right, I see", 1.5),
        ("Mm-hmm. Yeah yeah. Exactly, of course.", 3.2),
        ("mmmmm", 2.0),
        ("[+]嗯嗯，对对对，是的是的", 2.5),
        ("", 4.0),  # no words: nothing shows a bid for the floor
        ("[LAUGHTER]", 1.8),
    ],
)
def test_backchannel_regardless_of_duration(text: str, dur: float) -> None:
    # The host keeps talking over the whole vocalisation: it does not claim the floor.
    ts = turns(("A", 0.0, 10.0), ("B", 3.0, 3.0 + dur, text), ("B", 10.2, 13.0))
    assert classes(ts) == [(1, 0, BC)]


@pytest.mark.parametrize(
    "text",
    ["but I think we should go", "可是我觉得不太对", "can I just--", "so—", "yeah but…"],
)
def test_bid_for_the_floor_that_does_not_take_it_is_non_floor(text: str) -> None:
    # Content words or a broken-off vocalisation inside the host's talk: a failed bid.
    ts = turns(("A", 0.0, 10.0), ("B", 3.0, 3.8, text), ("B", 10.2, 13.0))
    assert classes(ts) == [(1, 0, NFI)]
    # Timing alone cannot see the bid.
    assert classes(ts, TIMING_ONLY) == [(1, 0, BC)]


def test_mid_turn_interruption_host_yields() -> None:
    # B starts 3 s into A's turn, A stops 0.8 s later, B talks on: B took the floor mid-turn.
    ts = turns(("A", 0.0, 3.8), ("B", 3.0, 7.0))
    assert classes(ts) == [(1, 0, INT)]


def test_mid_turn_interruption_host_holds_on() -> None:
    # B starts, A talks on for 2 s before stopping, B goes on: B ends up with the floor, having
    # come in mid-turn (TurnBench: an interruption, competitive or not).
    ts = turns(("A", 0.0, 5.0), ("B", 3.0, 8.0))
    assert classes(ts) == [(1, 0, INT)]


@pytest.mark.parametrize("overlap", [0.06, 0.1, 0.151, 0.2, 0.25, 0.3])
def test_terminal_overlap_is_a_transition(overlap: float) -> None:
    # B comes in during the last syllable(s) of A's turn and A completes it.
    ts = turns(("A", 0.0, 4.0), ("B", 4.0 - overlap, 7.0), ("A", 7.2, 9.0))
    assert classes(ts) == [(1, 0, TO)]
    assert floor_transfer_offsets(ts, CFG) == pytest.approx([-overlap, 0.2])


def test_terminal_overlap_tolerance_is_configurable() -> None:
    ts = turns(("A", 0.0, 4.0), ("B", 3.6, 7.0))  # 0.4 s: beyond the default 0.3 s
    assert classes(ts) == [(1, 0, INT)]
    assert classes(ts, TurnsConfig(terminal_overlap_s=0.5)) == [(1, 0, TO)]
    assert classes(
        turns(("A", 0.0, 4.0), ("B", 3.8, 7.0)), TurnsConfig(terminal_overlap_s=0.1)
    ) == [(1, 0, INT)]


@pytest.mark.parametrize(
    "host_text",
    ["and then I went to--", "我们可以——", "so if you…", "I thought that we mi-", "wait [+]--"],
)
def test_cut_off_host_makes_an_end_overlap_an_interruption(host_text: str) -> None:
    ts = turns(("A", 0.0, 4.0, host_text), ("B", 3.85, 7.0, "no, listen to me"))
    assert classes(ts) == [(1, 0, INT)]
    assert classes(ts, TIMING_ONLY) == [(1, 0, TO)]


def test_cut_off_label_is_evidence_too() -> None:
    host = Turn("A", 0.0, 4.0, "and then", labels={"cut_off": "1"})
    ts = (host, Turn("B", 3.85, 7.0))
    assert classes(ts) == [(1, 0, INT)]


def test_dash_inside_the_text_and_overlap_tag_are_not_cut_offs() -> None:
    # DailyDialog-style mid-sentence dash; RAMC's [+] marks overlapping speech, not a cut-off.
    for host_text in ("it's our biggest -- sixteen inches.", "[+]我们可以走了", "uh-huh"):
        ts = turns(("A", 0.0, 4.0, host_text), ("B", 3.85, 7.0))
        assert classes(ts) == [(1, 0, TO)], host_text


def test_short_overlap_at_end_then_host_continues_is_backchannel() -> None:
    # "yeah" overlapping the end of A's turn, then A speaks again: A kept the floor.
    ts = turns(("A", 0.0, 4.0), ("B", 3.8, 4.3, "yeah"), ("A", 4.6, 9.0))
    assert classes(ts) == [(1, 0, BC)]


def test_end_overlap_with_content_then_host_continues_is_a_transition() -> None:
    # B says something of its own over A's last syllable, alone afterwards; A answers: B had
    # the floor in between (a terminal overlap, then an ordinary gap).
    ts = turns(("A", 0.0, 4.0), ("B", 3.8, 5.5, "I went there too"), ("A", 5.8, 9.0))
    assert classes(ts) == [(1, 0, TO)]


def test_short_overlap_at_end_then_listener_continues_is_terminal_overlap() -> None:
    ts = turns(("A", 0.0, 4.0), ("B", 3.8, 4.3, "no"), ("B", 4.4, 9.0))
    assert classes(ts) == [(1, 0, TO)]


def test_touching_turns_are_not_overlaps() -> None:
    ts = turns(("A", 0.0, 3.0), ("B", 3.0, 6.0), ("A", 6.0, 6.5))
    assert classify_overlaps(ts, CFG) == []
    assert floor_transfer_offsets(ts, CFG) == [0.0, 0.0]


def test_overlap_below_min_is_a_transition_not_an_event() -> None:
    ts = turns(("A", 0.0, 3.0), ("B", 2.97, 6.0))
    assert classify_overlaps(ts, CFG) == []
    assert floor_transfer_offsets(ts, CFG) == pytest.approx([-0.03])
    assert classes(ts, TurnsConfig(min_overlap_s=0.0)) == [(1, 0, TO)]


def test_zero_length_turns_are_ignored() -> None:
    ts = turns(("A", 0.0, 5.0), ("B", 2.0, 2.0), ("B", 5.2, 8.0))
    assert classify_overlaps(ts, CFG) == []
    assert floor_transfer_offsets(ts, CFG) == pytest.approx([0.2])
    b = balance(ts, CFG)
    assert b.counts == {"A": 1, "B": 1}


def test_nonspeech_turns_are_ignored() -> None:
    ts = (
        Turn("A", 0.0, 5.0),
        Turn("G00000000", 1.0, 4.0, "[MUSIC]", kind=TurnKind.NONSPEECH),
        Turn("B", 5.3, 7.0),
    )
    assert classify_overlaps(ts, CFG) == []
    assert floor_transfer_offsets(ts, CFG) == pytest.approx([0.3])
    assert set(balance(ts, CFG).counts) == {"A", "B"}


def test_simultaneous_start_longer_turn_is_host() -> None:
    ts = turns(("A", 0.0, 0.5, "oh"), ("B", 0.0, 4.0))
    assert classes(ts) == [(0, 1, BC)]


def test_simultaneous_identical_turns_first_index_hosts() -> None:
    ts = turns(("A", 0.0, 2.0), ("B", 0.0, 2.0))
    [ev] = classify_overlaps(ts, CFG)
    assert (ev.host_turn_index, ev.listener_turn_index) == (0, 1)
    assert ev.klass is BC  # ends with the host, nobody after it: no sign of a floor claim


def test_three_way_ambiguity() -> None:
    # B comes in over A's last 0.2 s (a transition); A then barges back in mid-way through B's
    # turn and outlasts B: a floor-taking interruption.
    ts = turns(("A", 0.0, 5.0), ("B", 4.8, 8.0), ("A", 6.0, 10.0))
    assert classes(ts) == [(1, 0, TO), (2, 1, INT)]
    # When A's first turn is marked broken off, B cut A off: both are interruptions.
    cut = (replace(ts[0], text="and we--"), *ts[1:])
    assert classes(cut) == [(1, 0, INT), (2, 1, INT)]


def test_listener_turn_overlapping_a_backchannel_is_not_its_listener() -> None:
    # B's "mm" overlaps A1's end; A2 starts inside the "mm" but the "mm" never held the floor.
    ts = turns(("A", 0.0, 3.2), ("B", 3.0, 3.5, "mm"), ("A", 3.4, 8.0))
    assert classes(ts) == [(1, 0, BC)]


def test_same_speaker_consecutive_turns_bridge_short_pause() -> None:
    # A pauses 0.2 s between two turns while B talks over the pause: A kept the floor.
    ts = turns(("A", 0.0, 3.0), ("B", 2.9, 4.5, "that's not what"), ("A", 3.2, 6.0))
    assert classes(ts) == [(1, 0, NFI)]
    # With a long pause A's first turn really ended: B took over at A's last 0.1 s.
    long_pause = turns(("A", 0.0, 3.0), ("B", 2.9, 4.5, "that's not what"), ("A", 4.0, 6.0))
    assert classes(long_pause)[0] == (1, 0, TO)
    # The host's run ends with its last turn: a cut-off mark there is what counts.
    run = turns(("A", 0.0, 3.0), ("A", 3.1, 5.0, "and so--"), ("B", 4.9, 8.0))
    assert classes(run) == [(2, 1, INT)]


def test_host_is_the_latest_ending_candidate() -> None:
    # Two of A's turns overlap each other (annotation quirk); B's backchannel sits in both.
    ts = turns(("A", 0.0, 3.0), ("A", 1.0, 6.0), ("B", 2.0, 2.5))
    [ev] = classify_overlaps(ts, CFG)
    assert ev.host_turn_index == 1 and ev.klass is BC


def test_input_order_does_not_matter() -> None:
    ts = turns(("B", 3.0, 7.0), ("A", 0.0, 3.8), ("B", 1.0, 1.3))
    assert classes(ts) == [(2, 1, BC), (0, 1, INT)]


def test_mark_backchannels_sets_kind_only_where_classified() -> None:
    ts = turns(("A", 0.0, 5.0), ("B", 2.0, 2.4), ("B", 5.2, 8.0), ("A", 7.9, 8.2, "yeah"))
    marked = mark_backchannels(ts, CFG)
    assert [t.kind for t in marked] == [
        TurnKind.TURN,
        TurnKind.BACKCHANNEL,
        TurnKind.TURN,
        TurnKind.BACKCHANNEL,
    ]
    assert [(t.start, t.end, t.speaker) for t in marked] == [
        (t.start, t.end, t.speaker) for t in ts
    ]
    # without words, outlasting the host is taking the floor: a transition, not a backchannel
    assert mark_backchannels(turns(*[(t.speaker, t.start, t.end) for t in ts]), CFG)[3].kind is (
        TurnKind.TURN
    )
    # a terminal overlap is a turn, never a backchannel
    to = turns(("A", 0.0, 4.0), ("B", 3.8, 7.0), ("A", 7.2, 9.0))
    assert all(t.kind is TurnKind.TURN for t in mark_backchannels(to, CFG))


def test_fto_signs_and_backchannels_skipped() -> None:
    ts = turns(
        ("A", 0.0, 4.0),
        ("B", 1.0, 1.3, "mm"),  # backchannel: no floor transfer
        ("B", 4.25, 7.0),  # gap 0.25
        ("A", 6.8, 9.0),  # overlap 0.2 (terminal overlap: a transfer)
        ("A", 9.5, 10.0),  # same speaker: no transfer
        ("B", 10.1, 12.0),  # gap 0.1 from the run's end
    )
    assert floor_transfer_offsets(ts, CFG) == pytest.approx([0.25, -0.2, 0.1])


def test_fto_skips_turn_inside_the_other_party_turn() -> None:
    ts = turns(("A", 0.0, 8.0), ("B", 2.0, 4.0), ("B", 8.5, 10.0))
    assert floor_transfer_offsets(ts, CFG) == pytest.approx([0.5])


def test_balance_shares_exclude_backchannels_by_default() -> None:
    ts = turns(("A", 0.0, 6.0), ("B", 1.0, 1.2), ("B", 3.0, 3.2), ("B", 6.5, 8.5))
    b = balance(ts, CFG, ["A", "B"])
    assert b.counts == {"A": 1, "B": 1}
    assert b.utterance_share == {"A": 0.5, "B": 0.5}
    assert b.time_share["A"] == pytest.approx(6.0 / 8.4)
    incl = balance(ts, TurnsConfig(balance_excludes_backchannels=False))
    assert incl.counts == {"A": 1, "B": 3}
    assert incl.utterance_share["B"] == pytest.approx(0.75)


def test_balance_reports_silent_speakers_and_empty_input() -> None:
    b = balance(turns(("A", 0.0, 1.0)), CFG, ["A", "B"])
    assert b.utterance_share == {"A": 1.0, "B": 0.0}
    empty = balance((), CFG, ["A", "B"])
    assert empty.utterance_share == {"A": 0.0, "B": 0.0}
    assert empty.time_share == {"A": 0.0, "B": 0.0}


def test_balance_time_counts_own_overlap_once() -> None:
    ts = turns(("A", 0.0, 4.0), ("A", 2.0, 6.0), ("B", 6.0, 8.0))
    assert balance(ts, CFG).time_share == pytest.approx({"A": 0.75, "B": 0.25})


def test_three_parties_overlapping_at_once() -> None:
    # Two listeners chime in over A at once (a stray third party, e.g. an unfiltered extra
    # speaker): each is a backchannel of A, never of each other.
    ts = turns(("A", 0.0, 10.0), ("B", 2.0, 2.5), ("C", 2.2, 2.6), ("C", 4.0, 12.0))
    assert classes(ts) == [(1, 0, BC), (2, 0, BC), (3, 0, INT)]
    assert balance(ts, CFG).counts == {"A": 1, "B": 0, "C": 1}
