"""A studio session's turn texts and timings: ``transcript.json``, RTTM, text alignment.

A transcript gives texts (and optionally timings) in spoken order; an RTTM file gives timings
only. When turns come from the audio, :func:`align_text` places the transcript's texts on them
by content and time, and says what it could not place.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field, ValidationError

from duetflow.corpora.adapter import read_text
from duetflow.corpora.studio.sidecar import StrictModel, validation_error
from duetflow.errors import InputError
from duetflow.records.dialogue import Turn, TurnKind


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


#: cost of a transcript entry that no detected turn takes (its text would be lost)
SKIP_ENTRY_COST = 2.5
#: cost of a detected turn that takes no transcript entry (it would be published without text)
SKIP_TURN_COST = 2.5
#: extra cost of joining detected turns under one entry (a pause split the speaker's turn) or
#: entries into one detected turn (a short pause bridged two of them)
JOIN_COST = 0.6
#: detected turns further apart than this are never joined under one entry
MAX_JOIN_GAP_S = 1.5
_MAX_JOIN = 3
#: hardly anyone says more words (or CJK characters) per second than this; a pairing that
#: would need more costs :data:`FAST_COST` per e-fold beyond it, so text too long for a turn
#: is left out (and reported) rather than squeezed in
FAST_UNITS_PER_S = 8.0
FAST_COST = 4.0
#: and hardly anyone fewer (over a whole session, pauses inside turns included)
SLOW_UNITS_PER_S = 1.5


@dataclass(frozen=True)
class TextAlignment:
    """Detected turns with the transcript's text placed on them, and what could not be placed.

    ``turns`` are the detected turns, those joined under one transcript entry merged into one
    turn, each carrying the text (and kind) of its entries; ``unplaced`` the transcript entries
    (index, speaker, text) no turn took; ``untexted`` the detected turns (after merging) that
    took no entry. A session whose alignment is not :attr:`complete` must not be published with
    its text missing (the adapter rejects it ``transcript_unaligned``).
    """

    turns: list[Turn]
    unplaced: list[tuple[int, str, str]]
    untexted: list[Turn]
    merged_turns: int
    joined_entries: int
    speech_rate: dict[str, float]

    @property
    def complete(self) -> bool:
        return not self.unplaced and not self.untexted

    def summary(self) -> dict[str, object]:
        """Provenance ``transcript_alignment``: status and counts."""
        return {
            "status": "aligned" if self.complete else "not aligned",
            "method": "content_and_time",
            "merged_turns": self.merged_turns,
            "joined_entries": self.joined_entries,
            "unplaced_entries": len(self.unplaced),
            "untexted_turns": len(self.untexted),
        }

    def problem(self) -> str:
        """One line naming what could not be placed (empty when complete)."""
        parts: list[str] = []
        if self.unplaced:
            first = self.unplaced[0]
            parts.append(
                f"{len(self.unplaced)} transcript turn(s) match no detected turn "
                f"(first: turns.{first[0]} by {first[1]}: {first[2][:60]!r})"
            )
        if self.untexted:
            t = self.untexted[0]
            parts.append(
                f"{len(self.untexted)} detected turn(s) get no transcript text "
                f"(first: {t.speaker} {t.start:.2f}-{t.end:.2f} s)"
            )
        return "; ".join(parts)


def text_units(text: str) -> int:
    """How much there is to say: words, plus CJK/kana/hangul characters (at least 1)."""
    from duetflow.corpora.studio.hm import script_units  # hm imports this module

    return max(1, sum(script_units(text).values()))


def align_text(
    turns: Sequence[Turn], transcript: Sequence[TranscriptTurn], speakers: Sequence[str]
) -> TextAlignment:
    """Place untimed transcript entries on detected turns, by content and time.

    Per speaker, the entries (in spoken order) and the detected turns (in time order) are
    aligned by dynamic programming, monotone in both: an entry takes one detected turn, or
    several consecutive ones less than :data:`MAX_JOIN_GAP_S` apart (the speaker paused inside
    the turn; they are merged into one turn), or two entries share one detected turn (a short
    pause between them was bridged; their texts are joined). The cost of a pairing is how far
    the turn's duration is from what its text needs at the speaker's rate in this session
    (``|log(d / expected)|``, the rate being detected speech time per text unit), plus
    :data:`JOIN_COST` per join; an entry left out costs :data:`SKIP_ENTRY_COST`, a turn left
    without text :data:`SKIP_TURN_COST`. The cheapest alignment wins (ties: fewer skips, then
    the earlier choice), so with equal counts and ordinary durations every entry lands on its
    own turn, and a turn split by a pause or a stray extra turn does not shift every later
    text onto the wrong turn, as placing by count would. A pairing faster than
    :data:`FAST_UNITS_PER_S` costs more the faster it is.
    """
    out: list[Turn] = []
    unplaced: list[tuple[int, str, str]] = []
    untexted: list[Turn] = []
    merged = joined = 0
    rates: dict[str, float] = {}
    for spk in speakers:
        entries = [(i, t) for i, t in enumerate(transcript) if t.speaker == spk]
        dets = sorted((t for t in turns if t.speaker == spk), key=lambda t: t.start)
        units = [text_units(t.text) for _, t in entries]
        talk = sum(t.end - t.start for t in dets)
        rate = talk / sum(units) if units and talk > 0 else 0.3
        # a speaker's rate is what people manage (1.5-8 units/s), whatever the counts suggest
        rate = min(max(rate, 1.0 / FAST_UNITS_PER_S), 1.0 / SLOW_UNITS_PER_S)
        rates[spk] = round(rate, 4)
        others = [t for t in turns if t.speaker != spk]
        plan = _align_one(units, dets, rate, others)
        for op, ei, ek, di, dk in plan:
            if op == "entry":
                idx, t = entries[ei]
                unplaced.append((idx, spk, t.text))
            elif op == "turn":
                untexted.append(dets[di])
                out.append(dets[di])
            else:
                group = dets[di:dk]
                ents = [entries[e][1] for e in range(ei, ek)]
                text = " ".join(e.text.strip() for e in ents).strip()
                kinds = {e.kind for e in ents}
                kind = ents[0].kind if len(kinds) == 1 else TurnKind.TURN
                first = group[0]
                out.append(Turn(spk, first.start, group[-1].end, text, kind, first.labels))
                merged += len(group) - 1
                joined += len(ents) - 1
    out.sort(key=lambda t: (t.start, speakers.index(t.speaker)))
    unplaced.sort()
    return TextAlignment(out, unplaced, untexted, merged, joined, rates)


def _align_one(
    units: Sequence[int], dets: Sequence[Turn], rate: float, others: Sequence[Turn] = ()
) -> list[tuple[str, int, int, int, int]]:
    """Cheapest monotone alignment of one speaker's entries (``units``) with ``dets``.

    Two detected turns are never joined across a turn of the other party that starts in the
    pause between them and goes on past it (joining would invent an overlap, even a
    floor-taking interruption); one contained in the pause (a backchannel) does not forbid it.

    Returns steps ``(op, e0, e1, d0, d1)``: ``pair`` (entries ``e0:e1`` on turns ``d0:d1``),
    ``entry`` (entry ``e0`` unplaced) or ``turn`` (turn ``d0`` without text), in order.
    """
    m, n = len(units), len(dets)
    inf = math.inf
    # cost[i][j]: best cost of aligning the first i entries with the first j turns
    cost = [[inf] * (n + 1) for _ in range(m + 1)]
    back: list[list[tuple[str, int, int] | None]] = [[None] * (n + 1) for _ in range(m + 1)]
    cost[0][0] = 0.0

    def pair_cost(e0: int, e1: int, d0: int, d1: int) -> float:
        for k in range(d0 + 1, d1):
            gap_a, gap_b = dets[k - 1].end, dets[k].start
            if gap_b - gap_a > MAX_JOIN_GAP_S:
                return inf
            if any(gap_a <= o.start < gap_b and o.end > gap_b for o in others):
                return inf
        need = rate * sum(units[e0:e1])
        have = sum(t.end - t.start for t in dets[d0:d1])
        fast = sum(units[e0:e1]) / (FAST_UNITS_PER_S * max(have, 0.1))
        penalty = FAST_COST * math.log(fast) if fast > 1.0 else 0.0
        joins = (d1 - d0 - 1) + (e1 - e0 - 1)
        return abs(math.log((have + 0.2) / (need + 0.2))) + JOIN_COST * joins + penalty

    for i in range(m + 1):
        for j in range(n + 1):
            c = cost[i][j]
            if c == inf:
                continue
            steps: list[tuple[str, int, int, float]] = []
            if i < m:
                steps.append(("entry", 1, 0, SKIP_ENTRY_COST))
            if j < n:
                steps.append(("turn", 0, 1, SKIP_TURN_COST))
            for de in (1, 2):
                for dd in range(1, _MAX_JOIN + 1):
                    if (de > 1 and dd > 1) or i + de > m or j + dd > n:
                        continue
                    steps.append(("pair", de, dd, pair_cost(i, i + de, j, j + dd)))
            for op, de, dd, sc in steps:
                v = c + sc
                if v < cost[i + de][j + dd] - 1e-12:
                    cost[i + de][j + dd] = v
                    back[i + de][j + dd] = (op, de, dd)
    plan: list[tuple[str, int, int, int, int]] = []
    i, j = m, n
    while i or j:
        b = back[i][j]
        assert b is not None  # every cell on the path was reached
        op, de, dd = b
        plan.append((op, i - de, i, j - dd, j))
        i, j = i - de, j - dd
    plan.reverse()
    return plan


def attach_text(
    turns: Sequence[Turn], transcript: Sequence[TranscriptTurn], speakers: Sequence[str]
) -> tuple[list[Turn], str]:
    """Give detected turns their transcript text (see :func:`align_text`).

    Returns the turns and a one-line status: ``aligned`` or ``not aligned (...)`` naming what
    could not be placed. Prefer :func:`align_text`, which says what was lost.
    """
    al = align_text(turns, transcript, speakers)
    if al.complete:
        return al.turns, "aligned"
    return al.turns, f"not aligned ({al.problem()})"
