"""A game's score as a Markdown table, JSON and an HTML page with plots (``score.*``).

Plots are drawn with matplotlib's object API on the Agg canvas (no pyplot, no display) and
saved without software/date metadata: the same score gives the same bytes.
"""

from __future__ import annotations

import html
import io
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from duetflow.game.score import GROUPINGS, GameScore, RateRow

_HEADER = (
    "| grouping | group | judgments | judged human | rate | 95 % CI | accuracy "
    "| accuracy 95 % CI |",
    "| --- | --- | ---: | ---: | ---: | --- | ---: | --- |",
)


def _pct(x: float) -> str:
    return "–" if math.isnan(x) else f"{100 * x:.1f} %"


def _ci(ci: tuple[float, float]) -> str:
    lo, hi = ci
    return "–" if math.isnan(lo) else f"{100 * lo:.1f}–{100 * hi:.1f} %"


def _line(r: RateRow) -> str:
    return (
        f"| {r.grouping} | {r.group} | {r.judgments} | {r.judged_human} | {_pct(r.rate)} | "
        f"{_ci(r.interval)} | {_pct(r.accuracy)} | {_ci(r.accuracy_interval)} |"
    )


def score_markdown(score: GameScore) -> str:
    """The rate table, the judges' accuracy and the counts, as Markdown."""
    lines = [
        "# Turing-test game: score",
        "",
        f"Judgments scored: {score.kept}; rejected: {len(score.rejected)}; "
        f"items nobody judged: {score.unjudged_items}.",
        "",
        f"Overall judge accuracy: {_pct(score.overall.accuracy)} "
        f"(95 % CI {_ci(score.overall.accuracy_interval)}, {score.overall.judgments} judgments).",
        "",
        "## Rate judged human",
        "",
        *_HEADER,
        *(_line(r) for r in score.rates),
        "",
        "## Judges",
        "",
        *_HEADER,
        *(_line(r) for r in score.judges),
    ]
    if score.rejected:
        lines += [
            "",
            "## Rejected judgments",
            "",
            "| line | reason | detail |",
            "| ---: | --- | --- |",
        ]
        lines += [f"| {r.line} | {r.reason} | {r.detail} |" for r in score.rejected]
    return "\n".join(lines) + "\n"


def _row_json(r: RateRow) -> dict[str, Any]:
    def num(x: float) -> float | None:
        return None if math.isnan(x) else round(x, 6)

    lo, hi = r.interval
    alo, ahi = r.accuracy_interval
    return {
        "grouping": r.grouping,
        "group": r.group,
        "judgments": r.judgments,
        "judged_human": r.judged_human,
        "rate": num(r.rate),
        "ci95": [num(lo), num(hi)],
        "correct": r.correct,
        "accuracy": num(r.accuracy),
        "accuracy_ci95": [num(alo), num(ahi)],
        "mean_confidence": r.mean_confidence,
    }


def score_json(score: GameScore) -> dict[str, Any]:
    return {
        "kept": score.kept,
        "rejected": [
            {"line": r.line, "reason": r.reason, "detail": r.detail} for r in score.rejected
        ],
        "unjudged_items": score.unjudged_items,
        "overall": _row_json(score.overall),
        "rates": [_row_json(r) for r in score.rates],
        "judges": [_row_json(r) for r in score.judges],
    }


def rate_plot(rows: Sequence[RateRow], title: str, *, accuracy: bool = False) -> bytes:
    """Bars of the rate judged human (or the accuracy) with their Wilson intervals, as PNG."""
    width = max(4.0, 0.9 * len(rows) + 1.5)
    fig = Figure(figsize=(width, 3.0), dpi=100)
    FigureCanvasAgg(fig)
    fig.subplots_adjust(left=0.8 / width, right=1 - 0.2 / width, bottom=0.3, top=0.88)
    ax = fig.add_subplot()
    values = [r.accuracy if accuracy else r.rate for r in rows]
    cis = [r.accuracy_interval if accuracy else r.interval for r in rows]
    lower = [max(0.0, v - lo) for v, (lo, _) in zip(values, cis, strict=True)]
    upper = [max(0.0, hi - v) for v, (_, hi) in zip(values, cis, strict=True)]
    xs = list(range(len(rows)))
    ax.bar(xs, values, color="#3b6ea8", yerr=[lower, upper], capsize=4)
    ax.set_xticks(xs, [r.group for r in rows], rotation=20, fontsize=8)
    ax.set_ylim(0, 1)
    ax.axhline(0.5, color="#999999", linewidth=0.8, linestyle="--")
    ax.set_ylabel("accuracy" if accuracy else "judged human")
    ax.set_title(title, fontsize=9)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def _html_table(rows: Sequence[RateRow]) -> str:
    head = "".join(f"<th>{html.escape(h.strip())}</th>" for h in _HEADER[0].strip("|").split("|"))
    cells = [
        [
            r.grouping,
            r.group,
            str(r.judgments),
            str(r.judged_human),
            _pct(r.rate),
            _ci(r.interval),
            _pct(r.accuracy),
            _ci(r.accuracy_interval),
        ]
        for r in rows
    ]
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in cells
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def write_scoresheet(score: GameScore, out: str | Path) -> Path:
    """Write ``score.md``, ``score.json``, ``index.html`` and ``plots/*.png`` into ``out``."""
    dest = Path(out)
    (dest / "plots").mkdir(parents=True, exist_ok=True)
    md = score_markdown(score)
    (dest / "score.md").write_text(md, encoding="utf-8")
    (dest / "score.json").write_text(json.dumps(score_json(score), indent=2) + "\n")
    figures: list[tuple[str, str]] = []
    for i, (name, _) in enumerate(GROUPINGS):
        rows = [r for r in score.rates if r.grouping == name]
        if rows:
            stem = f"{i:02d}-rate-by-{name.replace(' ', '-').replace('×', 'x')}.png"
            (dest / "plots" / stem).write_bytes(rate_plot(rows, f"judged human by {name}"))
            figures.append((stem, f"Rate judged human by {name} (95 % Wilson intervals)"))
    if score.judges:
        stem = "judges-accuracy.png"
        (dest / "plots" / stem).write_bytes(
            rate_plot(score.judges, "accuracy by judge", accuracy=True)
        )
        figures.append((stem, "Accuracy per judge (95 % Wilson intervals)"))
    body = "".join(
        f'<figure><img src="plots/{html.escape(s)}" alt="{html.escape(c)}">'
        f"<figcaption>{html.escape(c)}</figcaption></figure>"
        for s, c in figures
    )
    summary = (
        f"<p>Judgments scored: {score.kept}; rejected: {len(score.rejected)}; items nobody "
        f"judged: {score.unjudged_items}. Overall judge accuracy: "
        f"{_pct(score.overall.accuracy)} (95 % CI {_ci(score.overall.accuracy_interval)}).</p>"
    )
    page = (
        "<!doctype html><html><head><meta charset='utf-8'><title>Turing-test game: score</title>"
        "<style>td,th{padding:2px 8px;border-bottom:1px solid #ddd}</style></head><body>"
        "<h1>Turing-test game: score</h1>"
        + summary
        + "<h2>Rate judged human</h2>"
        + _html_table(score.rates)
        + "<h2>Judges</h2>"
        + _html_table(score.judges)
        + body
        + "</body></html>\n"
    )
    (dest / "index.html").write_text(page, encoding="utf-8")
    return dest
