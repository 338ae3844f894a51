"""PH dialogue length, speaking rate and turn count drawn from the human dialogues.

A judge must not tell PH from HH/HM by how long a dialogue lasts or how many turns it has
(docs/equalisation.md). A script is written to some length; the human dialogues of its language
(the HH and HM dialogues of the voices work directory: what the release holds next to it) have
their own. So every script gets a **target length drawn from those dialogues** (one of their
rendered durations, chosen by ``rng_for(seed, draws_key(script id), "length")``: the same for every
backend voicing it) and is **cut at a line boundary** to the line count whose assembled length
(the synthesized lines' acoustic extents, a mean gap per line change, the edge silence at both
ends) lies nearest the target, keeping at least :data:`MIN_LINES` lines and both speakers. The
turn count then follows the length at the script's own turn length; scripts written in short
turns (as people talk) match the human turn rate too.

**One human dialogue is drawn per script** (:func:`draw_human`): of the same language and
topic when the pool holds at least ``synth.match_topic_min`` dialogues of that topic, else of the
language. It gives the script both its target length and, with ``synth.match_human_rate``, its
target speaking rate (its spoken characters per second of speech, as the cue audit reads it:
:func:`duetflow.tts.speaking_rate.dialogue_rate_cps`), which a backend that sets a pace (eSpeak
NG) speaks at. Drawing both from one dialogue keeps their joint distribution (a long dialogue's
pace with its length); the PH rate's spread is then the humans' spread, not that of one 5–10 s
reference clip per voice (docs/equalisation.md).

Plain functions of numbers; the synthesize step calls them (``synth.match_human_length``,
``synth.match_human_rate``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "MIN_LINES",
    "HumanDialogue",
    "LengthPlan",
    "draw_human",
    "lines_for_target",
]

#: fewest lines a cut script keeps: two turns per speaker (``filters.min_turns_per_speaker``)
MIN_LINES = 4


@dataclass(frozen=True)
class LengthPlan:
    """Where a script was cut: its drawn target, the lines kept and their estimated length."""

    target_s: float
    lines: int
    script_lines: int
    estimated_s: float

    def provenance(self) -> dict[str, float | int]:
        return {
            "target_s": round(self.target_s, 3),
            "lines": self.lines,
            "script_lines": self.script_lines,
            "estimated_s": round(self.estimated_s, 3),
        }


@dataclass(frozen=True)
class HumanDialogue:
    """What a PH script is matched to, of one rendered HH or HM dialogue (the voice pool's).

    ``rate_cps``: its speaking rate (:func:`duetflow.tts.speaking_rate.dialogue_rate_cps`),
    NaN when its turns carry no transcript.
    """

    language: str
    topic: str
    duration_s: float
    rate_cps: float
    turns: int = 0

    @property
    def has_rate(self) -> bool:
        return not math.isnan(self.rate_cps)

    def sort_key(self) -> tuple[str, str, float, float, int]:
        """A total order (an unknown rate sorts first)."""
        rate = self.rate_cps if self.has_rate else -1.0
        return (self.language, self.topic, self.duration_s, rate, self.turns)


def draw_human(
    pool: Sequence[HumanDialogue],
    topic: str,
    rng: np.random.Generator,
    *,
    topic_min: int,
    need_rate: bool = False,
) -> HumanDialogue | None:
    """One human dialogue of ``pool`` (those of the script's language) to match a script to,
    drawn by ``rng``: among those of ``topic`` when there are at least ``topic_min`` of them
    (0: never by topic), else among all; with ``need_rate`` only among those with a measured
    rate (when any has one). Sorted first, so the draw depends on the pool's contents, not its
    order. None: the pool is empty.
    """
    same = list(pool)
    if need_rate and any(h.has_rate for h in same):
        same = [h for h in same if h.has_rate]
    same.sort(key=HumanDialogue.sort_key)
    by_topic = [h for h in same if h.topic == topic]
    if topic_min > 0 and len(by_topic) >= topic_min:
        same = by_topic
    if not same:
        return None
    return same[int(rng.integers(len(same)))]


def lines_for_target(
    speech_s: Sequence[float],
    speakers: Sequence[str],
    target_s: float,
    gap_s: float,
    edge_s: float,
    bounds_s: tuple[float, float] | None = None,
) -> LengthPlan:
    """The line count (a prefix of the script) whose assembled length is nearest ``target_s``.

    ``speech_s[i]``: line i's speech (its acoustic extent); ``gap_s``: the mean pause between
    lines; ``edge_s``: the silence at each end. Prefixes outside ``bounds_s`` (the window's
    range) are passed over while one inside exists. At least :data:`MIN_LINES` lines (all of a
    shorter script) and both speakers.
    """
    n = len(speech_s)
    est = [2 * edge_s + sum(speech_s[:k]) + (k - 1) * gap_s for k in range(1, n + 1)]
    ok = [k for k in range(min(MIN_LINES, n), n + 1) if len(set(speakers[:k])) >= min(2, n)]
    ok = ok or [n]
    if bounds_s is not None:
        inside = [k for k in ok if bounds_s[0] <= est[k - 1] <= bounds_s[1]]
        ok = inside or ok
    k = min(ok, key=lambda k: (abs(est[k - 1] - target_s), k))
    return LengthPlan(target_s, k, n, est[k - 1])
