"""Build small dialogues from (speaker, start, end) tuples for the turn-taking tests."""

from __future__ import annotations

from collections.abc import Sequence

from duetflow.records.dialogue import (
    Category,
    Dialogue,
    MixedMonoSource,
    Speaker,
    Turn,
    TurnKind,
    dialogue_id,
)

Spec = tuple[str, float, float] | tuple[str, float, float, str]


def turns(*specs: Spec, kind: TurnKind = TurnKind.TURN) -> tuple[Turn, ...]:
    """Turns from ``(speaker, start, end[, text])``; no text by default, so timing alone decides
    (the transcript cues of :mod:`duetflow.turntaking.cues` see no words)."""
    out = []
    for spec in specs:
        text = spec[3] if len(spec) == 4 else ""
        out.append(Turn(speaker=spec[0], start=spec[1], end=spec[2], text=text, kind=kind))
    return tuple(out)


def dialogue(
    ts: Sequence[Turn],
    *,
    original_id: str = "d1",
    corpus: str = "testcorpus",
    language: str = "en",
    duration_s: float | None = None,
) -> Dialogue:
    end = max((t.end for t in ts), default=0.0)
    return Dialogue(
        id=dialogue_id(corpus, original_id),
        corpus=corpus,
        source_id=original_id,
        category=Category.HH,
        language=language,
        topic="t",
        speakers=(Speaker("A"), Speaker("B")),
        turns=tuple(ts),
        source=MixedMonoSource(path=f"/data/{original_id}.wav"),
        duration_s=end if duration_s is None else duration_s,
    )


def alternating(n: int, turn_s: float, gap_s: float, start: float = 0.0) -> tuple[Turn, ...]:
    """``n`` alternating A/B turns of ``turn_s`` seconds separated by ``gap_s``."""
    out = []
    t = start
    for i in range(n):
        out.append(Turn(speaker="AB"[i % 2], start=t, end=t + turn_s, text=f"turn {i}"))
        t += turn_s + gap_s
    return tuple(out)
