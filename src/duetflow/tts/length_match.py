"""PH dialogue length drawn from the human dialogues of the same language.

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

Plain functions of numbers; the synthesize step calls them (``synth.match_human_length``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["MIN_LINES", "LengthPlan", "draw_target_s", "lines_for_target"]

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


def draw_target_s(lengths: Sequence[float], rng: np.random.Generator) -> float | None:
    """One of the human dialogues' rendered durations (sorted, one index drawn), or None when
    there are none."""
    pool = sorted(lengths)
    if not pool:
        return None
    return float(pool[int(rng.integers(len(pool)))])


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
