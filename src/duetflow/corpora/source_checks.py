"""Checks every adapter runs on a source item; each failure names the file and its reason code.

Paths that must stay inside the corpus root (:func:`safe_path`), ids seen twice in one scan
(:class:`DuplicateGuard`, :func:`duplicate_keys_hook`), audio headers against the corpus spec
(:func:`checked_audio_info`), turn times against the audio (:func:`check_turn_timing`) and one
speaker's overlapping or pasted-twice turns (:func:`merge_same_speaker_duplicates`). A failure
raises :class:`~duetflow.errors.InputError`, which :meth:`CorpusAdapter.guarded
<duetflow.corpora.adapter.CorpusAdapter.guarded>` turns into that item's rejection. Adapters may
import these names from :mod:`duetflow.corpora.adapter` as well.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from duetflow.audio.io import AudioInfo, audio_info
from duetflow.errors import InputError, is_utf8
from duetflow.records.dialogue import Turn, TurnKind

# --- safe paths ---------------------------------------------------------------------------------


def safe_path(root: Path, candidate: Path) -> Path:
    """Resolve ``candidate`` (relative to ``root`` unless absolute) and prove it stays in root.

    Symlinks are allowed only when their target is inside the root as well; anything resolving
    elsewhere raises InputError ``path_escape`` and is never opened. ``root`` must already be
    resolved.
    """
    joined = candidate if candidate.is_absolute() else root / candidate
    try:
        resolved = joined.resolve()
    except (OSError, RuntimeError) as e:  # symlink loop
        raise InputError(joined, f"cannot resolve path: {e}", reason="path_escape") from None
    if resolved != root and root not in resolved.parents:
        raise InputError(
            joined,
            f"resolves to {os.path.relpath(resolved, root)}, outside the corpus root {root}; "
            "refusing to follow it",
            reason="path_escape",
        )
    return resolved


# --- duplicate ids ------------------------------------------------------------------------------


class DuplicateGuard:
    """Remembers ids seen in one scan; the second occurrence raises ``duplicate_id``.

    Holds only id strings, so memory is a few bytes per item, not per sample.
    """

    def __init__(self) -> None:
        self._seen: dict[str, str] = {}

    def check(self, item_id: str, where: str | Path) -> None:
        first = self._seen.get(item_id)
        if first is not None:
            raise InputError(
                where, f"duplicate id {item_id!r} (first seen in {first})", reason="duplicate_id"
            )
        self._seen[item_id] = str(where)


def duplicate_keys_hook(path: str | Path) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    """``json.loads(object_pairs_hook=...)`` that keeps duplicate keys visible.

    A duplicated key is stored under ``"<key>\\x00dup<n>"`` so the adapter can reject that item
    as ``duplicate_id`` instead of JSON silently keeping the last one.
    """

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in pairs:
            key, n = k, 1
            while key in out:
                key = f"{k}\x00dup{n}"
                n += 1
            out[key] = v
        return out

    return hook


# --- audio checks -------------------------------------------------------------------------------


def checked_audio_info(
    path: Path,
    *,
    sample_rate: int | None = None,
    channels: Iterable[int] | None = None,
) -> AudioInfo:
    """Header facts of an audio file, verified against the corpus spec.

    Raises InputError with ``bad_name`` (a file name that is not valid UTF-8 cannot be recorded)
    / ``missing_file`` / ``bad_audio`` / ``truncated_audio`` / ``wrong_sample_rate`` /
    ``wrong_channels``.
    """
    if not is_utf8(str(path)):
        raise InputError(
            path,
            "file name is not valid UTF-8 (undecodable bytes shown as \\xNN); rename it",
            reason="bad_name",
        )
    info = audio_info(path)  # raises missing_file / bad_audio / truncated_audio
    if sample_rate is not None and info.sample_rate != sample_rate:
        raise InputError(
            path,
            f"sample rate {info.sample_rate} Hz, the corpus spec says {sample_rate} Hz",
            reason="wrong_sample_rate",
        )
    if channels is not None:
        allowed = tuple(channels)
        if info.channels not in allowed:
            raise InputError(
                path,
                f"{info.channels} channel(s), the corpus spec allows {list(allowed)}",
                reason="wrong_channels",
            )
    return info


def check_turn_timing(turns: Sequence[Turn], duration_s: float, path: Path, slack_s: float) -> None:
    """Every turn must have start < end and end within the audio (plus ``slack_s``)."""
    for i, t in enumerate(turns):
        if not (math.isfinite(t.start) and math.isfinite(t.end)) or t.start < 0:
            raise InputError(path, f"turn {i}: bad times {t.start}..{t.end}", reason="bad_timing")
        if t.end > duration_s + slack_s:
            raise InputError(
                path,
                f"turn {i} ends at {t.end:.3f} s, after the audio's end ({duration_s:.3f} s)",
                reason="bad_timing",
            )


#: Two turns of one speaker may overlap by this much (timestamp rounding) before it counts.
#: Same-speaker annotations overlapping by at most this much are one stretch of talk.
SAME_SPEAKER_OVERLAP_TOLERANCE_S = 0.01
#: A larger same-speaker overlap is merged into one turn (union of the spans, texts in order)
#: while it is at most this long and at most half of the shorter turn: segmentation slack of one
#: utterance, as annotators leave it. Beyond that the two lines say different things over the
#: same audio (a pasted or shifted line): the dialogue is rejected ``overlapping_turns``.
SAME_SPEAKER_MERGE_MAX_S = 0.5


@dataclass(frozen=True)
class SameSpeakerFixes:
    """What :func:`merge_same_speaker_duplicates` did to a dialogue's turns."""

    copies: int = 0  # exact copies of a turn dropped
    merged: int = 0  # slightly overlapping same-speaker turns joined into one

    def provenance(self) -> dict[str, int]:
        """The non-zero counts, under their provenance keys."""
        keys = {"merged_duplicate_turns": self.copies, "merged_overlapping_turns": self.merged}
        return {k: v for k, v in keys.items() if v}


