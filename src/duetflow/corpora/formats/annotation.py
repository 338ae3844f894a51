"""What every annotation reader returns, and the checks every reader's turns pass.

:func:`finish` is the one place the readers apply the project's timing rules: each turn finite,
``0 <= start < end`` (``bad_timing``), sorted by time, and one speaker's pasted or overlapping
turns merged or refused (:func:`~duetflow.corpora.source_checks.merge_same_speaker_duplicates`,
``overlapping_turns``). :meth:`Annotation.check_audio` then checks the turns against the audio's
duration (:func:`~duetflow.corpora.source_checks.check_turn_timing`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from duetflow.corpora.source_checks import (
    SameSpeakerFixes,
    check_turn_timing,
    merge_same_speaker_duplicates,
)
from duetflow.errors import InputError
from duetflow.records.dialogue import Turn, TurnKind

#: A label that is wholly one bracketed token (``<laugh>``, ``[noise]``, ``{breath}``) marks
#: non-speech, as transcription conventions (LDC, CHAT, Switchboard) write it. Readers take
#: ``nonspeech=`` to change it; ``None`` makes every labelled span a turn.
NONSPEECH_LABEL = re.compile(r"^\s*(?:<[^<>]*>|\[[^\[\]]*\]|\{[^{}]*\})\s*$")


@dataclass(frozen=True)
class Annotation:
    """The turns of one annotation file (of one recording, for multi-file formats such as RTTM).

    ``turns`` are sorted by ``(start, end)``; ``speakers`` in the order they first speak;
    ``extent_s`` is the timeline the file declares (TextGrid ``xmax``, the last ELAN time slot,
    the end of the last RTTM turn); ``encoding`` what decoded the file; ``tiers`` maps each tier
    (or RTTM speaker name) read to its speaker id and ``ignored`` lists what was not read (other
    tiers, point tiers, dependent tiers, other RTTM types) so provenance can say so.
    """

    path: str
    turns: tuple[Turn, ...]
    speakers: tuple[str, ...]
    extent_s: float
    encoding: str
    tiers: Mapping[str, str] = field(default_factory=dict)
    ignored: tuple[str, ...] = ()
    fixes: SameSpeakerFixes = field(default_factory=SameSpeakerFixes)

    def check_audio(self, duration_s: float, audio_path: Path, slack_s: float = 0.5) -> None:
        """Every turn must end within the audio (plus ``slack_s``): ``bad_timing`` otherwise."""
        check_turn_timing(self.turns, duration_s, audio_path, slack_s=slack_s)

    def provenance(self) -> dict[str, object]:
        """JSON-able facts for the dialogue's provenance: file, encoding, tiers, fixes."""
        out: dict[str, object] = {
            "annotation": self.path,
            "text_encoding": self.encoding,
            "tiers": dict(self.tiers),
        }
        if self.ignored:
            out["ignored_tiers"] = list(self.ignored)
        out.update(self.fixes.provenance())
        return out


def kind_of(label: str, nonspeech: re.Pattern[str] | None) -> TurnKind:
    """Non-speech when the label matches ``nonspeech``, else a turn."""
    if nonspeech is not None and nonspeech.match(label):
        return TurnKind.NONSPEECH
    return TurnKind.TURN


def number(path: Path, value: str, what: str, line: int | None = None) -> float:
    """``value`` as a finite float, else InputError ``malformed_line`` naming ``what``."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        x = math.nan
    if not math.isfinite(x):
        raise InputError(path, f"{what} {value!r} is not a number", reason="malformed_line",
                         line=line)  # fmt: skip
    return x


def finish(
    path: Path,
    turns: Iterable[Turn],
    *,
    extent_s: float,
    encoding: str,
    tiers: Mapping[str, str],
    ignored: Iterable[str] = (),
    where: Mapping[int, str] | None = None,
) -> Annotation:
    """Check, sort and merge a reader's turns into an :class:`Annotation`.

    Raises InputError ``bad_timing`` for a turn with ``start >= end`` or a negative start
    (``where[i]`` names turn ``i``'s place in the file), ``overlapping_turns`` for one speaker
    saying two things at once and ``no_turns`` when nothing was read.
    """
    raw = list(turns)
    for i, t in enumerate(raw):
        if not (math.isfinite(t.start) and math.isfinite(t.end)) or t.start < 0:
            at = (where or {}).get(i, f"turn {i}")
            raise InputError(path, f"{at}: bad times {t.start}..{t.end}", reason="bad_timing")
        if t.start >= t.end:
            at = (where or {}).get(i, f"turn {i}")
            raise InputError(
                path, f"{at}: starts at {t.start} s but ends at {t.end} s", reason="bad_timing"
            )
    if not any(t.kind is not TurnKind.NONSPEECH for t in raw):
        raise InputError(path, "no labelled speech in the annotation", reason="no_turns")
    raw.sort(key=lambda t: (t.start, t.end, t.speaker))
    merged, fixes = merge_same_speaker_duplicates(raw, path)
    speakers = tuple(dict.fromkeys(t.speaker for t in merged if t.kind is not TurnKind.NONSPEECH))
    return Annotation(
        path=str(path),
        turns=tuple(merged),
        speakers=speakers,
        extent_s=extent_s,
        encoding=encoding,
        tiers=dict(tiers),
        ignored=tuple(ignored),
        fixes=fixes,
    )
