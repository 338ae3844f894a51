"""PH length and turn count drawn from the human dialogues of the language (issue 25 item 2).

docs/equalisation.md, *Length and turns*: each script is cut at a line boundary to a length
drawn from the HH/HM dialogues of its language, so PH durations follow the human distribution
instead of the script's own length (every sample script used to be 10 lines, ~55 s).
"""

from __future__ import annotations

import numpy as np
import pytest

from duetflow.seeding import rng_for
from duetflow.tts.length_match import MIN_LINES, draw_target_s, lines_for_target
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


def test_targets_follow_the_human_distribution_and_are_seeded() -> None:
    human = [float(x) for x in np.random.default_rng(7).uniform(21, 45, 40)]
    draws = [draw_target_s(human, rng_for(1234, f"ph__s{k}", "length")) for k in range(400)]
    again = [draw_target_s(human, rng_for(1234, f"ph__s{k}", "length")) for k in range(400)]
    assert draws == again
    assert all(d in human for d in draws)
    got = np.array(draws, dtype=float)
    assert abs(got.mean() - np.mean(human)) < 1.0 and abs(got.std() - np.std(human)) < 1.0
    assert draw_target_s([], rng_for(1, "x")) is None


def test_the_pool_keeps_lengths_per_language() -> None:
    pool = VoicePool((), (), (("en", 30.0), ("en", 40.0), ("zh", 50.0)))
    assert pool.lengths_for("en-US") == [30.0, 40.0]
    assert pool.lengths_for("zh-CN") == [50.0]
    assert pool.lengths_for("de") == []
