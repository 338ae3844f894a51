"""Acoustic turn timing: turns moved to where their speech is heard, before turn-taking analysis.

Corpora annotate turns loosely: annotators leave 20–250 ms of slack before and after the speech,
and clip-per-turn corpora (DailyTalk) pad every clip with floor. Turn-taking analysis run on
those times sees an ordinary terminal overlap (the next speaker starts 100–250 ms before the
current one stops) as a 0.4–0.7 s overlap, a floor-taking interruption, and the length model
counts the padding as speech. :func:`refine_timing` therefore moves each turn's ``start``/``end``
to the acoustic extent of its speech *within* its annotation, with the project's one edge
definition (:func:`duetflow.audio.edges.speech_extent` over the track's floor, crosstalk blocked
as :mod:`duetflow.audio.source_acoustics` does for rendering). Windows, overlap classes, balance,
the length model and the renderer see the refined times; the annotation stays on the turn
(:attr:`~duetflow.model.Turn.annotated`) and the manifest's ``orig_start_s``/``orig_end_s``
keep meaning it.

Rules (docs/turn-taking.md, *Acoustic turn timing*):

* An edge moves inward to the speech, or outward by at most ``turns.timing_outward_s``; where
  speech runs on past that (a tight or clipped annotation) the annotation stays.
* A turn with no audible speech keeps its annotation and is labelled ``no_speech``; nonspeech
  and zero-length turns are left alone.
* **Separable sources** (a channel, file or clip per speaker) measure every edge on the
  speaker's own track, the other speaker's leak blocked; an edge measured inside the other
  speaker's talk (where a quiet ending can hide under the leak) moves inward no further than
  the dialogue's clear edges allow (:func:`_limit_masked`).
* **Mono mixes**: a boundary inside an annotated overlap cannot be measured (both voices are in
  one channel). Boundaries next to a pause can: their slack (annotated minus acoustic) over the
  dialogue gives its typical slack (the median, per side, capped at ``turns.max_slack_s``), and
  each boundary inside an overlap is moved inward by it (never by more than a quarter of the
  turn). With too few measurable boundaries nothing is corrected.

Each edge is labelled (``labels["timing_start"]``, ``labels["timing_end"]``: an
:class:`EdgeSource`), and the dialogue's provenance holds a :class:`TimingReport` under
``"timing"``.

Memory: a dialogue's audio is read in chunks of at most
:data:`~duetflow.turntaking.track_reader.CHUNK_S` of turns (plus
:data:`~duetflow.turntaking.track_reader.CONTEXT_S` either side, reading in
:mod:`~duetflow.turntaking.track_reader`), so it stays flat however long the recording is.

Length (~570 lines, over the package's ~500): the three measuring paths (separable tracks,
clip per turn, mono mix) share one result record, one search-bound rule and one way of
applying and labelling edges (``_Result``, ``_bounds``, ``_apply``); split apart, each rule
would be read in one module and applied in another. The audio reading is apart already.
"""

from __future__ import annotations

import bisect
import itertools
import logging
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

import numpy as np

from duetflow.audio import edges, source_acoustics
from duetflow.audio.io import read_frames
from duetflow.config import TurnsConfig
from duetflow.errors import InputError
from duetflow.model import (
    Dialogue,
    MixedMonoSource,
    MultichannelSource,
    PerTurnSource,
    Turn,
    TurnKind,
)
from duetflow.rendering.retime import merge_blocks
from duetflow.turntaking.track_reader import (
    CONTEXT_S,
    Reader,
    Span,
    chunks,
    mixed_reader,
    multichannel_reader,
    per_speaker_reader,
)

log = logging.getLogger(__name__)

__all__ = [
    "LABEL_END",
    "LABEL_START",
    "PROVENANCE_KEY",
    "EdgeSource",
    "Slack",
    "TimingReport",
    "estimate_slack",
    "refine_timing",
]

#: A chunk whose background is shorter than this (s) is judged against the floor last measured
#: on the same track.
MIN_BACKGROUND_S = 0.3
#: Fewest measured boundaries a dialogue's slack is estimated from (per side: three; pooled
#: over both sides: four).
MIN_SLACK_EDGES = 4
MIN_SLACK_SIDE = 3
#: A boundary inside an overlap moves by at most this share of its turn's annotated length.
MAX_SLACK_SHARE = 0.25
#: Separable tracks: an edge inside the other speaker's talk moves inward at most this multiple
#: of the most the dialogue's annotations leave at edges clear of overlap, plus
#: :data:`MASK_EXTRA_S` (an exact annotation stays within ~20 ms; a loose one is not held back).
MASK_SCALE = 1.5
MASK_EXTRA_S = 0.01
#: ... where the measured edge lies within this of the other speaker's measured speech (s).
MASK_REACH_S = 0.05
#: Labels of a re-timed turn.
LABEL_START = "timing_start"
LABEL_END = "timing_end"
#: Dialogue provenance key of the :class:`TimingReport`.
PROVENANCE_KEY = "timing"

