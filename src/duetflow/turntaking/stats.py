"""Turn-taking statistics per dialogue and per corpus, as plain data the report can plot.

:class:`DialogueStats` describes one source dialogue and what selection did with it;
:class:`CorpusStats` folds any number of them (and of rejections) into fixed-size histograms and
counters, so its memory does not grow with the corpus. ``CorpusStats.to_dict()`` is what the
process stage writes to ``stats.json``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from duetflow.records.dialogue import Dialogue, Rejection
from duetflow.turntaking.overlaps import BalanceStats, OverlapClass, OverlapEvent

__all__ = [
    "FTO_EDGES",
    "SHARE_EDGES",
    "CorpusStats",
    "DialogueStats",
    "Histogram",
    "overlap_counts",
]

#: floor-transfer offset bins: 100 ms wide from -3 s to +3 s (outliers counted apart).
FTO_EDGES: tuple[float, ...] = tuple(round(-3.0 + 0.1 * i, 1) for i in range(61))
#: utterance-share bins: 5 % wide from 0 to 1 (1.0 falls in the last bin).
SHARE_EDGES: tuple[float, ...] = tuple(round(0.05 * i, 2) for i in range(21))


def overlap_counts(events: Iterable[OverlapEvent]) -> dict[str, int]:
    """Events per overlap class, every class present (zeros included)."""
    c = Counter(e.klass.value for e in events)
    return {k.value: c.get(k.value, 0) for k in OverlapClass}


def micros(x: float) -> int:
    """``x`` seconds as integer microseconds (what stats add, so shard sums merge exactly)."""
    return round(x * 1_000_000)


def mean_of(sum_us: int, n: int) -> float | None:
    """The mean in seconds of ``n`` values summing to ``sum_us`` microseconds (6 decimals)."""
    return round(sum_us / n / 1_000_000, 6) if n else None


def seconds_of(sum_us: int) -> float:
    """A duration sum in seconds, as ``stats.json`` writes it (3 decimals)."""
    return round(sum_us / 1_000_000, 3)


@dataclass
class Histogram:
    """Fixed-edge histogram with counts below/above the edges, running sum, min and max."""

    edges: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    below: int = 0
    above: int = 0
    n: int = 0
    total_us: int = 0  # integer microseconds: sums of shards add up exactly, in any order
    lo: float | None = None
    hi: float | None = None

    def __post_init__(self) -> None:
        if not self.counts:
            self.counts = [0] * (len(self.edges) - 1)

    def add(self, x: float) -> None:
        if math.isnan(x):
            return
        x = round(x, 6)  # microseconds: a 0.2 s gap computed as 0.19999999 belongs in 0.2
        self.n += 1
        self.total_us += micros(x)
        self.lo = x if self.lo is None else min(self.lo, x)
        self.hi = x if self.hi is None else max(self.hi, x)
        if x < self.edges[0]:
            self.below += 1
        elif x > self.edges[-1]:
            self.above += 1
        else:
            k = 0
            # edges are few (≤ 61); a bisect would do, but a scan keeps the float rule obvious:
            # bin k holds edges[k] <= x < edges[k+1]; the last bin also holds x == hi.
            for k in range(len(self.edges) - 1):
                if x < self.edges[k + 1]:
                    break
            self.counts[k] += 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "edges": list(self.edges),
            "counts": list(self.counts),
            "below": self.below,
            "above": self.above,
            "n": self.n,
            "sum_us": self.total_us,
            "mean": mean_of(self.total_us, self.n),
            "min": self.lo,
            "max": self.hi,
        }


@dataclass(frozen=True)
class DialogueStats:
    """Turn-taking figures of one source dialogue and of the windows selection kept from it."""

    dialogue_id: str
    corpus: str
    category: str
    duration_s: float
    n_windows: int
    n_kept: int
    ftos: tuple[float, ...]
    overlaps: Mapping[str, int]
    balance: BalanceStats
    kept_ftos: tuple[float, ...] = ()
    kept_overlaps: Mapping[str, int] = field(default_factory=dict)
    window_b_shares: tuple[tuple[float, bool], ...] = ()  # (speaker B utterance share, kept)
    kept_duration_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "dialogue_id": self.dialogue_id,
            "corpus": self.corpus,
            "category": self.category,
            "duration_s": self.duration_s,
            "n_windows": self.n_windows,
            "n_kept": self.n_kept,
            "ftos": list(self.ftos),
            "overlaps": dict(self.overlaps),
            "balance": self.balance.to_dict(),
            "kept_ftos": list(self.kept_ftos),
            "kept_overlaps": dict(self.kept_overlaps),
            "window_b_shares": [[s, k] for s, k in self.window_b_shares],
            "kept_duration_s": self.kept_duration_s,
        }

    @staticmethod
    def empty(dialogue: Dialogue, balance: BalanceStats) -> DialogueStats:
        return DialogueStats(
            dialogue_id=dialogue.id,
            corpus=dialogue.corpus,
            category=str(dialogue.category),
            duration_s=dialogue.duration_s,
            n_windows=0,
            n_kept=0,
            ftos=(),
            overlaps=overlap_counts(()),
            balance=balance,
        )


@dataclass
class _Acc:
    """Accumulator for one corpus (or the total)."""

    dialogues: int = 0
    windows: int = 0
    kept: int = 0
    kept_duration_us: int = 0
    source_duration_us: int = 0
    rejected_by_reason: Counter[str] = field(default_factory=Counter)
    rejected_by_stage: Counter[str] = field(default_factory=Counter)
    overlaps: Counter[str] = field(default_factory=Counter)
    kept_overlaps: Counter[str] = field(default_factory=Counter)
    fto: Histogram = field(default_factory=lambda: Histogram(FTO_EDGES))
    kept_fto: Histogram = field(default_factory=lambda: Histogram(FTO_EDGES))
    b_share_all: Histogram = field(default_factory=lambda: Histogram(SHARE_EDGES))
    b_share_kept: Histogram = field(default_factory=lambda: Histogram(SHARE_EDGES))

    def add(self, s: DialogueStats) -> None:
        self.dialogues += 1
        self.windows += s.n_windows
        self.kept += s.n_kept
        self.kept_duration_us += micros(s.kept_duration_s)
        self.source_duration_us += micros(s.duration_s)
        self.overlaps.update(s.overlaps)
        self.kept_overlaps.update(s.kept_overlaps)
        for x in s.ftos:
            self.fto.add(x)
        for x in s.kept_ftos:
            self.kept_fto.add(x)
        for share, kept in s.window_b_shares:
            self.b_share_all.add(share)
            if kept:
                self.b_share_kept.add(share)

    def add_rejection(self, r: Rejection) -> None:
        self.rejected_by_reason[r.reason] += 1
        self.rejected_by_stage[str(r.stage)] += 1

    def to_dict(self) -> dict[str, Any]:
        classes = [k.value for k in OverlapClass]
        return {
            "dialogues": self.dialogues,
            "windows": self.windows,
            "kept": self.kept,
            "rejected": sum(self.rejected_by_reason.values()),
            "rejected_by_reason": dict(sorted(self.rejected_by_reason.items())),
            "rejected_by_stage": dict(sorted(self.rejected_by_stage.items())),
            "source_duration_s": seconds_of(self.source_duration_us),
            "source_duration_us": self.source_duration_us,
            "kept_duration_s": seconds_of(self.kept_duration_us),
            "kept_duration_us": self.kept_duration_us,
            "overlaps": {k: self.overlaps.get(k, 0) for k in classes},
            "kept_overlaps": {k: self.kept_overlaps.get(k, 0) for k in classes},
            "fto": self.fto.to_dict(),
            "kept_fto": self.kept_fto.to_dict(),
            "balance_b_share": self.b_share_all.to_dict(),
            "kept_balance_b_share": self.b_share_kept.to_dict(),
        }


class CorpusStats:
    """Streaming per-corpus accumulator of :class:`DialogueStats` and rejections.

    ``add`` once per selected source dialogue and ``add_rejection`` once per rejection of any
    stage (intake rejections included), then ``to_dict()``: ``{"total": {...}, "corpora":
    {name: {...}}}``, each with ``dialogues``, ``windows``, ``kept``, ``rejected``,
    ``rejected_by_reason``, ``rejected_by_stage``, ``source_duration_s``, ``kept_duration_s``,
    ``overlaps`` / ``kept_overlaps`` (counts by class), ``fto`` / ``kept_fto`` (floor-transfer
    offsets of the source dialogues / of kept windows, in **seconds**, 100 ms bins) and
    ``balance_b_share`` / ``kept_balance_b_share`` (speaker B's utterance share per window, all
    evaluated / kept, 5 % bins). A histogram is ``{edges, counts, below, above, n, mean, min,
    max}``.
    """

    def __init__(self) -> None:
        self._total = _Acc()
        self._by_corpus: dict[str, _Acc] = {}

    def _acc(self, corpus: str) -> _Acc:
        return self._by_corpus.setdefault(corpus or "unknown", _Acc())

    def add(self, stats: DialogueStats) -> None:
        self._total.add(stats)
        self._acc(stats.corpus).add(stats)

    def add_rejection(self, rejection: Rejection) -> None:
        self._total.add_rejection(rejection)
        self._acc(rejection.corpus).add_rejection(rejection)

    def add_rejections(self, rejections: Sequence[Rejection]) -> None:
        for r in rejections:
            self.add_rejection(r)

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": self._total.to_dict(),
            "corpora": {
                k: {"corpus": k, **self._by_corpus[k].to_dict()} for k in sorted(self._by_corpus)
            },
        }
