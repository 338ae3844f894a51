"""Cut-offs only the words show: a host turn stopping on a connective (issue 25 item 3).

docs/turn-taking.md, *Evidence from transcripts*: a host turn whose text stops mid-clause ("...
and", "……然后", with or without RAMC's ``[+]``) and is overlapped by the next speaker was cut
off, so the overlap is an interruption however short; a complete turn overlapped the same way
stays a terminal overlap.
"""

from __future__ import annotations

import pytest

from duetflow.config import TurnsConfig
from duetflow.records.dialogue import Turn
from duetflow.turntaking.cues import (
    ENGLISH_TRAILING_CONNECTIVES,
    MANDARIN_TRAILING_CONNECTIVES,
    stops_mid_clause,
)
from duetflow.turntaking.overlaps import OverlapClass, classify_overlaps
from duetflow.turntaking.selection import select

from .helpers import dialogue, turns

MID_CLAUSE = [
    "I went to the shop and",
    "we could go there, but",
    "it was raining so",
    "Because the bus was late, and, [LAUGHTER]",
    "you know, because",
    "do you want tea or",
    "我们先去吃饭然后",
    "我本来想去的，但是",
    "他没来，所以 [+]",
    "那个时候",
    "我记得那个时候，",
    "如果明天下雨的话[+]",
]
COMPLETE = [
    "I think so",
    "I told you so.",
    "see you then",
    "it's fine though",
    "I'd love to",
    "and?",
    "Do you want tea or coffee?",
    "Sandy",  # a name ending in "and"-letters is not the word
    "我们先去吃饭",
    "然后呢",
    "就是",
    "所以呢？",
    "[+]",
    "",
]


@pytest.mark.parametrize("text", MID_CLAUSE)
def test_text_stopping_on_a_connective_stops_mid_clause(text: str) -> None:
    assert stops_mid_clause(Turn("A", 0.0, 1.0, text))


@pytest.mark.parametrize("text", COMPLETE)
def test_complete_turns_do_not_stop_mid_clause(text: str) -> None:
    assert not stops_mid_clause(Turn("A", 0.0, 1.0, text))


def test_word_lists_are_declared_once_per_language() -> None:
    assert {"and", "but", "so"} <= ENGLISH_TRAILING_CONNECTIVES
    assert {"然后", "但是", "所以", "那个时候"} <= set(MANDARIN_TRAILING_CONNECTIVES)


@pytest.mark.parametrize("overlap", [0.06, 0.15, 0.25])
@pytest.mark.parametrize(
    ("host_text", "want"),
    [
        ("so we drove to the coast and", OverlapClass.INTERRUPTION),
        ("我们到了海边然后 [+]", OverlapClass.INTERRUPTION),
        ("so we drove to the coast", OverlapClass.TERMINAL_OVERLAP),
        ("我们到了海边", OverlapClass.TERMINAL_OVERLAP),
    ],
)
def test_short_overlap_of_a_mid_clause_host_is_an_interruption(
    host_text: str, want: OverlapClass, overlap: float
) -> None:
    ts = turns(("A", 0.0, 4.0, host_text), ("B", 4.0 - overlap, 7.0, "oh really, when was that"))
    assert [e.klass for e in classify_overlaps(ts, TurnsConfig())] == [want]
    # timing alone (transcript cues off) reads every such overlap as a transition
    timing = classify_overlaps(ts, TurnsConfig(transcript_cues=False))
    assert [e.klass for e in timing] == [OverlapClass.TERMINAL_OVERLAP]


def test_a_mid_clause_host_without_an_overlap_is_no_event() -> None:
    # the lexical rule needs the overlap: a gap after "and" is a pause, not a cut-off
    ts = turns(("A", 0.0, 4.0, "and"), ("B", 4.2, 7.0, "what happened next"))
    assert classify_overlaps(ts, TurnsConfig()) == []


def test_the_interruption_filter_rejects_the_window() -> None:
    # 8 turns of ~25 s: only the whole dialogue is long enough to be a window
    spec: list[tuple[str, float, float, str]] = []
    t = 0.0
    for k in range(8):
        text = "and we went on and" if k == 3 else f"turn number {k} of the talk"
        start = t - 0.35 if k == 4 else t  # 0.15 s over turn 3
        spec.append(("AB"[k % 2], start, start + 3.0, text))
        t = start + 3.2
    cut = select(dialogue(turns(*spec)), _cfg())
    spec[3] = ("B", spec[3][1], spec[3][2], "and we went on")
    whole = select(dialogue(turns(*spec)), _cfg())
    assert len(whole.kept) == 1
    assert not cut.kept and [r.reason for r in cut.rejected] == ["interruption"]


def _cfg():  # type: ignore[no-untyped-def]
    from duetflow.config import build_config

    order = [f for f in build_config({}).filters.order if f != "mono_overlaps"]
    return build_config({"turns": {"acoustic_timing": False}, "filters": {"order": order}})
