"""Acoustic turn timing: turns moved to where their speech is heard, before turn-taking analysis.

Corpora annotate turns loosely: annotators leave 20–250 ms of slack before and after the speech,
and clip-per-turn corpora (DailyTalk) pad every clip with floor. Turn-taking analysis run on
those times sees an ordinary terminal overlap (the next speaker starts 100–250 ms before the
current one stops) as a 0.4–0.7 s overlap, a floor-taking interruption, and the length model
counts the padding as speech. :func:`refine_timing` therefore moves each turn's ``start``/``end``
to the acoustic extent of its speech *within* its annotation, with the project's one edge
definition (:func:`duetflow.audio.edges.speech_extent` over the track's floor, crosstalk blocked
as :mod:`duetflow.acoustics.source_acoustics` does for rendering). Windows, overlap classes,
balance, the length model and the renderer see the refined times; the annotation stays on the turn
(:attr:`~duetflow.records.dialogue.Turn.annotated`) and the manifest's
``orig_start_s``/``orig_end_s`` keep meaning it.

Rules (docs/turn-taking.md, *Acoustic turn timing*):

* An edge moves inward to the speech, or outward by at most ``turns.timing_outward_s``; where
  speech runs on past that (a tight or clipped annotation) the annotation stays.
* A turn with no audible speech keeps its annotation and is labelled ``no_speech``; nonspeech
  and zero-length turns are left alone.
* **Separable sources** (a channel, file or clip per speaker) measure every edge on the
  speaker's own track, the other speaker's leak blocked; an edge measured inside the other
  speaker's talk (where a quiet ending can hide under the leak) moves inward no further than
  the dialogue's clear edges allow (:func:`~duetflow.acoustics.timing_separable.limit_masked`).
* **Mono mixes**: a boundary inside an annotated overlap cannot be measured (both voices are in
  one channel). Boundaries next to a pause can: their slack (annotated minus acoustic) over the
  dialogue gives its typical slack (the median, per side, capped at ``turns.max_slack_s``), and
  each boundary inside an overlap is moved inward by it (never by more than a quarter of the
  turn). With too few measurable boundaries nothing is corrected.

Each edge is labelled (``labels["timing_start"]``, ``labels["timing_end"]``: an
:class:`EdgeSource`), and the dialogue's provenance holds a :class:`TimingReport` under
``"timing"``.

Memory: a dialogue's audio is read in chunks of at most
:data:`~duetflow.acoustics.track_reader.CHUNK_S` of turns (plus
:data:`~duetflow.acoustics.track_reader.CONTEXT_S` either side, reading in
:mod:`~duetflow.acoustics.track_reader`), so it stays flat however long the recording is.

Modules: the step here (:func:`refine_timing`, :func:`measure`: applying and labelling edges,
the report); what the measuring paths share in :mod:`.timing_edges` (records, search bounds,
floors); separable tracks and clips per turn in :mod:`.timing_separable`; mono mixes and slack
in :mod:`.timing_mixed`; the audio reading in :mod:`.track_reader`.
"""

from __future__ import annotations

import logging
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from duetflow.acoustics.timing_edges import Edge, EdgeSource, Measured, Slack, speech_indices
from duetflow.acoustics.timing_mixed import estimate_slack, measure_mixed
from duetflow.acoustics.timing_separable import measure_per_turn, measure_separable
from duetflow.acoustics.track_reader import (
    mixed_reader,
    multichannel_reader,
    per_speaker_reader,
)
from duetflow.config import TurnsConfig
from duetflow.errors import InputError
from duetflow.records.dialogue import (
    Dialogue,
    MixedMonoSource,
    MultichannelSource,
    PerTurnSource,
    Turn,
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

#: Labels of a re-timed turn.
LABEL_START = "timing_start"
LABEL_END = "timing_end"
#: Dialogue provenance key of the :class:`TimingReport`.
PROVENANCE_KEY = "timing"


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


# --- the step ---------------------------------------------------------------------------------


def _apply(
    turns: Sequence[Turn], res: Measured, kind: str
) -> tuple[tuple[Turn, ...], TimingReport]:
    out: list[Turn] = []
    counts = {s: 0 for s in EdgeSource}
    moved: list[float] = []
    looked = set(speech_indices(turns))
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
        st = res.starts.get(i, Edge(t.start, EdgeSource.ANNOTATION))
        en = res.ends.get(i, Edge(t.end, EdgeSource.ANNOTATION))
        if en.t <= st.t:  # nothing left between the edges: keep the annotation
            st, en = Edge(t.start, EdgeSource.ANNOTATION), Edge(t.end, EdgeSource.ANNOTATION)
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
        res = measure_mixed(d, turns, cfg, mixed_reader(src))
    elif isinstance(src, PerTurnSource):
        res = measure_per_turn(d, turns, cfg, src)
    elif isinstance(src, MultichannelSource):
        missing = [s for s in ids if s not in src.channels]
        if missing:
            raise InputError(src.path, f"no channel for speaker(s) {missing}", reason="bad_source")
        res = measure_separable(d, turns, cfg, multichannel_reader(src, ids))
    else:
        missing = [s for s in ids if s not in src.paths]
        if missing:
            raise InputError(d.id, f"no file for speaker(s) {missing}", reason="bad_source")
        res = measure_separable(d, turns, cfg, per_speaker_reader(src, ids))
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