def merge_same_speaker_duplicates(
    turns: Sequence[Turn], path: Path, tolerance_s: float = SAME_SPEAKER_OVERLAP_TOLERANCE_S
) -> tuple[list[Turn], SameSpeakerFixes]:
    """Drop exact copies of a turn, join slightly overlapping same-speaker turns, refuse the rest.

    One speaker cannot say two things at once, and rendering cuts each turn from the source, so
    an annotation line pasted twice would be heard twice, back to back. A copy (same speaker,
    start, end and text) is dropped. Two turns of one speaker that overlap by more than
    ``tolerance_s`` but at most :data:`SAME_SPEAKER_MERGE_MAX_S` and half of the shorter one
    are one utterance segmented with slack: they become one turn over the union of their spans,
    texts joined in time order. Any larger overlap raises InputError ``overlapping_turns``
    naming both. Non-speech turns (laughter, breathing) may overlap speech. Returns (turns in
    their given order, what was fixed).
    """
    seen: set[tuple[str, float, float, str, str]] = set()
    kept: list[Turn] = []
    copies = 0
    for t in turns:
        key = (t.speaker, t.start, t.end, t.text, str(t.kind))
        if key in seen:
            copies += 1
            continue
        seen.add(key)
        kept.append(t)
    by_speaker: dict[str, list[int]] = {}
    for i, t in enumerate(kept):
        if t.kind is not TurnKind.NONSPEECH:
            by_speaker.setdefault(t.speaker, []).append(i)
    absorbed: dict[int, int] = {}  # turn index -> index of the turn it was joined into
    joined: dict[int, Turn] = {}
    for spk, own in by_speaker.items():
        own.sort(key=lambda i: (kept[i].start, kept[i].end))
        head = own[0]
        for j in own[1:]:
            a, b = joined.get(head, kept[head]), kept[j]
            overlap = min(a.end, b.end) - b.start
            if overlap <= tolerance_s:
                head = j
                continue
            shorter = min(kept[head].duration, b.duration)
            if overlap > SAME_SPEAKER_MERGE_MAX_S or overlap > shorter / 2:
                raise InputError(
                    path,
                    f"turns {head} ({a.start}-{a.end}) and {j} ({b.start}-{b.end}) of speaker "
                    f"{spk} overlap by {overlap:.3f} s; one speaker cannot say two things at once",
                    reason="overlapping_turns",
                )
            text = " ".join(x for x in (a.text.strip(), b.text.strip()) if x)
            joined[head] = replace(a, end=max(a.end, b.end), text=text)
            absorbed[j] = head
    out = [joined.get(i, t) for i, t in enumerate(kept) if i not in absorbed]
    return out, SameSpeakerFixes(copies=copies, merged=len(absorbed))
