"""Predicted rendered length against lengths worked out by hand from the re-timing rules.

Every expectation below is arithmetic on the constructed timeline (turn durations, the number of
speaker changes times the gap bounds, capped same-speaker pauses, the edge silences), not a call
into the layout code.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duetflow.config import RenderConfig, RunConfig, TurnsConfig, WindowConfig, build_config
from duetflow.records.dialogue import PerSpeakerSource, Turn, TurnKind
from duetflow.turntaking.rendered_length import (
    TOO_LONG,
    TOO_SHORT,
    LengthModel,
    length_problem,
    predict_length,
)
from duetflow.turntaking.selection import select
from duetflow.turntaking.windows import make_windows

from .helpers import alternating, dialogue

CFG = RunConfig()
G_LO, G_HI = 0.18, 0.23  # default render.gap_ms_min / gap_ms_max, seconds
EDGE = 2 * 0.18  # silence kept before the first and after the last speech


def separable(ts: tuple[Turn, ...]):  # type: ignore[no-untyped-def]
    d = dialogue(ts)
    return replace(d, source=PerSpeakerSource(paths={"A": "a.wav", "B": "b.wav"}))


def expect(speech_s: float, changes: int, pauses_s: float = 0.0) -> tuple[float, float]:
    return (
        speech_s + changes * G_LO + pauses_s + EDGE,
        speech_s + changes * G_HI + pauses_s + EDGE,
    )


@pytest.mark.parametrize("mixed", [True, False])
def test_speaker_changes_become_drawn_gaps_whatever_the_source_pause(mixed: bool) -> None:
    # 6 turns of 2.2 s with 1.8 s pauses: 22.2 s of source renders to about 14.5 s.
    ts = alternating(6, 2.2, 1.8, start=3.0)
    d = dialogue(ts) if mixed else separable(ts)
    r = predict_length(d, CFG)
    assert r is not None
    assert (r.lo_s, r.hi_s) == pytest.approx(expect(6 * 2.2, 5))
    # too short to be a window although the source stretch is 22.2 s
    assert make_windows(d, CFG.window, CFG.turns, (), CFG.render) == []
    [rej] = select(d, CFG).rejected
    assert rej.reason == "no_window"
    assert json.loads(rej.detail)["predicted_s"] == [round(x, 3) for x in expect(13.2, 5)]


def test_same_speaker_pauses_are_capped() -> None:
    ts = (Turn("A", 0.0, 3.0), Turn("A", 5.0, 8.0), Turn("A", 8.4, 9.0), Turn("B", 9.5, 12.0))
    r = predict_length(separable(ts), CFG)
    assert r is not None
    # pauses: 2.0 s capped to 1.0, 0.4 kept; one speaker change
    assert (r.lo_s, r.hi_s) == pytest.approx(expect(3 + 3 + 0.6 + 2.5, 1, 1.0 + 0.4))
    capped = RunConfig(render=RenderConfig(same_speaker_pause_cap_s=0.25))
    r2 = predict_length(separable(ts), capped)
    assert r2 is not None and r2.lo_s == pytest.approx(expect(9.1, 1, 0.25 + 0.25)[0])


def test_terminal_overlap_separable_is_laid_end_to_end_mixed_keeps_it() -> None:
    ts = (Turn("A", 0.0, 4.0), Turn("B", 3.8, 7.0), Turn("A", 7.5, 9.0))
    sep = predict_length(separable(ts), CFG)
    mono = predict_length(dialogue(ts), CFG)
    assert sep is not None and mono is not None
    # separable: both turns whole, a drawn gap between them (no speech lost)
    assert (sep.lo_s, sep.hi_s) == pytest.approx(expect(4.0 + 3.2 + 1.5, 2))
    # mixed mono: the overlapped change stays as recorded (one block 0-7), one drawn gap
    assert (mono.lo_s, mono.hi_s) == pytest.approx(expect(7.0 + 1.5, 1))


def test_backchannels_and_nonspeech_add_nothing() -> None:
    ts = (
        Turn("A", 0.0, 5.0),
        Turn("B", 2.0, 3.5, "yeah, right, I see"),  # a backchannel riding in A's turn
        Turn("G", 5.2, 9.0, "[MUSIC]", kind=TurnKind.NONSPEECH),
        Turn("B", 9.5, 12.0),
    )
    for d in (separable(ts), dialogue(ts)):
        r = predict_length(d, CFG)
        assert r is not None and (r.lo_s, r.hi_s) == pytest.approx(expect(5.0 + 2.5, 1))
        drop = RunConfig(render=RenderConfig(backchannels="drop"))
        r2 = predict_length(d, drop)
        assert r2 is not None and r2.lo_s == pytest.approx(r.lo_s)


def test_lead_in_and_tail_are_trimmed() -> None:
    a = predict_length(separable(alternating(4, 3.0, 0.5, start=0.0)), CFG)
    b = predict_length(separable(alternating(4, 3.0, 0.5, start=17.0)), CFG)
    assert a == b


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from("AB"), st.floats(0.3, 6.0), st.floats(0.0, 3.0)),
        min_size=1,
        max_size=25,
    )
)
def test_closed_form_on_non_overlapping_timelines(spec: list[tuple[str, float, float]]) -> None:
    ts, t = [], 0.0
    for spk, dur, pause in spec:
        ts.append(Turn(spk, round(t, 3), round(t + dur, 3)))
        t = round(t + dur + pause + 0.001, 3)  # never touching: separate blocks in mono too
    speech = sum(x.end - x.start for x in ts)
    changes = sum(a.speaker != b.speaker for a, b in itertools.pairwise(ts))
    pauses = sum(
        min(b.start - a.end, 1.0) for a, b in itertools.pairwise(ts) if a.speaker == b.speaker
    )
    lo, hi = expect(speech, changes, pauses)
    for d in (separable(tuple(ts)), dialogue(tuple(ts))):
        r = predict_length(d, CFG)
        assert r is not None
        assert r.lo_s == pytest.approx(lo) and r.hi_s == pytest.approx(hi)
        # an excerpt of the whole-timeline model equals the model of the excerpt's own turns
        if len(ts) >= 3:
            s, e = ts[1].start, ts[-1].end
            inner = replace(d, turns=tuple(ts[1:]))
            model = LengthModel(
                d.turns,
                mixed=d.source.kind == "mixed_mono",
                render=CFG.render,
                turns_cfg=CFG.turns,
            )
            a, b = model.excerpt(s, e), predict_length(inner, CFG)
            assert a is not None and b is not None
            assert (a.lo_s, a.hi_s) == pytest.approx((b.lo_s, b.hi_s))


def test_windows_are_chosen_by_rendered_length() -> None:
    # Long pauses (1.5 s) between 3 s turns: 60 s of source renders to about 42 s, so greedy
    # windows span far more source time than window.max_s, and every one renders in range.
    d = separable(alternating(80, 3.0, 1.5))
    lo_lim, hi_lim = CFG.window.select_range
    ws = make_windows(d, CFG.window, CFG.turns, (), CFG.render)
    assert ws
    for w in ws:
        n = len(w.turns)
        lo, hi = expect(3.0 * n, n - 1)
        assert lo_lim <= lo and hi <= hi_lim
        assert w.duration_s > CFG.window.max_s or w is ws[-1]  # source span is much longer
    # greedy takes the longest that fits: one more turn would not
    n0 = len(ws[0].turns)
    assert expect(3.0 * (n0 + 1), n0)[1] > hi_lim


def test_margin_is_clamped_to_half_the_range() -> None:
    assert WindowConfig(min_s=10, max_s=10).select_range == (10, 10)
    assert WindowConfig(min_s=10, max_s=13, margin_s=5).select_range == (11.5, 11.5)
    assert WindowConfig().select_range == (21.0, 59.0)


def test_length_problem_codes() -> None:
    w = WindowConfig()
    assert length_problem(19.99, w) == (TOO_SHORT, {"duration_s": 19.99, "min_s": 20.0})
    assert length_problem(60.5, w) == (TOO_LONG, {"duration_s": 60.5, "max_s": 60.0})
    assert length_problem(20.0, w) is None and length_problem(60.0, w) is None


def test_duration_filter_uses_the_predicted_length() -> None:
    from duetflow.turntaking.filters import apply_filters

    # 24 s of source with 2 s pauses renders to about 15 s: too short
    short = dialogue(alternating(6, 2.0, 2.4))
    res = apply_filters(short, build_config({}))
    assert res.reason == "too_short"
    detail = dict(res.failing[0][1])
    assert detail["predicted_s"] == [
        round(expect(12.0, 5)[0], 3),
        round(expect(12.0, 5)[1], 3),
    ]
    assert detail["source_s"] == pytest.approx(24.0)
    # TurnsConfig is honoured: with transcript cues off the same timeline gives the same length
    off = build_config({"turns": TurnsConfig(transcript_cues=False).model_dump()})
    assert apply_filters(short, off).reason == "too_short"
