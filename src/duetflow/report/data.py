"""The report's records: what a report holds, and the streaming histograms behind them.

:class:`ReportData` is the one source of truth for the HTML page, the dataset card,
``report.json`` and the Prefect artifacts; :mod:`~duetflow.report.collect` fills it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from duetflow.design import DesignCell

if TYPE_CHECKING:
    from duetflow.fairness.audit import AuditResult

NO_SPLIT = "-"
MAX_EXAMPLES = 3
DEFAULT_AUDIO_SAMPLE = 24


# --- distributions ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Distribution:
    """A fixed-bin histogram with exact moments; ``in_band`` counts values inside ``band``."""

    name: str
    unit: str
    n: int
    mean: float | None
    min: float | None
    max: float | None
    edges: tuple[float, ...]
    counts: tuple[int, ...]
    below: int = 0
    above: int = 0
    band: tuple[float, float] | None = None
    in_band: int | None = None

    @property
    def in_band_share(self) -> float | None:
        if self.in_band is None or self.n == 0:
            return None
        return self.in_band / self.n

    def quantile(self, q: float) -> float | None:
        """Approximate quantile (linear inside the bin; exact to one bin width)."""
        if self.n == 0 or self.min is None or self.max is None:
            return None
        target = q * self.n
        cum = float(self.below)
        if target <= cum:
            return self.min
        for i, c in enumerate(self.counts):
            if c and cum + c >= target:
                lo, hi = self.edges[i], self.edges[i + 1]
                val = lo + (hi - lo) * (target - cum) / c
                return min(max(val, self.min), self.max)
            cum += c
        return self.max


class Accumulator:
    """Streaming histogram accumulator behind a :class:`Distribution`."""

    def __init__(
        self,
        lo: float,
        hi: float,
        width: float,
        band: tuple[float, float] | None = None,
        tol: float = 0.0,
    ) -> None:
        self.bins = max(1, round((hi - lo) / width))
        self.lo, self.hi = lo, lo + self.bins * width
        self.width = width
        self.counts = np.zeros(self.bins, dtype=np.int64)
        self.n = 0
        self.total = 0.0
        self.min = math.inf
        self.max = -math.inf
        self.below = 0
        self.above = 0
        self.band = band
        self.tol = tol
        self.in_band = 0

    def add(self, x: float) -> None:
        if not math.isfinite(x):
            return
        self.n += 1
        self.total += x
        self.min = min(self.min, x)
        self.max = max(self.max, x)
        if x < self.lo:
            self.below += 1
        elif x >= self.hi:
            self.above += 1
        else:
            # the epsilon keeps 0.5 in [0.50, 0.52) despite 0.5 / 0.02 = 24.999...
            idx = int(math.floor((x - self.lo) / self.width + 1e-9))
            self.counts[min(self.bins - 1, idx)] += 1
        if self.band is not None and self.band[0] - self.tol <= x <= self.band[1] + self.tol:
            self.in_band += 1

    def freeze(self, name: str, unit: str, band: tuple[float, float] | None = None) -> Distribution:
        edges = tuple(round(self.lo + i * self.width, 9) for i in range(self.bins + 1))
        return Distribution(
            name=name,
            unit=unit,
            n=self.n,
            mean=self.total / self.n if self.n else None,
            min=self.min if self.n else None,
            max=self.max if self.n else None,
            edges=edges,
            counts=tuple(int(c) for c in self.counts),
            below=self.below,
            above=self.above,
            band=band if band is not None else self.band,
            in_band=self.in_band if self.band is not None else None,
        )


# --- report records -----------------------------------------------------------------------------


@dataclass(frozen=True)
class CountRow:
    """Dialogues, hours and turns of one split × category × language × corpus cell."""

    split: str
    category: str
    language: str
    corpus: str
    dialogues: int
    seconds: float
    turns: int

    @property
    def hours(self) -> float:
        return self.seconds / 3600.0


@dataclass(frozen=True)
class DesignRow:
    """Dialogues and hours of one category × language × topic × system × strategy × backend cell.

    The Turing-test design at a glance (the layout of the seed study's dataset table): topics
    per category and language, HM dialogues per S2S system and elicitation strategy, PH
    dialogues per TTS backend. ``system`` is ``"<name> <version>"`` (HM), else empty; so are
    ``strategy`` (studio sessions) and ``tts_backend`` (PH).
    """

    category: str
    language: str
    topic: str
    system: str
    strategy: str
    tts_backend: str
    dialogues: int
    seconds: float

    @property
    def hours(self) -> float:
        return self.seconds / 3600.0


@dataclass(frozen=True)
class RejectionRow:
    stage: str
    reason: str
    count: int
    corpora: tuple[str, ...]
    examples: tuple[str, ...]


@dataclass(frozen=True)
class SourceStats:
    """Turn-taking statistics of one corpus's *source* dialogues before filtering.

    Read from the process stage's ``stats.json``
    (``duetflow.turntaking.stats.CorpusStats.to_dict()``):
    ``fto``/``balance``/``overlaps`` describe all source dialogues (balance per candidate
    window), the ``kept_*`` fields the windows that were kept.
    """

    label: str
    dialogues: int | None
    windows: int | None
    kept: int | None
    rejected: int | None
    rejected_by_reason: Mapping[str, int]
    rejected_by_stage: Mapping[str, int]
    source_hours: float | None
    kept_hours: float | None
    fto: Distribution | None
    kept_fto: Distribution | None
    overlap_classes: Mapping[str, int]
    kept_overlap_classes: Mapping[str, int]
    balance: Distribution | None
    kept_balance: Distribution | None


@dataclass(frozen=True)
class PhStats:
    dialogues: int
    backends: Mapping[str, int]
    cloning: Mapping[str, int]  # "cloned" / "not cloned" / "unknown"
    similarity: Distribution
    failures: Mapping[str, int]  # synthesize-stage rejection reason -> count


@dataclass(frozen=True)
class LicenceRow:
    """One licence the report's dialogues carry, with how much of the data it covers."""

    licence: str
    name: str
    corpora: tuple[str, ...]
    dialogues: int
    seconds: float


@dataclass(frozen=True)
class Provenance:
    code_version: str
    code_versions_in_data: tuple[str, ...]
    config_hash: str
    config: Mapping[str, Any]
    inputs: tuple[tuple[str, str], ...]  # (kind, label)
    release_id: str | None
    release_meta: Mapping[str, Any]
    sources: tuple[tuple[str, str, str], ...]  # (key, name, licence)
    licences: tuple[LicenceRow, ...] = ()  # from the rows' ``licence`` column
    terms: tuple[str, ...] = ()  # what those licences imply (duetflow.licences.release_terms)


@dataclass(frozen=True)
class DnsmosDistribution:
    """DNSMOS scores (one ``dnsmos_*`` column) of the dialogues of one category or corpus."""

    by: str  # "category" or "corpus"
    group: str
    column: str
    dist: Distribution


@dataclass(frozen=True)
class ReportData:
    """Everything a report shows; the one source of truth for page, card and artifacts."""

    title: str
    counts: tuple[CountRow, ...]
    rejections: tuple[RejectionRow, ...]
    distributions: Mapping[str, Distribution]
    audio_sample: tuple[str, ...]  # ids of the dialogues whose audio was measured
    audio_errors: tuple[str, ...]
    source_stats: tuple[SourceStats, ...]
    ph: PhStats
    provenance: Provenance
    notes: tuple[str, ...] = field(default_factory=tuple)
    design: tuple[DesignRow, ...] = field(default_factory=tuple)
    unmapped_topic: str = "other"
    #: the declared design's cells with counts and targets (empty: no design declared)
    design_cells: tuple[DesignCell, ...] = field(default_factory=tuple)
    design_problems: tuple[str, ...] = field(default_factory=tuple)
    #: the cue-parity audit (docs/fairness.md); None when it was off
    cue_audit: AuditResult | None = None
    #: DNSMOS per category and corpus (duetflow.report.quality); empty when none was scored
    dnsmos: tuple[DnsmosDistribution, ...] = field(default_factory=tuple)

    @property
    def total_dialogues(self) -> int:
        return sum(r.dialogues for r in self.counts)

    @property
    def total_hours(self) -> float:
        return sum(r.seconds for r in self.counts) / 3600.0

    @property
    def total_turns(self) -> int:
        return sum(r.turns for r in self.counts)

    @property
    def total_rejections(self) -> int:
        return sum(r.count for r in self.rejections)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``report.json``)."""
        from duetflow.fairness.table import summary_dict

        audit = self.cue_audit
        d = asdict(dataclasses.replace(self, cue_audit=None))
        d["cue_audit"] = (
            None
            if audit is None
            else {
                "dialogues": len(audit.rows),
                **summary_dict(audit.pairs, audit.verdict, audit.errors),
            }
        )
        d["totals"] = {
            "dialogues": self.total_dialogues,
            "hours": self.total_hours,
            "turns": self.total_turns,
            "rejections": self.total_rejections,
        }
        return d
