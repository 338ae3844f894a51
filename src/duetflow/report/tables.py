"""The report's tables as data and its number formatting, shared by the page and the card.

Each builder turns :class:`~duetflow.report.data.ReportData` into rows (dicts of display
strings keyed by column heading); :mod:`~duetflow.report.html` draws them as HTML tables and
:mod:`~duetflow.report.card` as Markdown.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from duetflow.report.data import CountRow, DesignRow, Distribution, ReportData, SourceStats

#: Distributions in the order the page and the card show them.
DIST_ORDER = (
    "gap_ms",
    "gap_ms_audio",
    "floor_step_db",
    "floor_dip_db",
    "gap_corrections",
    "loudness_a",
    "loudness_b",
    "loudness_diff",
    "loudness_a_audio",
    "loudness_b_audio",
    "loudness_diff_audio",
    "duration_s",
    "turns_per_dialogue",
    "utterance_share_a",
    "speaking_time_share_a",
)


#: The figures of the distributions section, in page order: the HTML page and the dataset card
#: both show these, so a figure added here appears in both.
DISTRIBUTION_FIGURES: tuple[str, ...] = (
    "gaps",
    "gaps_audio",
    "floor_continuity",
    "loudness",
    "loudness_diff",
    "loudness_audio",
    "loudness_diff_audio",
    "durations",
    "turns",
    "utterance_share",
    "speaking_time_share",
)

# --- number formatting shared by page and card ------------------------------------------------


def fmt_hours(seconds: float) -> str:
    return f"{seconds / 3600.0:.3f}"


def fmt_num(x: float | None, digits: int = 1) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def fmt_pct(x: float | None) -> str:
    return "–" if x is None else f"{100.0 * x:.1f}%"


def _digits(d: Distribution) -> int:
    return 3 if d.unit in ("share", "cosine") else (2 if d.unit in ("LU", "LUFS") else 1)


def dist_row(d: Distribution) -> dict[str, str]:
    """The printed summary of one distribution (same strings in page and card)."""
    k = _digits(d)
    band = "–" if d.band is None else f"{d.band[0]:.{k}f} … {d.band[1]:.{k}f}"
    return {
        "measure": d.name,
        "unit": d.unit,
        "n": str(d.n),
        "mean": fmt_num(d.mean, k),
        "median≈": fmt_num(d.quantile(0.5), k),
        "min": fmt_num(d.min, k),
        "max": fmt_num(d.max, k),
        "band": band,
        "in band": fmt_pct(d.in_band_share),
    }


# --- tables as data -------------------------------------------------------------------------------


def _count_rows(counts: Sequence[CountRow]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = [
        {
            "split": r.split,
            "category": r.category,
            "language": r.language,
            "corpus": r.corpus,
            "dialogues": r.dialogues,
            "hours": fmt_hours(r.seconds),
            "turns": r.turns,
        }
        for r in counts
    ]
    return rows


def subtotals(counts: Sequence[CountRow], key: str) -> list[dict[str, Any]]:
    groups: dict[str, list[CountRow]] = {}
    for r in counts:
        groups.setdefault(str(getattr(r, key)), []).append(r)
    return [
        {
            key: k,
            "dialogues": sum(r.dialogues for r in v),
            "hours": fmt_hours(sum(r.seconds for r in v)),
            "turns": sum(r.turns for r in v),
        }
        for k, v in sorted(groups.items())
    ]


def counts_table(data: ReportData) -> list[dict[str, Any]]:
    """Counts per split × category × language × corpus plus a total row (a Prefect table)."""
    rows = _count_rows(data.counts)
    rows.append(
        {
            "split": "all",
            "category": "all",
            "language": "all",
            "corpus": "all",
            "dialogues": data.total_dialogues,
            "hours": fmt_hours(sum(r.seconds for r in data.counts)),
            "turns": data.total_turns,
        }
    )
    return rows


def rejection_rows(data: ReportData) -> list[dict[str, Any]]:
    return [
        {
            "stage": r.stage,
            "reason": r.reason,
            "count": r.count,
            "corpora": ", ".join(r.corpora),
            "examples": ", ".join(r.examples),
        }
        for r in data.rejections
    ]


def source_rows(s: SourceStats) -> dict[str, Any]:
    def opt(v: Any) -> Any:
        return "–" if v is None else v

    return {
        "corpus": s.label,
        "source dialogues": opt(s.dialogues),
        "source hours": "–" if s.source_hours is None else f"{s.source_hours:.3f}",
        "windows": opt(s.windows),
        "kept": opt(s.kept),
        "kept hours": "–" if s.kept_hours is None else f"{s.kept_hours:.3f}",
        "rejected": opt(s.rejected),
        "FTO mean (ms)": fmt_num(s.fto.mean if s.fto else None),
        "FTO median≈ (ms)": fmt_num(s.fto.quantile(0.5) if s.fto else None),
        **{k.replace("_", " "): v for k, v in sorted(s.overlap_classes.items())},
    }


def _cells(rows: Iterable[DesignRow]) -> tuple[int, float]:
    rows = list(rows)
    return sum(r.dialogues for r in rows), sum(r.seconds for r in rows)


def topic_table(data: ReportData) -> list[dict[str, Any]]:
    """Per language × topic: dialogues and hours of each category side by side.

    HH next to HM shows whether HH ↔ HM matching mirrored the HM topics; the unmapped topic
    (``other``) sorts last.
    """
    cats = sorted({r.category for r in data.design})
    keys = sorted(
        {(r.language, r.topic) for r in data.design},
        key=lambda k: (k[0], k[1] == data.unmapped_topic, k[1]),
    )
    out: list[dict[str, Any]] = []
    for lang, topic in keys:
        row: dict[str, Any] = {"language": lang, "topic": topic or "–"}
        for c in cats:
            n, sec = _cells(r for r in data.design if (r.language, r.topic, r.category) ==
                            (lang, topic, c))  # fmt: skip
            row[f"{c} dialogues"] = n
            row[f"{c} hours"] = fmt_hours(sec)
        out.append(row)
    return out


def system_table(data: ReportData) -> list[dict[str, Any]]:
    """HM dialogues and hours per S2S system × elicitation strategy × language."""
    hm = [r for r in data.design if r.category == "HM"]
    keys = sorted({(r.system, r.strategy, r.language) for r in hm})
    out = []
    for system, strategy, lang in keys:
        n, sec = _cells(r for r in hm if (r.system, r.strategy, r.language) ==
                        (system, strategy, lang))  # fmt: skip
        out.append({"system": system or "–", "strategy": strategy or "–", "language": lang,
                    "dialogues": n, "hours": fmt_hours(sec)})  # fmt: skip
    return out


def backend_table(data: ReportData) -> list[dict[str, Any]]:
    """PH dialogues and hours per TTS backend × language."""
    ph = [r for r in data.design if r.category == "PH"]
    keys = sorted({(r.tts_backend, r.language) for r in ph})
    out = []
    for backend, lang in keys:
        n, sec = _cells(r for r in ph if (r.tts_backend, r.language) == (backend, lang))
        out.append({"TTS backend": backend or "–", "language": lang, "dialogues": n,
                    "hours": fmt_hours(sec)})  # fmt: skip
    return out


def design_target_table(data: ReportData) -> list[dict[str, Any]]:
    """The declared design's cells: count against target and status (``duetflow.design``)."""
    return [
        {
            "kind": c.kind,
            "system / backend": c.system,
            "strategy": c.strategy or "–",
            "language": c.language,
            "target": c.target,
            "dialogues": c.count,
            "status": c.status,
        }
        for c in data.design_cells
    ]


def languages(data: ReportData) -> list[str]:
    return sorted({r.language for r in data.counts})


def licence_table(data: ReportData) -> list[dict[str, Any]]:
    """Rows ``licence, terms, corpora, dialogues, hours`` of the licences the data carries."""
    return [
        {
            "licence": r.licence,
            "terms": r.name,
            "corpora": ", ".join(r.corpora),
            "dialogues": r.dialogues,
            "hours": fmt_hours(r.seconds),
        }
        for r in data.provenance.licences
    ]
