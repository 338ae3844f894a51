"""The report's speech-quality section: DNSMOS distributions by category and by corpus.

Issue 29. The scores are the manifests' ``dnsmos_*`` columns (``quality.dnsmos``; null when it
was off, and then the section says so): nothing is re-measured here. :class:`DnsmosTally`
accumulates them in the report's one streaming pass (fixed bins of 0.05 MOS on 1–5, exact
count/mean/min/max); :func:`dnsmos_table` and :func:`dnsmos_plots` draw the frozen
:class:`~duetflow.report.data.DnsmosDistribution` s for the page and the card.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from duetflow.records.rows import RenderedDialogueRow
from duetflow.report.data import Accumulator, DnsmosDistribution, ReportData
from duetflow.report.plots import Plot, hist_plot
from duetflow.report.tables import fmt_num

#: (column, label) of the scores shown, OVRL first (the filter's score).
METRICS: tuple[tuple[str, str], ...] = (
    ("dnsmos_ovrl", "OVRL"),
    ("dnsmos_sig", "SIG"),
    ("dnsmos_bak", "BAK"),
    ("dnsmos_p808", "P.808"),
)
#: How the dialogues are grouped, in table order.
GROUPINGS = ("category", "corpus")
_CATEGORY_ORDER = {"HH": 0, "HM": 1, "PH": 2}


class DnsmosTally:
    """Streaming DNSMOS histograms per (grouping, group, score)."""

    def __init__(self) -> None:
        self.acc: dict[tuple[str, str, str], Accumulator] = {}

    def add(self, row: RenderedDialogueRow) -> None:
        """Count one dialogue's scores (a dialogue without scores counts nowhere)."""
        for col, _ in METRICS:
            v = getattr(row, col, None)
            if v is None:
                continue
            for by in GROUPINGS:
                key = (by, str(getattr(row, by)), col)
                acc = self.acc.get(key)
                if acc is None:
                    acc = self.acc[key] = Accumulator(1.0, 5.0001, 0.05)
                acc.add(float(v))

    def freeze(self) -> tuple[DnsmosDistribution, ...]:
        """Every distribution, by grouping, group (HH, HM, PH first) and score order."""
        order = {c: i for i, (c, _) in enumerate(METRICS)}
        keys = sorted(
            self.acc,
            key=lambda k: (
                GROUPINGS.index(k[0]),
                _CATEGORY_ORDER.get(k[1], 9) if k[0] == "category" else 0,
                k[1],
                order[k[2]],
            ),
        )
        label = dict(METRICS)
        return tuple(
            DnsmosDistribution(
                by, group, col, self.acc[(by, group, col)].freeze(f"DNSMOS {label[col]}", "MOS")
            )
            for by, group, col in keys
        )


def dnsmos_table(data: ReportData) -> list[dict[str, Any]]:
    """One row per category and per corpus: dialogues scored, OVRL's spread, the other means."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for q in data.dnsmos:
        row = rows.setdefault((q.by, q.group), {"by": q.by, "group": q.group})
        d, label = q.dist, q.dist.name.removeprefix("DNSMOS ")
        if q.column == "dnsmos_ovrl":
            row["n"] = str(d.n)
            row["OVRL mean"] = fmt_num(d.mean, 2)
            row["OVRL p10≈"] = fmt_num(d.quantile(0.1), 2)
            row["OVRL median≈"] = fmt_num(d.quantile(0.5), 2)
            row["OVRL min"] = fmt_num(d.min, 2)
            row["OVRL max"] = fmt_num(d.max, 2)
        else:
            row[f"{label} mean"] = fmt_num(d.mean, 2)
    return list(rows.values())


def _ovrl(data: ReportData, by: str) -> tuple[list[Any], list[str]]:
    qs = [q for q in data.dnsmos if q.by == by and q.column == "dnsmos_ovrl"]
    return [q.dist for q in qs], [q.group for q in qs]


def dnsmos_plots(data: ReportData) -> Sequence[Plot | None]:
    """OVRL histograms: one figure per grouping, a line per category / corpus."""
    return [hist_plot(f"dnsmos_{by}", *_ovrl(data, by), f"DNSMOS OVRL by {by}") for by in GROUPINGS]


#: The section's figures, in page order (the page and the card show both).
FIGURES = tuple(f"dnsmos_{by}" for by in GROUPINGS)


def dnsmos_intro(data: ReportData) -> str:
    """The section's first sentence: what the scores are, or why there are none."""
    if not data.dnsmos:
        return (
            "No DNSMOS scores in the manifests (quality.dnsmos was off when they were"
            " rendered; pip install 'duetflow[quality]' and set quality.dnsmos: on)."
        )
    return (
        "DNSMOS (the DNS Challenge's P.835 predictor: SIG speech, BAK background, OVRL overall,"
        " and P.808) of every rendered mix, from the manifests' dnsmos_* columns (per-speaker"
        " scores are in the columns too). Scored the same way for HH, HM and PH; a filter"
        " (filters.min_dnsmos_ovrl) may have rejected dialogues under a floor (see Rejections)."
    )