_NEIGHBOURS = 3  # same-track annotations looked at either side of a turn for its bounds
_CUT_EPS_S = 0.003  # an edge this close to its search bound was cut there, not measured


class EdgeSource(StrEnum):
    """Where a refined edge comes from."""

    ACOUSTIC = "acoustic"  # measured on the audio
    SLACK = "slack"  # a mono overlap's boundary: the annotation less the dialogue's slack
    ANNOTATION = "annotation"  # kept as annotated: not measurable, no slack estimate
    NO_SPEECH = "no_speech"  # the turn holds no audible speech: kept as annotated


@dataclass(frozen=True)
class Slack:
    """A dialogue's typical annotation slack (s, annotated minus acoustic; positive: the
    annotation is wider than the speech), from its measurable boundaries."""

    onset_s: float
    offset_s: float
    n_onsets: int
    n_offsets: int


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


@dataclass(frozen=True)
class TimingReport:
    """What acoustic timing did to one dialogue (recorded in its provenance)."""

    source_kind: str
    turns: int = 0  # speech turns looked at
    acoustic_edges: int = 0
    slack_edges: int = 0
    annotated_edges: int = 0
    no_speech: int = 0
    moved_median_ms: float = 0.0  # median |refined - annotated| over edges
    slack: Slack | None = None
    error: str = ""  # why the annotation was kept whole (unreadable audio ...)

    def to_provenance(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        out: dict[str, Any] = {
            "source_kind": self.source_kind,
            "turns": self.turns,
            "acoustic_edges": self.acoustic_edges,
            "slack_edges": self.slack_edges,
            "annotated_edges": self.annotated_edges,
            "no_speech": self.no_speech,
            "moved_median_ms": round(self.moved_median_ms, 1),
        }
        if self.slack is not None:
            out["slack_onset_ms"] = round(self.slack.onset_s * 1000.0, 1)
            out["slack_offset_ms"] = round(self.slack.offset_s * 1000.0, 1)
            out["slack_edges_measured"] = self.slack.n_onsets + self.slack.n_offsets
        if self.error:
            out["error"] = self.error
        return out


@dataclass
class _Edge:
    """One refined edge (seconds) and where it came from."""

    t: float
    source: EdgeSource


@dataclass
class _Result:
    starts: dict[int, _Edge] = field(default_factory=dict)
    ends: dict[int, _Edge] = field(default_factory=dict)
    no_speech: set[int] = field(default_factory=set)
    onset_slack: list[float] = field(default_factory=list)
    offset_slack: list[float] = field(default_factory=list)
    slack: Slack | None = None


# --- measuring --------------------------------------------------------------------------------


def _bounds(turns: Sequence[Turn], idx: Sequence[int], pos: int, tol: float) -> tuple[float, float]:
    """Where turn ``idx[pos]``'s edges may lie (s): its annotation widened by ``tol``, never past
    the middle of the pause to a neighbouring annotation of ``idx`` (the same track, in time
    order; the nearest :data:`_NEIGHBOURS` either side are looked at)."""
    t = turns[idx[pos]]
    lo, hi = t.start - tol, t.end + tol
    for j in idx[max(0, pos - _NEIGHBOURS) : pos + _NEIGHBOURS + 1]:
        o = turns[j]
        if j == idx[pos]:
            continue
        if o.end <= t.start:
            lo = max(lo, 0.5 * (o.end + t.start))
        elif o.start >= t.end:
            hi = min(hi, 0.5 * (t.end + o.start))
    return lo, hi


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


def _edges_of(
    ext: edges.Extent | None, span: Span, bounds: tuple[float, float]
) -> tuple[float | None, float | None] | None:
    """An extent in seconds; an edge cut at its bound is None (not measured); None: no speech."""
    if ext is None:
        return None
    s0, s1 = float(span.t0 + ext.start / span.sr), float(span.t0 + ext.end / span.sr)
    start = s0 if s0 > bounds[0] + _CUT_EPS_S else None
    end = s1 if s1 < bounds[1] - _CUT_EPS_S else None
    return start, end


def _floor_for(v: source_acoustics.TrackView, last: edges.Floor | None) -> edges.Floor | None:
    floor = source_acoustics.track_floor(v)
    clear = v.clear if v.blocked is None else v.clear & ~v.blocked
    enough = np.count_nonzero(clear) * v.an.edge.hop >= MIN_BACKGROUND_S * v.sr
    if last is not None and (floor is None or not enough):
        return last
    return floor


def _speech_indices(turns: Sequence[Turn]) -> list[int]:
    return [i for i, t in enumerate(turns) if t.kind != TurnKind.NONSPEECH and t.end > t.start]


def _in_range(turns: Sequence[Turn], a: float, b: float) -> list[Turn]:
    return [t for t in turns if t.end > a and t.start < b]


def _measure_separable(
    d: Dialogue, turns: Sequence[Turn], cfg: TurnsConfig, read: Reader
) -> _Result:
    ids = [s.id for s in d.speakers]
    res = _Result()
    speech = [i for i in _speech_indices(turns) if turns[i].speaker in ids]
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
        near = _in_range(turns, span.t0, b)
        all_spans = [(span.at(t.start), span.at(t.end)) for t in near]
        views = {s: source_acoustics.view(span.tracks[s], span.sr, all_spans) for s in ids}
        floors = {s: _floor_for(views[s], last[s]) for s in ids}
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
            lo, hi = _bounds(turns, by_speaker[t.speaker], rank[i], tol)
            bounds = (max(lo, span.t0), min(hi, span.t0 + len(span.tracks[t.speaker]) / span.sr))
            ext = source_acoustics.extent(
                views[t.speaker],
                floors[t.speaker] or edges.DIGITAL_FLOOR,
                (span.at(t.start), span.at(t.end)),
                (span.at(bounds[0]), span.at(bounds[1])),
            )
            got = _edges_of(ext, span, bounds)
            _record(res, i, got)
            if got is not None:  # edges clear of the other speaker: the dialogue's slack
                if got[0] is not None and not talk.other_at(t.speaker, t.start):
                    res.onset_slack.append(got[0] - t.start)
                if got[1] is not None and not talk.other_at(t.speaker, t.end):
                    res.offset_slack.append(t.end - got[1])
    _limit_masked(turns, speech, res)
    return res


def _limit_masked(turns: Sequence[Turn], speech: Sequence[int], res: _Result) -> None:
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
            res.starts[i] = _Edge(t.start + on, EdgeSource.SLACK)
        en = res.ends.get(i)
        if en is not None and en.t < t.end - off and talk.other_at(t.speaker, en.t):
            res.ends[i] = _Edge(t.end - off, EdgeSource.SLACK)


def _record(res: _Result, i: int, got: tuple[float | None, float | None] | None) -> None:
    if got is None:
        res.no_speech.add(i)
        return
    if got[0] is not None:
        res.starts[i] = _Edge(got[0], EdgeSource.ACOUSTIC)
    if got[1] is not None:
        res.ends[i] = _Edge(got[1], EdgeSource.ACOUSTIC)


def _measure_per_turn(
    d: Dialogue, turns: Sequence[Turn], cfg: TurnsConfig, src: PerTurnSource
) -> _Result:
    """Clip per turn: each clip read whole and measured over its own background (the floor
    last measured on the same speaker's clips where a clip has too little)."""
    if len(src.paths) != len(turns):
        raise InputError(
            d.id, f"{len(src.paths)} clips for {len(turns)} turns: clips cannot be matched",
            reason="bad_source",
        )  # fmt: skip
    res = _Result()
    last: dict[str, edges.Floor] = {}
    tol = cfg.timing_outward_s
    for i in _speech_indices(turns):
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
        _record(res, i, _edges_of(ext, span, bounds))
    return res


def _measure_mixed(d: Dialogue, turns: Sequence[Turn], cfg: TurnsConfig, read: Reader) -> _Result:
    """Mono mix: blocks of continuous talk (annotations that overlap) are measured whole; their
    outer edges are acoustic and give the slack samples, their inner boundaries get slack."""
    res = _Result()
    speech = _speech_indices(turns)
    blocks = merge_blocks(turns, speech, 0.0)
    tol = cfg.timing_outward_s
    last: edges.Floor | None = None
    for chunk in chunks([(blk.start, blk.end) for blk in blocks]):
        a = max(0.0, blocks[chunk[0]].start - CONTEXT_S)
        b = max(blocks[k].end for k in chunk) + CONTEXT_S
        span = read(a, b)
        x = span.tracks["mix"]
        near = _in_range(turns, span.t0, b)
        v = source_acoustics.view(x, span.sr, [(span.at(t.start), span.at(t.end)) for t in near])
        floor = _floor_for(v, last) or edges.DIGITAL_FLOOR
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
            got = _edges_of(ext, span, bounds)
            if got is None:
                res.no_speech.update(blk.members)
                continue
            first = min(blk.members, key=lambda i: (turns[i].start, i))
            final = max(blk.members, key=lambda i: (turns[i].end, -i))
            if got[0] is not None:
                res.starts[first] = _Edge(got[0], EdgeSource.ACOUSTIC)
                res.onset_slack.append(got[0] - turns[first].start)
            if got[1] is not None:
                res.ends[final] = _Edge(got[1], EdgeSource.ACOUSTIC)
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
                    res.starts[i] = _Edge(t.start + min(slack.onset_s, most), EdgeSource.SLACK)
                if i != final:
                    res.ends[i] = _Edge(t.end - min(slack.offset_s, most), EdgeSource.SLACK)
    res.slack = slack
    return res


# --- the step ---------------------------------------------------------------------------------


def _apply(turns: Sequence[Turn], res: _Result, kind: str) -> tuple[tuple[Turn, ...], TimingReport]:
    out: list[Turn] = []
    counts = {s: 0 for s in EdgeSource}
    moved: list[float] = []
    looked = set(_speech_indices(turns))
    for i, t in enumerate(turns):
        if i not in looked:
            out.append(t)
            continue
        if i in res.no_speech:
            counts[EdgeSource.NO_SPEECH] += 1
            labels = {
                **t.labels,
                LABEL_START: EdgeSource.NO_SPEECH,
                LABEL_END: EdgeSource.NO_SPEECH,
            }
            out.append(replace(t, labels=labels, annotated=t.annotated_span))
            continue
        st = res.starts.get(i, _Edge(t.start, EdgeSource.ANNOTATION))
        en = res.ends.get(i, _Edge(t.end, EdgeSource.ANNOTATION))
        if en.t <= st.t:  # nothing left between the edges: keep the annotation
            st, en = _Edge(t.start, EdgeSource.ANNOTATION), _Edge(t.end, EdgeSource.ANNOTATION)
        for e in (st, en):
            counts[e.source] += 1
        moved.extend((abs(st.t - t.start), abs(en.t - t.end)))
        labels = {**t.labels, LABEL_START: str(st.source), LABEL_END: str(en.source)}
        out.append(
            replace(
                t, start=round(float(st.t), 6), end=round(float(en.t), 6), labels=labels,
                annotated=t.annotated_span,
            )
        )  # fmt: skip
    report = TimingReport(
        source_kind=kind,
        turns=len(looked),
        acoustic_edges=counts[EdgeSource.ACOUSTIC],
        slack_edges=counts[EdgeSource.SLACK],
        annotated_edges=counts[EdgeSource.ANNOTATION],
        no_speech=counts[EdgeSource.NO_SPEECH],
        moved_median_ms=1000.0 * float(statistics.median(moved)) if moved else 0.0,
        slack=res.slack,
    )
    return tuple(out), report


def measure(d: Dialogue, cfg: TurnsConfig) -> tuple[tuple[Turn, ...], TimingReport]:
    """The dialogue's turns re-timed from its audio, and what was done (see the module
    docstring). Raises :class:`~duetflow.errors.InputError` for audio that cannot be read."""
    turns = d.turns
    src = d.source
    ids = [s.id for s in d.speakers]
    if isinstance(src, MixedMonoSource):
        res = _measure_mixed(d, turns, cfg, mixed_reader(src))
    elif isinstance(src, PerTurnSource):
        res = _measure_per_turn(d, turns, cfg, src)
    elif isinstance(src, MultichannelSource):
        missing = [s for s in ids if s not in src.channels]
        if missing:
            raise InputError(src.path, f"no channel for speaker(s) {missing}", reason="bad_source")
        res = _measure_separable(d, turns, cfg, multichannel_reader(src, ids))
    else:
        missing = [s for s in ids if s not in src.paths]
        if missing:
            raise InputError(d.id, f"no file for speaker(s) {missing}", reason="bad_source")
        res = _measure_separable(d, turns, cfg, per_speaker_reader(src, ids))
    return _apply(turns, res, src.kind)


def refine_timing(d: Dialogue, cfg: TurnsConfig) -> Dialogue:
    """``d`` with its turns moved to the acoustic extent of their speech (see the module
    docstring) and a :class:`TimingReport` in its provenance under :data:`PROVENANCE_KEY`.

    Audio that cannot be read leaves the annotation whole (the report names the error; the
    renderer rejects the dialogue's windows with the same error), so the run goes on and every
    window is still accounted for. A dialogue whose turns are already re-timed is returned as is.
    """
    if not d.turns or any(t.annotated is not None for t in d.turns):
        return d
    if not all(math.isfinite(t.start) and math.isfinite(t.end) for t in d.turns) or any(
        t.end < t.start for t in d.turns
    ):
        return d  # bad times: selection rejects the dialogue (``bad_turns``) with the cause
    try:
        turns, report = measure(d, cfg)
    except InputError as e:
        log.warning("acoustic timing of %s kept its annotation: %s", d.id, e)
        report = TimingReport(source_kind=d.source.kind, error=f"{e.reason}: {e}")
        turns = d.turns
    return replace(
        d, turns=turns, provenance={**d.provenance, PROVENANCE_KEY: report.to_provenance()}
    )
