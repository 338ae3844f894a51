"""PH length, turn count and speaking rate drawn from the human dialogues (issue 25 item 2).

docs/equalisation.md, *Length and turns*: each script is matched to one HH/HM dialogue drawn
from its language and topic; it is cut at a line boundary to that dialogue's length (every
sample script used to be 10 lines, ~55 s) and spoken at its rate, so PH durations and rates
follow the human distributions instead of the script's own length and one reference clip.
"""

from __future__ import annotations

import numpy as np
import pytest

from duetflow.seeding import rng_for
from duetflow.tts.length_match import MIN_LINES, HumanDialogue, draw_human, lines_for_target
from duetflow.tts.voices import VoicePool

SPK = ["A", "B"] * 20


def test_the_prefix_nearest_the_target_is_kept() -> None:
    speech = [2.0] * 30  # 2 s a line, 0.2 s gaps, 0.18 s at each end
    for target in (21.0, 30.0, 44.5, 59.0):
        plan = lines_for_target(speech, SPK[:30], target, 0.2, 0.18)
        assert abs(plan.estimated_s - target) <= 1.1, (target, plan)
        assert plan.estimated_s == pytest.approx(0.36 + 2.0 * plan.lines + 0.2 * (plan.lines - 1))
        assert plan.script_lines == 30


def test_at_least_min_lines_both_speakers_and_the_window() -> None:
    assert lines_for_target([9.0] * 10, SPK[:10], 1.0, 0.2, 0.18).lines == MIN_LINES
    # a target below the window: the shortest prefix inside it instead
    plan = lines_for_target([2.0] * 20, SPK[:20], 5.0, 0.2, 0.18, bounds_s=(21.0, 59.0))
    assert plan.lines == 10 and plan.estimated_s >= 21.0
    # a script shorter than the target keeps every line
    assert lines_for_target([2.0] * 6, SPK[:6], 50.0, 0.2, 0.18).lines == 6
    # the first lines all A: cut only where B has spoken
    spk = ["A"] * 5 + ["B", "A", "B"]
    assert lines_for_target([1.0] * 8, spk, 2.0, 0.2, 0.18).lines == 6


def _humans(n: int, topic: str, seed: int, rate: tuple[float, float]) -> list[HumanDialogue]:
    rng = np.random.default_rng(seed)
    return [
        HumanDialogue("en", topic, float(d), float(r), int(t))
        for d, r, t in zip(
            rng.uniform(21, 45, n), rng.normal(*rate, n), rng.integers(6, 16, n), strict=True
        )
    ]


def _draw(pool: list[HumanDialogue], k: int, topic: str = "t", **kw: object) -> HumanDialogue:
    got = draw_human(pool, topic, rng_for(1234, f"ph__s{k}", "human"), **kw)  # type: ignore[arg-type]
    assert got is not None
    return got


def test_targets_follow_the_human_distribution_and_are_seeded() -> None:
    """Length and rate come jointly from one drawn dialogue: mean and spread of both follow
    the pool, their pairing is the pool's, and the draw is seeded and order-free."""
    human = _humans(40, "t", 7, (11.9, 1.3))
    draws = [_draw(human, k, topic_min=0) for k in range(400)]
    assert draws == [_draw(list(reversed(human)), k, topic_min=0) for k in range(400)]
    assert all(d in human for d in draws)
    for field in ("duration_s", "rate_cps"):
        got = np.array([getattr(d, field) for d in draws])
        want = np.array([getattr(h, field) for h in human])
        assert abs(got.mean() - want.mean()) < 0.1 * want.std(ddof=1) + 0.5, field
        assert abs(got.std() - want.std()) < 0.15 * want.std(), field
    assert draw_human([], "t", rng_for(1, "x"), topic_min=0) is None


def test_the_draw_keeps_to_the_topic_when_the_pool_allows() -> None:
    """A topic with at least ``topic_min`` dialogues is drawn from alone; fewer: the language."""
    slow = _humans(10, "slow", 1, (9.0, 0.5))
    fast = _humans(30, "fast", 2, (14.0, 0.5))
    pool = slow + fast
    assert {_draw(pool, k, "slow", topic_min=8).topic for k in range(100)} == {"slow"}
    assert {_draw(pool, k, "fast", topic_min=8).topic for k in range(100)} == {"fast"}
    # too few of the topic, or topic matching off: the whole language, both topics drawn
    assert {_draw(pool, k, "slow", topic_min=11).topic for k in range(200)} == {"slow", "fast"}
    assert {_draw(pool, k, "slow", topic_min=0).topic for k in range(200)} == {"slow", "fast"}
    assert {_draw(pool, k, "other", topic_min=8).topic for k in range(200)} == {"slow", "fast"}


def test_a_rate_is_drawn_only_where_one_was_measured() -> None:
    pool = [HumanDialogue("en", "t", 30.0, float("nan")), *_humans(5, "t", 3, (12.0, 1.0))]
    assert all(_draw(pool, k, topic_min=0, need_rate=True).has_rate for k in range(100))
    assert not all(_draw(pool, k, topic_min=0).has_rate for k in range(100))
    # no dialogue of the language has a transcript: the length is still matched
    blind = [HumanDialogue("en", "t", 30.0, float("nan"))]
    assert _draw(blind, 0, topic_min=0, need_rate=True).duration_s == 30.0


def test_the_pool_keeps_lengths_per_language() -> None:
    pool = VoicePool(
        (),
        (),
        (
            HumanDialogue("en", "a", 30.0, 11.0),
            HumanDialogue("en", "b", 40.0, 12.0),
            HumanDialogue("zh", "a", 50.0, 4.5),
        ),
    )
    assert pool.lengths_for("en-US") == [30.0, 40.0]
    assert pool.lengths_for("zh-CN") == [50.0]
    assert [h.rate_cps for h in pool.humans_for("zh-CN")] == [4.5]
    assert pool.lengths_for("de") == []


def test_a_script_is_matched_within_its_taxonomy_topic() -> None:
    """The script's free-text topic ("ordinary life") is mapped to the taxonomy id the PH row
    carries before the draw, so the topic filter sees the human dialogues' own ids."""
    from duetflow.config import RunConfig
    from duetflow.tts.script import Script, ScriptLine
    from duetflow.tts.synthesize import _human_match

    humans = _humans(10, "ordinary_life", 4, (10.0, 0.5)) + _humans(30, "work", 5, (14.0, 0.5))
    pool = VoicePool((), (), tuple(humans))
    lines = (ScriptLine("A", "hello"), ScriptLine("B", "hi"))
    cfg = RunConfig()
    got = {
        _human_match(Script(f"s{k}", "en", lines, topic="ordinary life"), pool, cfg).topic  # type: ignore[union-attr]
        for k in range(60)
    }
    assert got == {"ordinary_life"}
    off = cfg.model_copy(update={"synth": cfg.synth.model_copy(update={"match_topic_min": 0})})
    assert {
        _human_match(Script(f"s{k}", "en", lines, topic="ordinary life"), pool, off).topic  # type: ignore[union-attr]
        for k in range(60)
    } == {"ordinary_life", "work"}
