"""Filters, the select stage and corpus statistics."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from duetflow.config import RunConfig, build_config
from duetflow.errors import ConfigError
from duetflow.records.dialogue import Dialogue, Speaker, Stage, Turn, TurnKind
from duetflow.turntaking.filters import (
    FilterContext,
    Keep,
    Reject,
    apply_filters,
    available_filters,
    get_filter,
    register_filter,
)
from duetflow.turntaking.selection import select
from duetflow.turntaking.stats import CorpusStats

from .helpers import alternating, dialogue

CFG = build_config({})


def cfg(**sections: dict) -> RunConfig:
    return build_config(sections)


#: without the mono_overlaps filter: ``dialogue`` builds mono mixes, whose overlapped changes that
#: filter keeps out of a release (tests/turntaking/test_mono_overlaps.py); here the classes decide
CLASSES = cfg(filters={"order": [f for f in CFG.filters.order if f != "mono_overlaps"]})


def test_clean_dialogue_passes_every_filter() -> None:
    d = dialogue(alternating(10, 2.5, 0.2))
    res = apply_filters(d, CFG)
    assert res.kept and res.reason is None and res.failing == []


def test_duration_filter_codes() -> None:
    short = dialogue(alternating(4, 2.0, 0.2))
    res = apply_filters(short, CFG)
    assert not res.kept and res.reason == "too_short"
    long = dialogue(alternating(30, 2.5, 0.2))
    assert apply_filters(long, CFG).reason == "too_long"


def test_interruption_rejected_backchannels_allowed() -> None:
    base = list(alternating(10, 2.5, 0.2))
    with_bc = [*base, Turn("B", 1.0, 1.3, "mm")]
    assert apply_filters(dialogue(with_bc), CFG).kept
    # B cuts in 1 s before A's third turn ends and talks on: mid-turn, floor taken.
    interrupted = [*base[:2], Turn("A", 5.4, 7.9), Turn("B", 6.9, 10.5)]
    interrupted += list(alternating(6, 2.5, 0.2, start=10.7))
    res = apply_filters(dialogue(interrupted), CFG)
    assert res.reason == "interruption"
    [(_, details)] = [f for f in res.failing if f[0] == "interruption"]
    assert (
        details["count"] == 1 and details["at_s"] == [6.9] and details["filter"] == "interruptions"
    )
    allow_one = cfg(filters={"max_interruptions": 1})
    assert apply_filters(dialogue(interrupted), allow_one).kept
    # Coming in 0.2 s before A's end is a terminal overlap: a transition, kept ...
    terminal = [*interrupted[:3], Turn("B", 7.7, 10.5), *interrupted[4:]]
    assert apply_filters(dialogue(terminal), CLASSES).kept
    # ... unless the transcript shows A was cut off.
    cut = [*terminal[:2], replace(terminal[2], text="and then we--"), *terminal[3:]]
    assert apply_filters(dialogue(cut), CFG).reason == "interruption"


def test_non_floor_interruptions_optional_limit() -> None:
    ts = [*alternating(10, 2.5, 0.2), Turn("B", 0.5, 2.0, "talking over")]
    assert apply_filters(dialogue(ts), CLASSES).kept
    strict = cfg(filters={"max_non_floor_interruptions": 0})
    assert apply_filters(dialogue(ts), strict).reason == "non_floor_interruption"


def test_balance_and_min_turns() -> None:
    # A has 7 turns, B 3: shares 0.7 / 0.3.
    ts = alternating(6, 2.5, 0.2) + tuple(
        Turn("A", 16.2 + i * 2.7, 18.7 + i * 2.7) for i in range(4)
    )
    res = apply_filters(dialogue(ts), CFG)
    assert res.reason == "imbalanced"
    [(_, details)] = [f for f in res.failing if f[0] == "imbalanced"]
    assert details["utterance_share"] == {"A": 0.7, "B": 0.3}
    only_a = tuple(Turn("A", i * 3.0, i * 3.0 + 2.5) for i in range(9))
    res = apply_filters(dialogue(only_a), CFG)
    assert res.reason == "too_few_turns"
    assert {f[0] for f in res.failing} == {"too_few_turns", "imbalanced"}


def test_language_filter() -> None:
    d = dialogue(alternating(10, 2.5, 0.2), language="zh")
    assert apply_filters(d, CFG).kept
    only_en = cfg(filters={"languages": ["en"]})
    res = apply_filters(d, only_en)
    assert res.reason == "language" and res.failing[0][1]["languages"] == ["zh"]
    d2 = replace(
        d, language="en", speakers=(Speaker("A", language="en"), Speaker("B", language="de"))
    )
    assert apply_filters(d2, only_en).reason == "language"


def test_collection_header_and_unintelligible() -> None:
    ts = list(alternating(10, 2.5, 0.2))
    ts[0] = replace(ts[0], text="爱数智慧语音采集二零一九年十一月六日")
    assert apply_filters(dialogue(ts), CFG).reason == "collection_header"
    labelled = [
        replace(t, labels={"collection_header": "1"}) if i == 0 else t
        for i, t in enumerate(alternating(10, 2.5, 0.2))
    ]
    assert apply_filters(dialogue(labelled), CFG).reason == "collection_header"
    junk = [
        replace(t, text="[*]，[*]") if i < 6 else t for i, t in enumerate(alternating(10, 2.5, 0.2))
    ]
    res = apply_filters(dialogue(junk), CFG)
    assert res.reason == "unintelligible" and res.failing[0][1]["share"] == 0.6
    mixed = [replace(t, text="[*] 你好") for t in alternating(10, 2.5, 0.2)]
    assert apply_filters(dialogue(mixed), CFG).kept


def test_first_failure_recorded_all_failures_listed_in_order() -> None:
    only_a = tuple(Turn("A", i * 3.0, i * 3.0 + 2.5) for i in range(3))  # 8.5 s, one speaker
    res = apply_filters(dialogue(only_a), CFG)
    assert [r for r, _ in res.failing] == ["too_short", "too_few_turns", "imbalanced"]
    reordered = cfg(filters={"order": ["balance", "duration"]})
    res2 = apply_filters(dialogue(only_a), reordered)
    assert res2.reason == "imbalanced" and [r for r, _ in res2.failing] == [
        "imbalanced",
        "too_short",
    ]


def test_unknown_filter_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown filter 'nope'"):
        apply_filters(dialogue(alternating(10, 2.5, 0.2)), cfg(filters={"order": ["nope"]}))


def test_plugin_filter_registers_by_name() -> None:
    @register_filter("test_no_laughter")
    def no_laughter(d: Dialogue, ctx: FilterContext) -> Keep | Reject:
        if any("[LAUGHTER]" in t.text for t in d.turns):
            return Reject("laughter", {"n": 1})
        return Keep()

    assert (
        "test_no_laughter" in available_filters() and get_filter("test_no_laughter") is no_laughter
    )
    ts = [*alternating(10, 2.5, 0.2)]
    ts[3] = replace(ts[3], text="ha [LAUGHTER]")
    res = apply_filters(dialogue(ts), cfg(filters={"order": ["test_no_laughter", "duration"]}))
    assert res.reason == "laughter"


# --- select -----------------------------------------------------------------------------------


def test_select_short_dialogue_no_window_rejection() -> None:
    d = dialogue(alternating(3, 2.0, 0.2))
    sel = select(d, CFG)
    assert sel.kept == []
    [r] = sel.rejected
    assert (r.item_id, r.stage, r.reason, r.corpus) == (
        d.id,
        Stage.WINDOW,
        "no_window",
        "testcorpus",
    )
    assert r.source_path == "/data/d1.wav"
    assert json.loads(r.detail)["span_s"] == 6.4
    assert sel.stats.n_windows == 0 and sel.stats.n_kept == 0


def test_select_marks_backchannels_in_kept_windows() -> None:
    ts = [*alternating(10, 2.5, 0.2), Turn("B", 1.0, 1.3, "mm")]
    sel = select(dialogue(ts), CFG)
    [w] = sel.kept
    assert [t.kind for t in w.turns].count(TurnKind.BACKCHANNEL) == 1
    assert sel.stats.overlaps["backchannel"] == 1
    assert sel.stats.kept_overlaps["backchannel"] == 1


def test_select_bad_turns_are_rejected_not_raised() -> None:
    d = dialogue([Turn("A", 0.0, 3.0), Turn("B", 5.0, 4.0)])
    [r] = select(d, CFG).rejected
    assert r.reason == "bad_turns" and "ends before it starts" in json.loads(r.detail)["error"]
    d2 = dialogue([Turn("A", 0.0, float("nan"))])
    assert select(d2, CFG).rejected[0].reason == "bad_turns"


def test_select_long_dialogue_mixed_outcome_and_detail_json() -> None:
    # 120 s of clean alternation, then 60 s where B interrupts A mid-turn every turn.
    clean = alternating(24, 4.5, 0.5)  # 0–119.5
    messy = []
    t = 120.0
    for _ in range(8):
        messy += [Turn("A", t, t + 4.0), Turn("B", t + 2.5, t + 8.0)]
        t += 8.5
    sel = select(dialogue((*clean, *messy)), CFG)
    assert len(sel.kept) + len(sel.rejected) == sel.stats.n_windows
    assert sel.kept and sel.rejected
    for r in sel.rejected:
        assert r.stage is Stage.FILTER
        detail = json.loads(r.detail)
        assert detail["failing"][0]["reason"] == r.reason
        assert len(detail["window"]) == 2
    assert sel.stats.overlaps["interruption"] >= 1
    assert all(w.window is not None for w in sel.kept)


@st.composite
def dialogues(draw: st.DrawFn) -> Dialogue:
    n = draw(st.integers(0, 60))
    t = 0.0
    out = []
    for _ in range(n):
        gap = draw(st.sampled_from([-0.6, -0.2, 0.0, 0.2, 0.5, 1.5]))
        dur = draw(st.sampled_from([0.0, 0.4, 1.5, 3.0, 6.0]))
        start = max(0.0, round(t + gap, 2))
        out.append(Turn(draw(st.sampled_from("AB")), start, round(start + dur, 2)))
        t = max(t, start + dur)
    return dialogue(tuple(out))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dialogues(), st.sampled_from(["greedy", "non_overlapping", "max_count"]))
def test_kept_plus_rejected_equals_input(d: Dialogue, policy: str) -> None:
    config = cfg(window={"policy": policy})
    sel = select(d, config)
    n_items = max(sel.stats.n_windows, 1)
    assert len(sel.kept) + len(sel.rejected) == n_items
    assert len({w.id for w in sel.kept} | {r.item_id for r in sel.rejected}) == n_items
    assert all(w.source_id == d.source_id for w in sel.kept)
    stats = CorpusStats()
    stats.add(sel.stats)
    stats.add_rejections(sel.rejected)
    total = stats.to_dict()["total"]
    assert total["kept"] + total["rejected"] == n_items
    assert select(d, config) == sel  # deterministic


def test_corpus_stats_accumulates_and_is_json() -> None:
    stats = CorpusStats()
    d1 = dialogue((*alternating(10, 2.5, 0.2), Turn("B", 1.0, 1.3, "mm")), original_id="a")
    d2 = dialogue(alternating(3, 2.0, 0.2), original_id="b", corpus="other")
    for d in (d1, d2):
        sel = select(d, CFG)
        stats.add(sel.stats)
        stats.add_rejections(sel.rejected)
    out = json.loads(json.dumps(stats.to_dict()))
    total = out["total"]
    assert total["dialogues"] == 2 and total["kept"] == 1 and total["rejected"] == 1
    assert total["rejected_by_reason"] == {"no_window": 1}
    assert total["rejected_by_stage"] == {"window": 1}
    assert total["overlaps"] == {
        "backchannel": 1,
        "interruption": 0,
        "non_floor_interruption": 0,
        "terminal_overlap": 0,
    }
    fto = total["fto"]
    assert fto["n"] == 9 + 2 and sum(fto["counts"]) + fto["below"] + fto["above"] == fto["n"]
    assert fto["min"] == pytest.approx(0.2) and fto["mean"] == pytest.approx(0.2)
    assert len(fto["edges"]) == len(fto["counts"]) + 1
    # 0.2 s gaps land in the [0.2, 0.3) bin
    assert fto["counts"][fto["edges"].index(0.2)] == 11
    assert total["kept_balance_b_share"]["n"] == 1 and total["balance_b_share"]["n"] == 1
    assert set(out["corpora"]) == {"testcorpus", "other"}
    assert out["corpora"]["other"]["rejected_by_reason"] == {"no_window": 1}
    assert out["corpora"]["testcorpus"]["kept_duration_s"] == pytest.approx(26.8)
