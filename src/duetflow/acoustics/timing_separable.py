"""Acoustic turn timing on separable sources: a channel, file or clip per speaker.

Every edge is measured on the speaker's own track with the other speaker's leak blocked
(:func:`measure_separable`); an edge measured inside the other speaker's talk moves inward no
further than the dialogue's clear edges allow (:func:`limit_masked`). A clip per turn is read
whole and measured over its own background (:func:`measure_per_turn`). Rules:
:mod:`duetflow.acoustics.timing` (module docstring) and docs/turn-taking.md.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from duetflow.acoustics import source_acoustics
from duetflow.acoustics.timing_edges import (
    MIN_BACKGROUND_S,
    MIN_SLACK_EDGES,
    MIN_SLACK_SIDE,
    Edge,
    EdgeSource,
    Measured,
    edges_of,
    floor_for,
    in_range,
    record_edges,
    search_bounds,
    speech_indices,
)
from duetflow.acoustics.track_reader import CONTEXT_S, Reader, Span, chunks
from duetflow.audio import edges
from duetflow.audio.io import read_frames
from duetflow.config import TurnsConfig
from duetflow.errors import InputError
from duetflow.records.dialogue import Dialogue, PerTurnSource, Turn

#: Separable tracks: an edge inside the other speaker's talk moves inward at most this multiple
#: of the most the dialogue's annotations leave at edges clear of overlap, plus
#: :data:`MASK_EXTRA_S` (an exact annotation stays within ~20 ms; a loose one is not held back).
MASK_SCALE = 1.5
MASK_EXTRA_S = 0.01
#: ... where the measured edge lies within this of the other speaker's measured speech (s).
MASK_REACH_S = 0.05


class _Talk:
    """Each speaker's annotated turns, to ask "is someone else talking at ``t``?" in log time."""

    def __init__(self, turns: Sequence[Turn], speech: Sequence[int]) -> None:
        self._by: dict[str, tuple[list[float], list[float]]] = {}
        for who in {turns[i].speaker for i in speech}:
            spans = sorted(
                (turns[i].start, turns[i].end) for i in speech if turns[i].speaker == who
            )
            reach = list(itertools.accumulate((e for _, e in spans), max))
            self._by[who] = ([a for a, _ in spans], reach)

    def other_at(self, who: str, at: float) -> bool:
        """Whether a speaker other than ``who`` has an annotated turn running at ``at``."""
        for s, (starts, reach) in self._by.items():
            if s == who:
                continue
            k = bisect.bisect_left(starts, at)
            if k > 0 and reach[k - 1] > at:
                return True
        return False


def measure_separable(
    d: Dialogue, turns: Sequence[Turn], cfg: TurnsConfig, read: Reader
) -> Measured:
    """A track per speaker (channel or file), read in chunks: each turn's edges measured on its
    speaker's track with the other's leak blocked, then masked edges limited
    (:func:`limit_masked`)."""
    ids = [s.id for s in d.speakers]
    res = Measured()
    speech = [i for i in speech_indices(turns) if turns[i].speaker in ids]
    by_speaker = {
        s: sorted((i for i in speech if turns[i].speaker == s), key=lambda i: turns[i].start)
        for s in ids
    }
    rank = {i: k for idx in by_speaker.values() for k, i in enumerate(idx)}
    talk = _Talk(turns, speech)
    last: dict[str, edges.Floor | None] = {s: None for s in ids}
    tol = cfg.timing_outward_s
    for chunk in chunks([(turns[i].start, turns[i].end) for i in speech]):
        members = [speech[k] for k in chunk]
        a = max(0.0, min(turns[i].start for i in members) - CONTEXT_S)
        b = max(turns[i].end for i in members) + CONTEXT_S
        span = read(a, b)
        near = in_range(turns, span.t0, b)
        all_spans = [(span.at(t.start), span.at(t.end)) for t in near]
        views = {s: source_acoustics.view(span.tracks[s], span.sr, all_spans) for s in ids}
        floors = {s: floor_for(views[s], last[s]) for s in ids}
        if len(ids) == 2:
            own = [
                [(span.at(t.start), span.at(t.end)) for t in near if t.speaker == s] for s in ids
            ]
            # (the floors stand: they are measured clear of every annotated turn, where the
            # other speaker's leak is not)
            source_acoustics.mark_crosstalk(
                [views[s] for s in ids], own, [floors[s] for s in ids], margin_db=edges.EDGE_DB
            )
        for s in ids:
            last[s] = floors[s] or last[s]
        for i in members:
            t = turns[i]
            lo, hi = search_bounds(turns, by_speaker[t.speaker], rank[i], tol)
            bounds = (max(lo, span.t0), min(hi, span.t0 + len(span.tracks[t.speaker]) / span.sr))
            ext = source_acoustics.extent(
                views[t.speaker],
                floors[t.speaker] or edges.DIGITAL_FLOOR,
                (span.at(t.start), span.at(t.end)),
                (span.at(bounds[0]), span.at(bounds[1])),
            )
            got = edges_of(ext, span, bounds)
            record_edges(res, i, got)
            if got is not None:  # edges clear of the other speaker: the dialogue's slack
                if got[0] is not None and not talk.other_at(t.speaker, t.start):
                    res.onset_slack.append(got[0] - t.start)
                if got[1] is not None and not talk.other_at(t.speaker, t.end):
                    res.offset_slack.append(t.end - got[1])
    limit_masked(turns, speech, res)
    return res


