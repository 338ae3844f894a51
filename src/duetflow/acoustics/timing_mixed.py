"""Acoustic turn timing on a mono mix: blocks measured whole, overlap boundaries by slack.

A boundary inside an annotated overlap cannot be measured (both voices are in one channel).
Blocks of continuous talk (:func:`duetflow.acoustics.blocks.merge_blocks`) are measured whole;
their outer edges are acoustic and give the dialogue's typical slack (:func:`estimate_slack`),
by which each boundary inside the block moves inward (:func:`measure_mixed`). Rules:
:mod:`duetflow.acoustics.timing` (module docstring) and docs/turn-taking.md.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from duetflow.acoustics import source_acoustics
from duetflow.acoustics.blocks import merge_blocks
from duetflow.acoustics.timing_edges import (
    MIN_SLACK_EDGES,
    MIN_SLACK_SIDE,
    Edge,
    EdgeSource,
    Measured,
    Slack,
    edges_of,
    floor_for,
    in_range,
    speech_indices,
)
from duetflow.acoustics.track_reader import CONTEXT_S, Reader, chunks
from duetflow.audio import edges
from duetflow.config import TurnsConfig
from duetflow.records.dialogue import Dialogue, Turn

#: A boundary inside an overlap moves by at most this share of its turn's annotated length.
MAX_SLACK_SHARE = 0.25


def estimate_slack(onsets: Sequence[float], offsets: Sequence[float], cap_s: float) -> Slack | None:
    """The typical slack of measured boundaries: the median per side (the pooled median for a
    side with fewer than :data:`MIN_SLACK_SIDE`), clipped to ``[0, cap_s]``; None with fewer
    than :data:`MIN_SLACK_EDGES` boundaries in all."""
    pooled = [*onsets, *offsets]
    if len(pooled) < MIN_SLACK_EDGES:
        return None
    both = statistics.median(pooled)

    def side(v: Sequence[float]) -> float:
        m = statistics.median(v) if len(v) >= MIN_SLACK_SIDE else both
        return min(max(m, 0.0), cap_s)

    return Slack(side(onsets), side(offsets), len(onsets), len(offsets))


def measure_mixed(d: Dialogue, turns: Sequence[Turn], cfg: TurnsConfig, read: Reader) -> Measured:
    """Mono mix: blocks of continuous talk (annotations that overlap) are measured whole; their
    outer edges are acoustic and give the slack samples, their inner boundaries get slack."""
    res = Measured()
    speech = speech_indices(turns)
    blocks = merge_blocks(turns, speech, 0.0)
    tol = cfg.timing_outward_s
    last: edges.Floor | None = None
    for chunk in chunks([(blk.start, blk.end) for blk in blocks]):
        a = max(0.0, blocks[chunk[0]].start - CONTEXT_S)
        b = max(blocks[k].end for k in chunk) + CONTEXT_S
        span = read(a, b)
        x = span.tracks["mix"]
        near = in_range(turns, span.t0, b)
        v = source_acoustics.view(x, span.sr, [(span.at(t.start), span.at(t.end)) for t in near])
        floor = floor_for(v, last) or edges.DIGITAL_FLOOR
        last = floor
        for k in chunk:
            blk = blocks[k]
            lo, hi = blk.start - tol, blk.end + tol
            if k > 0:
                lo = max(lo, 0.5 * (blocks[k - 1].end + blk.start))
            if k + 1 < len(blocks):
                hi = min(hi, 0.5 * (blk.end + blocks[k + 1].start))
            bounds = (max(lo, span.t0), min(hi, span.t0 + len(x) / span.sr))
            ext = source_acoustics.extent(
                v, floor, (span.at(blk.start), span.at(blk.end)),
                (span.at(bounds[0]), span.at(bounds[1])),
            )  # fmt: skip
            got = edges_of(ext, span, bounds)
            if got is None:
                res.no_speech.update(blk.members)
                continue
            first = min(blk.members, key=lambda i: (turns[i].start, i))
            final = max(blk.members, key=lambda i: (turns[i].end, -i))
            if got[0] is not None:
                res.starts[first] = Edge(got[0], EdgeSource.ACOUSTIC)
                res.onset_slack.append(got[0] - turns[first].start)
            if got[1] is not None:
                res.ends[final] = Edge(got[1], EdgeSource.ACOUSTIC)
                res.offset_slack.append(turns[final].end - got[1])
    slack = estimate_slack(res.onset_slack, res.offset_slack, cfg.max_slack_s)
    if slack is not None:
        for blk in blocks:
            if len(blk.members) < 2 or blk.members[0] in res.no_speech:
                continue
            first = min(blk.members, key=lambda i: (turns[i].start, i))
            final = max(blk.members, key=lambda i: (turns[i].end, -i))
            for i in blk.members:
                t = turns[i]
                most = MAX_SLACK_SHARE * (t.end - t.start)
                if i != first:
                    res.starts[i] = Edge(t.start + min(slack.onset_s, most), EdgeSource.SLACK)
                if i != final:
                    res.ends[i] = Edge(t.end - min(slack.offset_s, most), EdgeSource.SLACK)
    res.slack = slack
    return res
