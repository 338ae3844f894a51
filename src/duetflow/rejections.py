"""Rejections that explain themselves: where in the source, and which config knob decided it.

Every rejection carries a reason code and a detail (JSON for the window, filter and length
checks, the error message for input problems). :func:`explain` turns one into two lines a
person can act on: *where* (the source file and the time range on its timeline, or the file
and line of a bad input) and *why* (the knobs of
:data:`~duetflow.turntaking.filters.REASON_KNOBS` with the values the run used, and the facts
that crossed them), e.g. ``filters.max_interruptions = 0; B came in at 20.10 s, 0.35 s before
A's turn ended: an interruption, above turns.terminal_overlap_s = 0.3``. Reasons of the input
(ingest, render) name no knob: the input decided. ``duetflow rejections WORKDIR`` prints them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duetflow.records.dialogue import Rejection
from duetflow.records.manifest import REJECTIONS, read_rejections
from duetflow.turntaking.filters import REASON_KNOBS

#: the window suffix of an item id (``model.window_id``), to name the source dialogue
_WINDOW = re.compile(r"__w\d+_\d+$")


@dataclass(frozen=True)
class Explained:
    """One rejection with where it happened and what decided it."""

    rejection: Rejection
    where: str
    why: str


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:g}"
    if isinstance(x, list | tuple) and all(isinstance(v, int | float) for v in x):
        return "–".join(f"{v:g}" for v in x)
    return json.dumps(x, ensure_ascii=False) if isinstance(x, dict | list) else str(x)


def _interruption(d: Mapping[str, Any]) -> str:
    limit = d.get("terminal_overlap_s")
    parts = [f"filters.max_interruptions = {d.get('max')}; {d.get('count')} interruption(s)"]
    for e in d.get("events", [])[:3]:
        before = float(e.get("before_host_end_s", 0.0))
        said = (
            f"{e.get('listener')} came in at {float(e.get('at_s', 0)):.2f} s, {before:.2f} s "
            f"before {e.get('host')}'s turn ended"
        )
        if limit is not None and before > float(limit):
            parts.append(f"{said}: an interruption, above turns.terminal_overlap_s = {limit}")
        else:
            parts.append(
                f"{said}: within turns.terminal_overlap_s = {limit}, but {e.get('host')}'s "
                "turn is marked cut off in the transcript (turns.transcript_cues)"
            )
    if not d.get("events") and d.get("at_s"):
        parts.append(f"at {_fmt(d['at_s'])} s")
    return "; ".join(parts)


def _length(d: Mapping[str, Any], reason: str) -> str:
    knob = "window.min_s" if reason == "too_short" else "window.max_s"
    value = d.get("min_s" if reason == "too_short" else "max_s")
    if "duration_s" in d:  # measured on the rendered file
        return f"{knob} = {value}; the rendered audio is {d['duration_s']} s"
    predicted = d.get("predicted_s")
    told = f"predicted rendered length {_fmt(predicted)} s" if predicted else "no length"
    return (
        f"{knob} = {value} (selection range {_fmt(d.get('select_range_s'))} s after "
        f"window.margin_s); {told}"
    )


_EXPLAIN: dict[str, Callable[[Mapping[str, Any], str], str]] = {
    "interruption": lambda d, _: _interruption(d),
    "non_floor_interruption": lambda d, _: (
        f"filters.max_non_floor_interruptions = {d.get('max')}; {d.get('count')} bids for the "
        f"floor the host talked over, at {_fmt(d.get('at_s'))} s"
    ),
    "too_short": _length,
    "too_long": _length,
    "too_few_turns": lambda d, _: (
        f"filters.min_turns_per_speaker = {d.get('min_turns_per_speaker')}; turns per speaker "
        f"{_fmt(d.get('counts'))}"
    ),
    "imbalanced": lambda d, _: (
        f"filters.balance_min, balance_max = {_fmt(d.get('band'))}; utterance shares "
        f"{_fmt(d.get('utterance_share'))}"
    ),
    "unintelligible": lambda d, _: (
        f"filters.unintelligible_max_share = {d.get('max_share')}; {d.get('turns')} "
        f"unintelligible-only turns, a share of {d.get('share')}"
    ),
    "collection_header": lambda d, _: (
        f"filters.collection_header_patterns (or the corpus's header label): turn "
        f"{d.get('turn_index')} {d.get('text')!r}"
    ),
    "language": lambda d, _: (
        f"filters.languages = {_fmt(d.get('allowed'))}; the dialogue speaks "
        f"{_fmt(d.get('languages'))}"
    ),
    "topic": lambda d, _: f"filters.topics = {_fmt(d.get('allowed'))}; topic {d.get('topic')}",
    "no_window": lambda d, _: (
        f"window.min_s = {d.get('min_s')}, window.max_s = {d.get('max_s')}, window.policy = "
        f"{d.get('policy')}: no window fits; {d.get('n_turns')} turns over {d.get('span_s')} s, "
        f"predicted rendered length {_fmt(d.get('predicted_s'))} s"
    ),
}


def _why(reason: str, detail: Mapping[str, Any]) -> str:
    explain = _EXPLAIN.get(reason)
    if explain is not None:
        return explain(detail, reason)
    knobs = REASON_KNOBS.get(reason)
    if knobs:
        return f"{', '.join(knobs)}; {_fmt(dict(detail))}"
    return f"the input (no config knob): {_fmt(dict(detail))}"


def explain(rej: Rejection) -> Explained:
    """Where ``rej`` happened on its source and which knob (with its value) decided it."""
    try:
        detail = json.loads(rej.detail) if rej.detail.startswith("{") else None
    except ValueError:
        detail = None
    # a dialogue of clips (DailyTalk) has no one file: name the source dialogue instead
    source = rej.source_path or f"{_WINDOW.sub('', rej.item_id)} (a clip per turn, no one file)"
    if not isinstance(detail, dict):  # an input problem: the message names file, line, cause
        return Explained(rej, source, f"the input (no config knob): {rej.detail}")
    window = detail.get("window")
    where = source
    if isinstance(window, list) and len(window) == 2:
        where = f"{source}, {float(window[0]):.2f}–{float(window[1]):.2f} s"
    failing = detail.get("failing")
    if isinstance(failing, list) and failing:
        whys = [_why(str(f.get("reason")), f) for f in failing if isinstance(f, dict)]
        why = whys[0] + "".join(f"\n  also: {w}" for w in whys[1:])
    else:
        why = _why(rej.reason, detail)
    return Explained(rej, where, why)


def iter_explained(workdir: str | Path, reasons: Sequence[str] = ()) -> Iterator[Explained]:
    """The rejections of a work directory (intake or rendered), explained, streamed in table
    order; only those with a reason in ``reasons`` when given."""
    for rej in read_rejections(Path(workdir) / REJECTIONS):
        if not reasons or rej.reason in reasons:
            yield explain(rej)
