"""Scoring a game: the rate judged human per group, with Wilson intervals, and judge accuracy.

The judges' question (the seed study's): *is speaker B human?* Speaker B is human only in HH
dialogues, so a judgment is correct when it says human exactly for HH items.

Judgments are a CSV with a header: ``round``, ``item``, ``judged_human`` (yes/no, y/n,
true/false, 1/0, human/machine), optionally ``judge`` and ``confidence`` (a number). A row that
cannot be read (unknown round/item, a value that is not yes or no, a judge answering the same
item twice) is rejected with its line and reason; ``judgments = kept + rejected``, both counted.

Rates are reported per category, system, language and duration bin (and per category within
each language), with 95 % Wilson score intervals (Wilson 1927), which stay inside [0, 1] and
behave at small counts and at rates of 0 or 1, unlike the normal approximation.
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from duetflow.errors import InputError
from duetflow.game.packets import KEY_COLUMNS

#: z of a two-sided 95 % interval.
Z95 = 1.959963984540054

_YES = frozenset({"yes", "y", "true", "1", "human", "h"})
_NO = frozenset({"no", "n", "false", "0", "machine", "m", "ai", "not human"})
#: The groupings of the rate table, in report order (key-file column per grouping).
GROUPINGS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("category", ("category",)),
    ("system", ("category", "system")),
    ("language", ("language",)),
    ("duration bin", ("duration_bin",)),
    ("language × category", ("language", "category")),
)


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of ``k`` successes in ``n`` trials; (nan, nan) for n = 0."""
    if n <= 0:
        return (math.nan, math.nan)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass(frozen=True, slots=True)
class KeyEntry:
    """One played item of the answer key."""

    round: int
    item: int
    dialogue_id: str
    category: str
    system: str
    language: str
    duration_bin: str

    def value(self, column: str) -> str:
        return str(getattr(self, column))


@dataclass(frozen=True, slots=True)
class Judgment:
    round: int
    item: int
    judged_human: bool
    judge: str
    confidence: float | None


@dataclass(frozen=True, slots=True)
class RejectedJudgment:
    line: int
    reason: str
    detail: str


@dataclass(frozen=True, slots=True)
class RateRow:
    """Judgments of one group: how many, how many said human, the rate and its interval;
    ``correct`` counts the right answers (human for HH, not human otherwise)."""

    grouping: str
    group: str
    judgments: int
    judged_human: int
    correct: int
    mean_confidence: float | None

    @property
    def rate(self) -> float:
        return self.judged_human / self.judgments if self.judgments else math.nan

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.judged_human, self.judgments)

    @property
    def accuracy(self) -> float:
        return self.correct / self.judgments if self.judgments else math.nan

    @property
    def accuracy_interval(self) -> tuple[float, float]:
        return wilson(self.correct, self.judgments)


@dataclass(frozen=True)
class GameScore:
    """Everything ``duetflow game score`` reports."""

    rates: tuple[RateRow, ...]
    judges: tuple[RateRow, ...]  # grouping "judge": accuracy per judge
    overall: RateRow
    kept: int
    rejected: tuple[RejectedJudgment, ...] = field(default_factory=tuple)
    unjudged_items: int = 0


def read_key(path: str | Path) -> dict[tuple[int, int], KeyEntry]:
    """The answer key by (round, item); InputError naming the file and line when malformed."""
    p = Path(path)
    out: dict[tuple[int, int], KeyEntry] = {}
    with _open_csv(p) as rows:
        header, body = rows
        missing = [c for c in KEY_COLUMNS if c not in header]
        if missing:
            raise InputError(p, f"not an answer key: missing column(s) {', '.join(missing)}")
        for line, rec in body:
            try:
                entry = KeyEntry(
                    round=int(rec["round"]),
                    item=int(rec["item"]),
                    dialogue_id=rec["dialogue_id"],
                    category=rec["category"],
                    system=rec["system"],
                    language=rec["language"],
                    duration_bin=rec["duration_bin"],
                )
            except ValueError as e:
                raise InputError(p, f"bad round/item: {e}", line=line) from None
            if (entry.round, entry.item) in out:
                raise InputError(p, f"round {entry.round} item {entry.item} twice", line=line)
            out[(entry.round, entry.item)] = entry
    return out


