"""Select stage: one source dialogue → kept windows + rejections + statistics.

Windows first (:mod:`~duetflow.turntaking.windows`), then the configured filters
(:mod:`~duetflow.turntaking.filters`) on each window. Every window ends up either kept or
rejected, and a source dialogue that yields no window is itself one rejection, so inputs = kept
+ rejected holds at every step. Kept windows carry backchannel marks (``TurnKind.BACKCHANNEL``)
the renderer relies on.

Overlap analysis runs once per source dialogue and once per window, and its result is passed on
to windowing, the length model, backchannel marks, filters, balance and statistics. A window is
classified on its own turns (a classification looks at the turns after a listener turn, which a
window ends), and marking backchannels changes only turn kinds, which classification does not
read, so the window's events hold for its marked turns too.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, replace
from typing import Any

from duetflow.config import RunConfig
from duetflow.errors import InputError
from duetflow.records.convert import dumps
from duetflow.records.dialogue import Dialogue, Rejection, Stage, Turn, TurnKind
from duetflow.records.locations import dialogue_roots, relative_rejection
from duetflow.turntaking.filters import FilterContext, apply_filters
from duetflow.turntaking.overlaps import (
    OverlapEvent,
    balance,
    classify_overlaps,
    floor_transfer_offsets,
    mark_backchannels,
)
from duetflow.turntaking.rendered_length import predict_length
from duetflow.turntaking.stats import DialogueStats, overlap_counts
from duetflow.turntaking.windows import make_windows

log = logging.getLogger(__name__)

__all__ = ["Selection", "select", "validate_turns"]


@dataclass(frozen=True)
class Selection:
    """What selection made of one source dialogue."""

    kept: list[Dialogue]
    rejected: list[Rejection]
    stats: DialogueStats


def _source_path(d: Dialogue) -> str:
    path = getattr(d.source, "path", None)
    if isinstance(path, str):
        return path
    return str(d.provenance.get("source_path", ""))


def validate_turns(d: Dialogue) -> None:
    """Raise ``InputError`` when a turn's times are not finite or end before they start."""
    for i, t in enumerate(d.turns):
        if not (math.isfinite(t.start) and math.isfinite(t.end)):
            raise InputError(
                _source_path(d) or d.id, f"turn {i} has non-finite times", reason="bad_turns"
            )
        if t.end < t.start:
            raise InputError(
                _source_path(d) or d.id,
                f"turn {i} ends before it starts ({t.start:.3f} > {t.end:.3f})",
                reason="bad_turns",
            )


def _rejection(d: Dialogue, stage: Stage, reason: str, detail: dict[str, Any]) -> Rejection:
    rej = Rejection(
        item_id=d.id,
        stage=stage,
        reason=reason,
        detail=dumps(detail),
        corpus=d.corpus,
        source_path=_source_path(d),
    )
    return relative_rejection(rej, dialogue_roots(d))


def _opening_turn(dialogue: Dialogue) -> Turn | None:
    """An HM session's first turn (its opening line), which its one HM window starts with;
    None for other dialogues and HM dialogues without a declared opening line."""
    if str(dialogue.category) != "HM" or not dialogue.design.opening_line or not dialogue.turns:
        return None
    talk = [t for t in dialogue.turns if t.kind is TurnKind.TURN] or list(dialogue.turns)
    return min(talk, key=lambda t: (t.start, t.end))


def select(dialogue: Dialogue, config: RunConfig) -> Selection:
    """Cut ``dialogue`` into windows and filter them; every window is kept or rejected."""
    tc = config.turns
    speakers = [s.id for s in dialogue.speakers]
    try:
        validate_turns(dialogue)
    except InputError as e:
        log.warning("%s", e)
        rej = _rejection(dialogue, Stage.WINDOW, e.reason, {"error": str(e)})
        empty = DialogueStats.empty(dialogue, balance((), tc, speakers))
        return Selection(kept=[], rejected=[rej], stats=empty)

    events = classify_overlaps(dialogue.turns, tc)
    windows = make_windows(
        dialogue,
        config.window,
        tc,
        config.filters.collection_header_patterns,
        config.render,
        events=events,
    )
    kept: list[Dialogue] = []
    rejected: list[Rejection] = []
    kept_ftos: list[float] = []
    kept_events: list[OverlapEvent] = []
    b_shares: list[tuple[float, bool]] = []
    b_id = dialogue.speaker_b.id
    if not windows:
        starts = [t.start for t in dialogue.turns]
        ends = [t.end for t in dialogue.turns]
        span = (max(ends) - min(starts)) if dialogue.turns else 0.0
        predicted = predict_length(dialogue, config, events) if dialogue.turns else None
        rejected.append(
            _rejection(
                dialogue,
                Stage.WINDOW,
                "no_window",
                {
                    "span_s": round(span, 3),
                    "predicted_s": predicted.to_list() if predicted else None,
                    "select_range_s": [round(x, 3) for x in config.window.select_range],
                    "min_s": config.window.min_s,
                    "max_s": config.window.max_s,
                    "policy": config.window.policy,
                    "n_turns": len(dialogue.turns),
                },
            )
        )
    opening = _opening_turn(dialogue)
    for w in windows:
        if opening is not None and (not w.turns or w.turns[0] != opening):
            # an HM item starts from the design's opening line (duetflow.design)
            detail = {"window": list(w.window or ()), "first_turn_start_s": opening.start}
            rejected.append(_rejection(w, Stage.WINDOW, "hm_not_opening", detail))
            continue
        w_events = classify_overlaps(w.turns, tc)
        marked = replace(w, turns=mark_backchannels(w.turns, tc, w_events))
        ctx = FilterContext(marked, config, w_events)
        res = apply_filters(marked, config, ctx)
        b_shares.append((ctx.balance.utterance_share.get(b_id, 0.0), res.kept))
        if res.kept:
            kept.append(marked)
            kept_events.extend(ctx.events)
            kept_ftos.extend(floor_transfer_offsets(marked.turns, tc, ctx.events))
        else:
            detail = {"window": list(w.window or ()), **res.detail()}
            rejected.append(_rejection(marked, Stage.FILTER, res.reason or "filtered", detail))

    stats = DialogueStats(
        dialogue_id=dialogue.id,
        corpus=dialogue.corpus,
        category=str(dialogue.category),
        duration_s=dialogue.duration_s,
        n_windows=len(windows),
        n_kept=len(kept),
        ftos=tuple(floor_transfer_offsets(dialogue.turns, tc, events)),
        overlaps=overlap_counts(events),
        balance=balance(dialogue.turns, tc, speakers, events),
        kept_ftos=tuple(kept_ftos),
        kept_overlaps=overlap_counts(kept_events),
        window_b_shares=tuple(b_shares),
        kept_duration_s=sum(k.duration_s for k in kept),
    )
    log.debug(
        "%s: %d windows, %d kept, %d rejected",
        dialogue.id,
        len(windows),
        len(kept),
        len(rejected),
    )
    return Selection(kept=kept, rejected=rejected, stats=stats)
