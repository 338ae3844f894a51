"""Blocks of a mixed recording: runs of continuous talk whose turns move together.

Overlapping turns of a mono mix cannot be pulled apart, so acoustic timing
(:mod:`duetflow.acoustics.timing_mixed`) measures them as one block and re-timing
(:mod:`duetflow.turntaking.retime`) moves only the silences between blocks. Pure arithmetic over
turns; here, below both, so the measurement layer does not import turn-taking.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from duetflow.records.dialogue import Turn, TurnKind

__all__ = ["Block", "merge_blocks"]


@dataclass(frozen=True)
class Block:
    """A run of continuous talk in a mixed recording: overlapping turns that move together."""

    start: float
    end: float
    members: tuple[int, ...]
    first_speaker: str
    last_speaker: str


def merge_blocks(
    turns: Sequence[Turn], indices: Sequence[int], overlap_tol_s: float = 0.0
) -> list[Block]:
    """Group the given turns into blocks of continuous talk, in time order.

    A turn joins the current block when it overlaps it by more than ``overlap_tol_s``, or
    touches/overlaps it at all and continues the same speaker. A change of speaker whose
    overlap is at most ``overlap_tol_s`` (``turns.min_overlap_s``: latching, an ordinary
    transition rather than an overlap event) starts a new block, so the change can be re-timed;
    consecutive blocks may then overlap by up to ``overlap_tol_s`` and the renderer cuts them
    at the quietest point of that overlap.

    ``first_speaker``/``last_speaker`` come from the block's main turns (not backchannels), as
    speaker changes are counted between main turns.
    """
    order = sorted(indices, key=lambda i: (turns[i].start, i))
    blocks: list[list[int]] = []
    ends: list[float] = []
    for i in order:
        t = turns[i]
        if blocks:
            last = max(blocks[-1], key=lambda j: (turns[j].end, -j))
            overlap = ends[-1] - t.start
            same = turns[last].speaker == t.speaker
            if overlap > overlap_tol_s or (overlap >= 0 and same):
                blocks[-1].append(i)
                ends[-1] = max(ends[-1], t.end)
                continue
        blocks.append([i])
        ends.append(t.end)
    out = []
    for members in blocks:
        mains = [i for i in members if turns[i].kind == TurnKind.TURN] or members
        first = min(mains, key=lambda i: (turns[i].start, i))
        last = max(mains, key=lambda i: (turns[i].end, -i))
        out.append(
            Block(
                start=min(turns[i].start for i in members),
                end=max(turns[i].end for i in members),
                members=tuple(members),
                first_speaker=turns[first].speaker,
                last_speaker=turns[last].speaker,
            )
        )
    return out