def limit_masked(turns: Sequence[Turn], speech: Sequence[int], res: Measured) -> None:
    """Separable tracks: an edge inside the other speaker's talk is heard over their leak, and a
    quiet ending under the leak is not; such an edge moves inward no further than
    :data:`MASK_SCALE` times the most the dialogue's edges clear of overlap do (plus
    :data:`MASK_EXTRA_S`), so an exact annotation stays (nearly) exact. "Inside" is judged on
    the measured extents (within :data:`MASK_REACH_S`): annotations that overlap only by their
    slack leave an edge next to a pause alone. Labelled :attr:`EdgeSource.SLACK` where the
    limit applies."""
    pooled = [*res.onset_slack, *res.offset_slack]
    if len(pooled) < MIN_SLACK_EDGES:
        return

    def reach(v: Sequence[float]) -> float:
        most = max(v if len(v) >= MIN_SLACK_SIDE else pooled)
        return MASK_SCALE * max(most, 0.0) + MASK_EXTRA_S

    heard = list(turns)
    for i in speech:
        if i not in res.no_speech:
            a = res.starts[i].t if i in res.starts else turns[i].start
            b = res.ends[i].t if i in res.ends else turns[i].end
            heard[i] = replace(turns[i], start=a - MASK_REACH_S, end=b + MASK_REACH_S)
    talk = _Talk(heard, [i for i in speech if i not in res.no_speech])
    on, off = reach(res.onset_slack), reach(res.offset_slack)
    for i in speech:
        t = turns[i]
        st = res.starts.get(i)
        if st is not None and st.t > t.start + on and talk.other_at(t.speaker, st.t):
            res.starts[i] = Edge(t.start + on, EdgeSource.SLACK)
        en = res.ends.get(i)
        if en is not None and en.t < t.end - off and talk.other_at(t.speaker, en.t):
            res.ends[i] = Edge(t.end - off, EdgeSource.SLACK)


def measure_per_turn(
    d: Dialogue, turns: Sequence[Turn], cfg: TurnsConfig, src: PerTurnSource
) -> Measured:
    """Clip per turn: each clip read whole and measured over its own background (the floor
    last measured on the same speaker's clips where a clip has too little)."""
    if len(src.paths) != len(turns):
        raise InputError(
            d.id, f"{len(src.paths)} clips for {len(turns)} turns: clips cannot be matched",
            reason="bad_source",
        )  # fmt: skip
    res = Measured()
    last: dict[str, edges.Floor] = {}
    tol = cfg.timing_outward_s
    for i in speech_indices(turns):
        t, path = turns[i], src.paths[i]
        x, sr = read_frames(path, mono=True)
        an = edges.analyse(x, sr)
        c0 = t.start  # the clip lies at its turn's annotated start
        span = Span({"clip": x}, sr, c0)
        bounds = (max(c0, t.start - tol), min(c0 + len(x) / sr, t.end + tol))
        hint = (span.at(t.start), span.at(t.end))
        lim = (span.at(bounds[0]), span.at(bounds[1]))
        floor = edges.floor_of(an) or last.get(t.speaker) or edges.DIGITAL_FLOOR
        ext = edges.speech_extent(an, floor, hint, bounds=lim)
        if ext is not None:  # the clip's background is what lies outside its speech
            mask = edges.background_mask(
                an.edge, [(ext.start, ext.end)], source_acoustics.TONE_MARGIN_S * sr
            )
            bg = edges.estimate_floor(an, mask)
            if bg is None or np.count_nonzero(mask) * an.edge.hop < MIN_BACKGROUND_S * sr:
                bg = last.get(t.speaker, bg)
            if bg is not None:
                floor = bg
                last[t.speaker] = bg
                ext = edges.speech_extent(an, floor, hint, bounds=lim) or ext
        record_edges(res, i, edges_of(ext, span, bounds))
    return res
