"""How long a dialogue lasts once rendered, predicted from its turns; the output-length contract.

Every HH/HM/PH dialogue of a release lasts ``window.min_s``–``window.max_s`` seconds *as rendered*
(20–60 s by default). Rendering changes the length: each speaker change becomes a
U[``render.gap_ms_min``, ``render.gap_ms_max``] gap, same-speaker pauses are capped at
``render.same_speaker_pause_cap_s``, the slack before the first and after the last turn is
trimmed, non-speech (and with ``render.backchannels: drop`` the backchannels) is left out, and in
separable sources overlapping turns are laid end to end. A 22 s stretch of source can render to
14 s, so windows are chosen by the length they will *render* to.

:class:`LengthModel` runs the renderer's own layout (:mod:`duetflow.turntaking.retime`:
``layout_turns`` for separable sources, ``merge_blocks`` + ``layout_blocks`` for mixed mono) on
the turn times, once with every drawn gap at ``gap_ms_min`` and once at ``gap_ms_max``,
so the prediction follows the renderer's rules by construction rather than by a second copy of
them. In the process stage those times are already the acoustic extents
(:mod:`duetflow.acoustics.timing`), so clip padding and annotation slack are not counted as speech;
on annotated times it is a bound: trimming each turn to its acoustic extent can only make the
audio shorter, which is what ``window.margin_s`` is for; the rendered audio is checked
afterwards anyway (:func:`length_problem`), by the process stage, the PH assembly and the schema
checks (so ``duetflow validate`` fails a release holding a dialogue outside the range).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from duetflow.acoustics.blocks import Block, merge_blocks
from duetflow.config import RenderConfig, RunConfig, TurnsConfig, WindowConfig
from duetflow.records.dialogue import Dialogue, MixedMonoSource, Turn
from duetflow.turntaking.overlaps import OverlapEvent, mark_backchannels
from duetflow.turntaking.retime import (
    edge_silence_s,
    layout_blocks,
    layout_turns,
    mixed_speech_indices,
)

__all__ = [
    "TOO_LONG",
    "TOO_SHORT",
    "LengthModel",
    "LengthRange",
    "length_problem",
    "predict_length",
]

#: Reason codes of a rendered dialogue outside ``[window.min_s, window.max_s]``.
TOO_SHORT = "rendered_too_short"
TOO_LONG = "rendered_too_long"


@dataclass(frozen=True)
class LengthRange:
    """Predicted rendered length (s): every gap at ``gap_ms_min`` / every gap at ``gap_ms_max``."""

    lo_s: float
    hi_s: float

    def within(self, lo: float, hi: float) -> bool:
        """Both ends inside ``[lo, hi]``."""
        return lo - 1e-9 <= self.lo_s and self.hi_s <= hi + 1e-9

    def to_list(self) -> list[float]:
        return [round(self.lo_s, 3), round(self.hi_s, 3)]


def _fixed_gaps(cfg: RenderConfig, gap_ms: float) -> RenderConfig:
    # U[g, g] draws g exactly: the renderer's own layout with a known gap everywhere
    return cfg.model_copy(update={"gap_ms_min": gap_ms, "gap_ms_max": gap_ms})


class LengthModel:
    """The rendered layout of a turn timeline, queried for the whole or for any excerpt.

    Laid out once at both gap extremes (``events``: the turns' overlap classification, when
    already computed); an excerpt ``[start, end]`` (boundaries no turn
    straddles, as windows are) renders to the span of the units (a main turn with the
    backchannels riding in it, or a mixed-mono block) that start inside it, plus the edge
    silences. Turns are classified (backchannels marked) on the timeline given, as selection
    does.
    """

    def __init__(
        self,
        turns: Sequence[Turn],
        *,
        mixed: bool,
        render: RenderConfig,
        turns_cfg: TurnsConfig,
        events: Sequence[OverlapEvent] | None = None,
    ) -> None:
        marked = mark_backchannels(turns, turns_cfg, events)
        self.edge_s = edge_silence_s(render)
        rng = np.random.default_rng(0)  # never drawn from with equal bounds; kept for the API
        lay = []
        blocks: list[Block] | None = None
        if mixed:  # blocks do not depend on the gaps: merged once
            keep, _ = mixed_speech_indices(marked, render)
            blocks = merge_blocks(marked, keep, turns_cfg.min_overlap_s)
        for gap_ms in (render.gap_ms_min, render.gap_ms_max):
            cfg = _fixed_gaps(render, gap_ms)
            if blocks is not None:
                lay.append(_block_units(blocks, cfg, rng))
            else:
                lay.append(_turn_units(marked, cfg, rng))
        (self.src_starts, src_ends, self._lo_start, self._lo_end) = lay[0]
        (_, _, self._hi_start, self._hi_end) = lay[1]
        self._src_ends = src_ends
        self._ends_before = list(itertools.accumulate(src_ends, max))  # prefix max

    @property
    def n_units(self) -> int:
        return len(self.src_starts)

    def _span(self, i: int, j: int) -> LengthRange | None:
        if j <= i:
            return None
        e2 = 2 * self.edge_s
        return LengthRange(
            max(self._lo_end[i:j]) - self._lo_start[i] + e2,
            max(self._hi_end[i:j]) - self._hi_start[i] + e2,
        )

    def whole(self) -> LengthRange | None:
        """Rendered length of the whole timeline (None: nothing would be rendered)."""
        return self._span(0, self.n_units)

    def excerpt(self, start: float, end: float) -> LengthRange | None:
        """Rendered length of the excerpt ``[start, end]`` of the timeline (source seconds).

        None when nothing would be rendered or the excerpt splits a unit (a mixed-mono block
        of continuous talk, or a turn from a backchannel riding in it).
        """
        i = bisect.bisect_left(self.src_starts, start)
        j = bisect.bisect_left(self.src_starts, end)
        # a zero-length unit at ``end`` lies inside the excerpt, as windows take it
        while j < self.n_units and self.src_starts[j] == end and self._src_ends[j] <= end:
            j += 1
        if i > 0 and self._ends_before[i - 1] > start + 1e-9:
            return None
        if j > i and max(self._src_ends[i:j]) > end + 1e-9:
            return None
        return self._span(i, j)


#: per unit, in layout order: source start, source end, output start, output end
_Units = tuple[list[float], list[float], list[float], list[float]]


def _turn_units(turns: Sequence[Turn], cfg: RenderConfig, rng: np.random.Generator) -> _Units:
    edge = edge_silence_s(cfg)
    tl = layout_turns(turns, cfg, rng, lead_s=edge, tail_s=edge)
    pos = {p.index: k for k, p in enumerate(tl.mains)}
    src = [turns[p.index].start for p in tl.mains]
    src1 = [turns[p.index].end for p in tl.mains]
    out0 = [p.out_start for p in tl.mains]
    out1 = [p.out_end for p in tl.mains]
    for p in tl.placements:  # a backchannel may ring on past its host's end
        if p.host is not None:
            k = pos[p.host]
            out1[k] = max(out1[k], p.out_end)
            src1[k] = max(src1[k], turns[p.index].end)
    return src, src1, out0, out1


def _block_units(blocks: Sequence[Block], cfg: RenderConfig, rng: np.random.Generator) -> _Units:
    edge = edge_silence_s(cfg)
    starts, _, _, _ = layout_blocks(blocks, cfg, rng, lead_s=edge, tail_s=edge)
    src = [b.start for b in blocks]
    ends = [s + (b.end - b.start) for s, b in zip(starts, blocks, strict=True)]
    return src, [b.end for b in blocks], list(starts), ends


def model_for(
    dialogue: Dialogue, config: RunConfig, events: Sequence[OverlapEvent] | None = None
) -> LengthModel:
    """The :class:`LengthModel` of a dialogue's turns, laid out as its source kind renders."""
    return LengthModel(
        dialogue.turns,
        mixed=isinstance(dialogue.source, MixedMonoSource),
        render=config.render,
        turns_cfg=config.turns,
        events=events,
    )


def predict_length(
    dialogue: Dialogue, config: RunConfig, events: Sequence[OverlapEvent] | None = None
) -> LengthRange | None:
    """Predicted rendered length of a dialogue (or window) as a whole (``events``: its overlap
    classification, when already computed)."""
    return model_for(dialogue, config, events).whole()


def length_problem(duration_s: float, window: WindowConfig) -> tuple[str, dict[str, Any]] | None:
    """``(reason, detail)`` when a rendered duration is outside ``[min_s, max_s]``, else None."""
    if duration_s < window.min_s:
        return TOO_SHORT, {"duration_s": round(duration_s, 3), "min_s": window.min_s}
    if duration_s > window.max_s:
        return TOO_LONG, {"duration_s": round(duration_s, 3), "max_s": window.max_s}
    return None
