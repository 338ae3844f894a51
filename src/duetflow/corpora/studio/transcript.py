"""A studio session's turn texts and timings: ``transcript.json``, RTTM, text alignment.

A transcript gives texts (and optionally timings) in spoken order; an RTTM file gives timings
only. When turns come from the audio, :func:`attach_text` gives them the transcript's texts if
each speaker's counts agree.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from pydantic import Field, ValidationError

from duetflow.corpora.base import read_text
from duetflow.corpora.studio.sidecar import StrictModel, validation_error
from duetflow.errors import InputError
from duetflow.model import Turn, TurnKind


class TranscriptTurn(StrictModel):
    """One transcript entry; ``start``/``end`` (seconds) on all entries or on none."""

    speaker: str
    text: str
    start: float | None = Field(None, ge=0)
    end: float | None = Field(None, ge=0)
    kind: TurnKind = TurnKind.TURN


class Transcript(StrictModel):
    """``transcript.json``: ``{"turns": [...]}`` in spoken order."""

    turns: list[TranscriptTurn]


def load_transcript(path: Path, speakers: Sequence[str]) -> list[TranscriptTurn]:
    """Parse ``transcript.json``; speakers must be the sidecar's, timings all-or-none."""
    try:
        data = json.loads(read_text(path))
    except json.JSONDecodeError as e:
        raise InputError(
            path, f"invalid JSON: {e.msg}", reason="bad_transcript", line=e.lineno
        ) from None
    except RecursionError:
        raise InputError(path, "JSON nested too deeply", reason="bad_transcript") from None
    if isinstance(data, list):
        data = {"turns": data}
    try:
        turns = Transcript.model_validate(data).turns
    except ValidationError as e:
        raise validation_error(path, e, "bad_transcript") from None
    for i, t in enumerate(turns):
        if t.speaker not in speakers:
            raise InputError(
                path,
                f"unknown speaker {t.speaker!r}; the sidecar has {list(speakers)}",
                reason="bad_transcript",
                field=f"turns.{i}.speaker",
            )
    timed = [t.start is not None and t.end is not None for t in turns]
    partial = [t.start is not None or t.end is not None for t in turns]
    if any(partial) and not all(timed):
        i = timed.index(False)
        raise InputError(
            path,
            "timings must be given on every turn or on none",
            reason="bad_transcript",
            field=f"turns.{i}",
        )
    for i, t in enumerate(turns):
        if t.start is not None and t.end is not None and t.end <= t.start:
            raise InputError(
                path,
                f"end {t.end} is not after start {t.start}",
                reason="bad_timing",
                field=f"turns.{i}",
            )
    return turns


def load_rttm(path: Path, speakers: Sequence[str]) -> list[Turn]:
    """Turns of an RTTM file (``SPEAKER <file> <chan> <start> <dur> <NA> <NA> <spk> ...``)."""
    turns: list[Turn] = []
    for lineno, line in enumerate(read_text(path).splitlines(), 1):
        fields = line.split()
        if not fields or fields[0].startswith(("#", ";")) or fields[0] != "SPEAKER":
            continue
        if len(fields) < 8:
            raise InputError(
                path, f"expected >= 8 fields, got {len(fields)}", reason="bad_rttm", line=lineno
            )
        try:
            start, dur = float(fields[3]), float(fields[4])
        except ValueError:
            raise InputError(
                path,
                f"bad start/duration {fields[3]!r} {fields[4]!r}",
                reason="bad_rttm",
                line=lineno,
            ) from None
        spk = fields[7]
        if spk not in speakers:
            raise InputError(
                path,
                f"unknown speaker {spk!r}; the sidecar has {list(speakers)}",
                reason="bad_rttm",
                line=lineno,
            )
        if dur <= 0 or start < 0:
            raise InputError(
                path, f"bad timing start={start} duration={dur}", reason="bad_timing", line=lineno
            )
        turns.append(Turn(speaker=spk, start=round(start, 3), end=round(start + dur, 3)))
    if not turns:
        raise InputError(path, "no SPEAKER lines", reason="bad_rttm")
    return turns


def attach_text(
    turns: Sequence[Turn], transcript: Sequence[TranscriptTurn], speakers: Sequence[str]
) -> tuple[list[Turn], str]:
    """Give detected turns their transcript text when each speaker's counts agree (in order)."""
    by_spk = {s: [t for t in transcript if t.speaker == s] for s in speakers}
    counts = {s: sum(1 for t in turns if t.speaker == s) for s in speakers}
    if any(len(by_spk[s]) != counts[s] for s in speakers):
        detail = ", ".join(
            f"{s}: {counts[s]} detected / {len(by_spk[s])} in transcript" for s in speakers
        )
        return list(turns), f"not aligned ({detail})"
    pos = dict.fromkeys(speakers, 0)
    out = []
    for t in turns:
        entry = by_spk[t.speaker][pos[t.speaker]]
        pos[t.speaker] += 1
        out.append(Turn(t.speaker, t.start, t.end, entry.text, entry.kind, t.labels))
    return out, "aligned by order"
