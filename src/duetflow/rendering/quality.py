"""DNSMOS of a rendered dialogue, as a whole and per speaker, and the ``min_dnsmos_ovrl`` filter.

Issue 29: every rendered dialogue (process and synth, HH, HM and PH alike) is scored once its
file is written, when ``quality.dnsmos`` is on; the scores fill the ``dnsmos_*`` columns of
:class:`~duetflow.records.rows.RenderedDialogueRow` (null when off).

One streamed pass over the written mix (:func:`duetflow.audio.stream.iter_blocks`, resampled to
16 kHz block by block) feeds three :class:`~duetflow.audio.dnsmos.DnsmosStream` s, each holding
one 9.01 s window: the whole dialogue, and each speaker's *solo* speech (its turn rows, turns and
backchannels, less the stretches where the other speaker's turns overlap them), joined in
timeline order. Memory: three windows, whatever the dialogue's length.

Per source turn is not scored: DNSMOS's input is 9.01 s, a turn of the sample corpora lasts
about 2 s, so a turn's score is that of its clip repeated 4–5 times (the reference's rule for
short clips) and costs one whole window per turn, about 3x the dialogue's own cost
(``bench/quality_models.py``). The per-speaker scores pool a speaker's turns into whole windows
instead, at about the dialogue's cost.

The filter (:func:`dnsmos_problem`) reads only the record: ``filters.min_dnsmos_ovrl`` for the
dialogue's category against its OVRL. Deterministic: single-threaded onnxruntime, scores rounded
to 3 decimals.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from duetflow.audio.dnsmos import RATE, DnsmosModel, DnsmosScore, DnsmosStream, get_model
from duetflow.audio.io import audio_info
from duetflow.audio.stream import StreamResampler, iter_blocks
from duetflow.records.rows import DNSMOS_COLUMNS, RenderedDialogueRow, RenderedTurnRow

log = logging.getLogger(__name__)

#: The rejection reason of :func:`dnsmos_problem`.
LOW_OVRL = "dnsmos_ovrl_low"
#: The scores of a DNSMOS result, in column order (``dnsmos_<metric><suffix>``).
METRICS = ("sig", "bak", "ovrl", "p808")
#: Column suffixes: the whole dialogue, speaker A's solo speech, speaker B's.
SCOPES = ("", "_a", "_b")

Span = tuple[int, int]


def column(metric: str, scope: str = "") -> str:
    """The record field (manifest column) of one DNSMOS score."""
    return f"dnsmos_{metric}{scope}"


#: Every DNSMOS column of a rendered dialogue, in record order (declared by the record).
COLUMNS: tuple[str, ...] = DNSMOS_COLUMNS
if tuple(column(m, s) for s in SCOPES for m in METRICS) != COLUMNS:  # pragma: no cover
    raise AssertionError(f"RenderedDialogueRow's DNSMOS fields {COLUMNS} != scopes x metrics")


def _subtract(spans: list[Span], cut: list[Span]) -> list[Span]:
    out: list[Span] = []
    for a, b in spans:
        pieces = [(a, b)]
        for c, d in cut:
            nxt: list[Span] = []
            for x, y in pieces:
                if d <= x or c >= y:
                    nxt.append((x, y))
                    continue
                if x < c:
                    nxt.append((x, c))
                if d < y:
                    nxt.append((d, y))
            pieces = nxt
        out.extend(pieces)
    return out


def _merge(spans: list[Span]) -> list[Span]:
    out: list[Span] = []
    for a, b in sorted(s for s in spans if s[1] > s[0]):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def solo_spans(turns: Sequence[RenderedTurnRow], speaker: str) -> list[Span]:
    """Sample spans (at 16 kHz) where ``speaker`` speaks and the other speaker does not."""

    def spans(mine: bool) -> list[Span]:
        return _merge(
            [
                (int(round(t.start_s * RATE)), int(round(t.end_s * RATE)))
                for t in turns
                if t.kind != "nonspeech" and (t.speaker == speaker) == mine
            ]
        )

    return _subtract(spans(True), spans(False))


def _take(block: np.ndarray[Any, Any], at: int, spans: list[Span]) -> np.ndarray[Any, Any]:
    """The samples of ``block`` (starting at sample ``at``) inside ``spans``, in order."""
    end = at + len(block)
    parts = [block[max(a, at) - at : min(b, end) - at] for a, b in spans if a < end and b > at]
    return np.concatenate(parts) if parts else block[:0]


def _result(stream: DnsmosStream) -> DnsmosScore | None:
    return stream.result() if stream.samples else None


def score_dialogue(
    path: Path,
    turns: Sequence[RenderedTurnRow],
    speakers: tuple[str, str],
    model: DnsmosModel | None = None,
) -> tuple[DnsmosScore, DnsmosScore | None, DnsmosScore | None]:
    """DNSMOS of a rendered dialogue's file: (whole, speaker A's solo speech, B's), streamed.

    A speaker without solo speech scores None. InputError when the file cannot be read.
    """
    m = model or get_model()
    whole = DnsmosStream(m)
    solo = [DnsmosStream(m), DnsmosStream(m)]
    spans = [solo_spans(turns, s) for s in speakers]
    resampler = StreamResampler(audio_info(path).sample_rate, RATE)
    at = 0

    def feed(y: np.ndarray[Any, Any]) -> None:
        nonlocal at
        whole.feed(y)
        for stream, sp in zip(solo, spans, strict=True):
            part = _take(y, at, sp)
            if len(part):
                stream.feed(part)
        at += len(y)

    for block in iter_blocks(path):
        feed(resampler(block))
    feed(resampler(np.zeros(0, dtype=np.float32), last=True))
    return whole.result(), _result(solo[0]), _result(solo[1])


def scored(
    row: RenderedDialogueRow,
    turns: Sequence[RenderedTurnRow],
    out_dir: Path,
    model: DnsmosModel | None = None,
) -> RenderedDialogueRow:
    """``row`` with its DNSMOS columns filled from its audio under ``out_dir``."""
    scores = score_dialogue(out_dir / row.audio_path, turns, (row.speaker_a, row.speaker_b), model)
    values: dict[str, float | None] = {}
    for scope, score in zip(SCOPES, scores, strict=True):
        rounded = score.as_dict() if score is not None else {}
        for m in METRICS:
            values[column(m, scope)] = rounded.get(column(m))
    return dataclasses.replace(row, **values)  # type: ignore[arg-type]


def dnsmos_problem(
    row: RenderedDialogueRow, min_ovrl: float | None
) -> tuple[str, dict[str, Any]] | None:
    """(reason, detail) when the dialogue's OVRL lies below ``min_ovrl`` (its category's
    ``filters.min_dnsmos_ovrl``), else None; a dialogue without a score is not judged."""
    if min_ovrl is None or row.dnsmos_ovrl is None or row.dnsmos_ovrl >= min_ovrl:
        return None
    return LOW_OVRL, {
        "category": row.category,
        "min_dnsmos_ovrl": min_ovrl,
        **{c: getattr(row, c) for c in COLUMNS if not c.endswith(("_a", "_b"))},
        "dnsmos_ovrl_a": row.dnsmos_ovrl_a,
        "dnsmos_ovrl_b": row.dnsmos_ovrl_b,
    }


def remove_audio(row: RenderedDialogueRow, out_dir: Path, stems: str | None = None) -> None:
    """Delete a rejected rendered dialogue's files (mix, two-channel file, stems)."""
    (out_dir / row.audio_path).unlink(missing_ok=True)
    if row.stereo_path:
        (out_dir / row.stereo_path).unlink(missing_ok=True)
    if stems:
        (out_dir / stems).unlink(missing_ok=True)
