"""A mono-mix overlap that cannot be re-timed never reaches a release (issue 25 item 2).

docs/equalisation.md, *Speaker changes*: on a mono mix an overlapped speaker change (a terminal
overlap) or a talked-over bid is kept as recorded, while every change of every other category
is a 180–230 ms gap; the ``mono_overlaps`` filter rejects such a window with its reason. The same
turns from a separable source are re-timed, so they pass.
"""

from __future__ import annotations

from dataclasses import replace

from duetflow.config import build_config
from duetflow.records.dialogue import PerSpeakerSource, Turn
from duetflow.turntaking.filters import apply_filters

from .helpers import alternating, dialogue

CFG = build_config({})


def _terminal() -> list[Turn]:
    ts = list(alternating(10, 2.5, 0.2))
    # B comes in 0.2 s before A's third turn ends: a terminal overlap, a transition
    return [*ts[:3], replace(ts[3], start=ts[2].end - 0.2), *ts[4:]]


def test_the_filter_is_on_by_default() -> None:
    assert "mono_overlaps" in CFG.filters.order


def test_a_mono_window_with_an_overlapped_change_is_rejected_with_its_reason() -> None:
    assert apply_filters(dialogue(alternating(10, 2.5, 0.2)), CFG).kept
    res = apply_filters(dialogue(_terminal()), CFG)
    assert res.reason == "mono_overlap"
    [(_, detail)] = [f for f in res.failing if f[0] == "mono_overlap"]
    assert detail["count"] == 1 and detail["at_s"] == [7.7]
    assert detail["overlap_s"] == [0.2]


def test_a_talked_over_bid_in_a_mono_window_is_rejected() -> None:
    ts = [*alternating(10, 2.5, 0.2), Turn("B", 0.5, 2.0, "talking over")]
    assert apply_filters(dialogue(ts), CFG).reason == "mono_overlap"


def test_backchannels_and_latching_pass() -> None:
    # a continuer inside the host's talk rides along in every layout; a change overlapping by
    # less than turns.min_overlap_s is latching, re-timed like a gap
    ts = [*alternating(10, 2.5, 0.2), Turn("B", 1.0, 1.3, "mm")]
    assert apply_filters(dialogue(ts), CFG).kept
    base = list(alternating(10, 2.5, 0.2))
    latched = [*base[:3], replace(base[3], start=base[2].end - 0.03), *base[4:]]
    assert apply_filters(dialogue(latched), CFG).kept


def test_separable_sources_are_re_timed_and_pass() -> None:
    d = dialogue(_terminal())
    sep = replace(d, source=PerSpeakerSource({"A": "/data/a.wav", "B": "/data/b.wav"}))
    assert apply_filters(sep, CFG).kept


def test_leaving_it_out_of_the_order_keeps_the_overlap() -> None:
    order = [f for f in CFG.filters.order if f != "mono_overlaps"]
    assert apply_filters(dialogue(_terminal()), build_config({"filters": {"order": order}})).kept