def read_judgments(
    path: str | Path, key: Mapping[tuple[int, int], KeyEntry]
) -> tuple[list[Judgment], list[RejectedJudgment]]:
    """Judgments that can be scored, and the rejected rows with their line and reason."""
    p = Path(path)
    kept: list[Judgment] = []
    rejected: list[RejectedJudgment] = []
    seen: set[tuple[str, int, int]] = set()
    with _open_csv(p) as rows:
        header, body = rows
        missing = [c for c in ("round", "item", "judged_human") if c not in header]
        if missing:
            raise InputError(p, f"judgments need column(s) {', '.join(missing)}")
        for line, rec in body:
            try:
                j = _judgment(rec)
            except ValueError as e:
                rejected.append(RejectedJudgment(line, "unreadable", str(e)))
                continue
            if (j.round, j.item) not in key:
                rejected.append(
                    RejectedJudgment(
                        line, "unknown_item", f"round {j.round} item {j.item} is not in the key"
                    )
                )
                continue
            if (j.judge, j.round, j.item) in seen:
                rejected.append(
                    RejectedJudgment(
                        line,
                        "duplicate",
                        f"judge {j.judge!r} answered round {j.round} item {j.item} before",
                    )
                )
                continue
            seen.add((j.judge, j.round, j.item))
            kept.append(j)
    return kept, rejected


def _judgment(rec: Mapping[str, str]) -> Judgment:
    answer = (rec.get("judged_human") or "").strip().lower()
    if answer in _YES:
        human = True
    elif answer in _NO:
        human = False
    else:
        raise ValueError(f"judged_human {answer!r} is not yes or no")
    conf_text = (rec.get("confidence") or "").strip()
    confidence = float(conf_text) if conf_text else None
    if confidence is not None and not math.isfinite(confidence):
        raise ValueError(f"confidence {conf_text!r} is not a number")
    return Judgment(
        round=int(rec["round"]),
        item=int(rec["item"]),
        judged_human=human,
        judge=(rec.get("judge") or "").strip(),
        confidence=confidence,
    )


def score_judgments(
    key: Mapping[tuple[int, int], KeyEntry],
    judgments: Sequence[Judgment],
    rejected: Sequence[RejectedJudgment] = (),
) -> GameScore:
    """Rates judged human per grouping and judge accuracy (module docstring)."""
    acc: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0, 0, 0.0, 0])
    for j in judgments:
        entry = key[(j.round, j.item)]
        keys = [(name, " / ".join(entry.value(c) for c in cols)) for name, cols in GROUPINGS]
        keys += [("all", "all"), ("judge", j.judge or "(anonymous)")]
        correct = j.judged_human == (entry.category == "HH")
        for k in keys:
            cell = acc[k]
            cell[0] += 1
            cell[1] += int(j.judged_human)
            cell[2] += int(correct)
            if j.confidence is not None:
                cell[3] += j.confidence
                cell[4] += 1

    def row(k: tuple[str, str]) -> RateRow:
        n, h, c, conf, nconf = acc[k]
        return RateRow(k[0], k[1], int(n), int(h), int(c), conf / nconf if nconf else None)

    order = {name: i for i, (name, _) in enumerate(GROUPINGS)}
    rates = tuple(
        row(k) for k in sorted(acc, key=lambda k: (order.get(k[0], 99), k[1])) if k[0] in order
    )
    judges = tuple(row(k) for k in sorted(acc) if k[0] == "judge")
    overall = row(("all", "all")) if ("all", "all") in acc else RateRow("all", "all", 0, 0, 0, None)
    judged = {(j.round, j.item) for j in judgments}
    return GameScore(
        rates=rates,
        judges=judges,
        overall=overall,
        kept=len(judgments),
        rejected=tuple(rejected),
        unjudged_items=sum(1 for k in key if k not in judged),
    )


def score_game(answers: str | Path, judgments: str | Path) -> GameScore:
    """Read the answer key and the judgments CSV and score them."""
    key = read_key(answers)
    kept, rejected = read_judgments(judgments, key)
    return score_judgments(key, kept, rejected)


class _open_csv:
    """``with _open_csv(path) as (header, rows)``: rows are (line number, record)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __enter__(self) -> tuple[list[str], Iterable[tuple[int, dict[str, str]]]]:
        try:
            self.f = self.path.open(newline="", encoding="utf-8-sig")
        except OSError as e:
            raise InputError(
                self.path, f"cannot read: {e.strerror}", reason="missing_file"
            ) from None
        reader = csv.DictReader(self.f)
        try:
            header = [h.strip() for h in (reader.fieldnames or [])]
        except (csv.Error, UnicodeDecodeError) as e:
            self.f.close()
            raise InputError(self.path, f"not a readable CSV: {e}") from None
        reader.fieldnames = header

        def body() -> Iterator[tuple[int, dict[str, str]]]:
            try:
                for rec in reader:
                    yield reader.line_num, {k: (v or "") for k, v in rec.items() if k is not None}
            except (csv.Error, UnicodeDecodeError) as e:
                raise InputError(
                    self.path, f"not a readable CSV: {e}", line=reader.line_num + 1
                ) from None

        return header, body()

    def __exit__(self, *exc: object) -> None:
        self.f.close()
