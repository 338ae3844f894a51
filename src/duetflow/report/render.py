"""Turn :class:`ReportData` into a self-contained HTML page, a Markdown dataset card and the
short summary/table that the Prefect flows publish as artifacts.

The page has no scripts and no external resources: styles are inline and figures are base64
PNGs, so it opens offline, from an object store, or attached to a ticket. Every section has a
stable ``id`` (:data:`SECTIONS`) that tests and links rely on.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import yaml

from duetflow.licences import hf_licence
from duetflow.report.collect import CountRow, DesignRow, Distribution, ReportData, SourceStats
from duetflow.report.plots import Plot

#: (id, heading) of every section, in page order.
SECTIONS: tuple[tuple[str, str], ...] = (
    ("overview", "Overview"),
    ("counts", "Counts and hours"),
    ("design", "Turing-test design: topics, systems, TTS backends"),
    ("rejections", "Rejections"),
    ("distributions", "Distributions measured on the rendered dialogues"),
    ("turn-taking", "Turn-taking in the sources (before filtering)"),
    ("ph", "Pseudo-human (PH) synthesis"),
    ("provenance", "Provenance and licences"),
)

_DIST_ORDER = (
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


def _subtotals(counts: Sequence[CountRow], key: str) -> list[dict[str, Any]]:
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


def summary_markdown(data: ReportData) -> str:
    """A short Markdown summary for a Prefect artifact: totals, splits, rejections, gaps."""
    hours = fmt_hours(sum(r.seconds for r in data.counts))
    lines = [
        f"# {data.title}",
        "",
        f"**{data.total_dialogues}** dialogues, **{hours} h**,"
        f" {data.total_turns} turns; **{data.total_rejections}** items rejected.",
        "",
        _md_table(_subtotals(data.counts, "split")),
        "",
        _md_table(_subtotals(data.counts, "category")),
    ]
    if data.rejections:
        top = sorted(data.rejections, key=lambda r: -r.count)[:5]
        lines += ["", "Top rejection reasons: " + ", ".join(f"{r.reason} ({r.count})" for r in top)]
    g = data.distributions["gap_ms"]
    band = f"{g.band[0]:.0f}–{g.band[1]:.0f}" if g.band else "–"
    if g.n:
        lines += [
            "",
            f"Inter-turn gaps: mean {fmt_num(g.mean)} ms, {fmt_pct(g.in_band_share)} within"
            f" {band} ms"
            f" (n={g.n}).",
        ]
    return "\n".join(lines) + "\n"


def _md_cell(v: Any) -> str:
    return str(v).replace("|", "\\|").replace("\n", " ")


def _md_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None) -> str:
    if not rows:
        return "_none_"
    cols = list(columns or rows[0].keys())
    out = ["| " + " | ".join(cols) + " |", "|" + "|".join(" --- " for _ in cols) + "|"]
    out += ["| " + " | ".join(_md_cell(r.get(c, "")) for c in cols) + " |" for r in rows]
    return "\n".join(out)


def _rejection_rows(data: ReportData) -> list[dict[str, Any]]:
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


def _source_rows(s: SourceStats) -> dict[str, Any]:
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


def _languages(data: ReportData) -> list[str]:
    return sorted({r.language for r in data.counts})


# --- HTML --------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:0;
color:#1d2733;background:#f4f6f8;line-height:1.45}
header{background:#1f3b5a;color:#fff;padding:18px 32px}
header h1{margin:0;font-size:1.6em} header p{margin:4px 0 0;opacity:.85}
nav{padding:8px 32px;background:#e3e9ef;font-size:.9em} nav a{margin-right:14px;color:#1f3b5a}
main{max-width:1100px;margin:0 auto;padding:12px 24px 40px}
section{background:#fff;border-radius:8px;box-shadow:0 1px 3px rgba(0,0,0,.08);
padding:14px 22px;margin:18px 0}
h2{margin-top:4px;color:#1f3b5a;border-bottom:2px solid #e3e9ef;padding-bottom:4px}
table{border-collapse:collapse;margin:8px 0 14px;font-size:.88em}
th,td{border:1px solid #d5dde5;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#eef2f6} td.n{text-align:right;font-variant-numeric:tabular-nums}
tr.total td{font-weight:600;background:#f7f9fb}
.kpis{display:flex;flex-wrap:wrap;gap:12px;margin:6px 0}
.kpi{background:#eef2f6;border-radius:6px;padding:8px 14px;min-width:120px}
.kpi b{display:block;font-size:1.5em;color:#1f3b5a}
figure{display:inline-block;margin:6px 12px 10px 0;vertical-align:top;max-width:100%;width:500px}
figure img{max-width:100%;height:auto;border:1px solid #e3e9ef}
figcaption{font-size:.8em;color:#4a5866;max-width:500px}
pre{background:#f7f9fb;border:1px solid #e3e9ef;padding:8px;overflow:auto;max-height:420px;
font-size:.8em}
.note{color:#8a5a00}
"""


def _esc(v: Any) -> str:
    return html.escape(str(v), quote=True)


def _html_table(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str] | None = None,
    total_last: bool = False,
) -> str:
    if not rows:
        return "<p><em>none</em></p>"
    cols = list(columns or rows[0].keys())
    head = "".join(f"<th>{_esc(c)}</th>" for c in cols)
    body = []
    for i, r in enumerate(rows):
        cls = ' class="total"' if total_last and i == len(rows) - 1 else ""
        cells = "".join(
            f'<td class="n">{_esc(r.get(c, ""))}</td>'
            if isinstance(r.get(c), int | float)
            else f"<td>{_esc(r.get(c, ''))}</td>"
            for c in cols
        )
        body.append(f"<tr{cls}>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _figure(p: Plot | None) -> str:
    if p is None:
        return ""
    b64 = base64.b64encode(p.png).decode("ascii")
    return (
        f'<figure id="fig-{_esc(p.name)}"><img alt="{_esc(p.caption)}" '
        f'src="data:image/png;base64,{b64}"><figcaption>{_esc(p.caption)}</figcaption></figure>'
    )


def _section(sid: str, body: Iterable[str]) -> str:
    title = dict(SECTIONS)[sid]
    return f'<section id="{sid}"><h2>{_esc(title)}</h2>{"".join(body)}</section>'


def render_html(data: ReportData, plots: Sequence[Plot]) -> str:
    """The whole report as one HTML document (no scripts, no external resources)."""
    P = {p.name: p for p in plots}
    cats = sorted({r.category for r in data.counts})
    kpis = [
        ("dialogues", str(data.total_dialogues)),
        ("hours", fmt_hours(sum(r.seconds for r in data.counts))),
        ("turns", str(data.total_turns)),
        ("rejected items", str(data.total_rejections)),
        ("categories", ", ".join(cats) or "–"),
        ("languages", ", ".join(_languages(data)) or "–"),
    ]
    overview = [
        '<div class="kpis">'
        + "".join(f'<div class="kpi"><b>{_esc(v)}</b>{_esc(k)}</div>' for k, v in kpis)
        + "</div>",
        "<p>Inputs: "
        + ", ".join(f"{_esc(k)} <code>{_esc(lbl)}</code>" for k, lbl in data.provenance.inputs)
        + "</p>",
    ]
    overview += [f'<p class="note">{_esc(n)}</p>' for n in data.notes]

    counts = [
        "<h3>Per split × category × language × corpus</h3>",
        _html_table(counts_table(data), total_last=True),
        "<h3>Per split</h3>",
        _html_table(_subtotals(data.counts, "split")),
        "<h3>Per category</h3>",
        _html_table(_subtotals(data.counts, "category")),
        _figure(P.get("hours")),
    ]

    unmapped = sum(r.dialogues for r in data.design if r.topic == data.unmapped_topic)
    design = [
        "<p>A Turing-test set compares categories that should differ only in who speaks."
        " Topics are taxonomy topics (each dialogue keeps its source's own label in"
        f" <code>source_topic</code>); {unmapped} dialogue(s) have the unmapped topic"
        f" <code>{_esc(data.unmapped_topic)}</code>.</p>",
        "<h3>Per language × topic: categories side by side</h3>",
        _html_table(topic_table(data)),
        "<h3>HM: per S2S system × strategy</h3>",
        _html_table(system_table(data)),
        "<h3>PH: per TTS backend × language</h3>",
        _html_table(backend_table(data)),
    ]

    rejections = [
        f"<p>{data.total_rejections} item(s) rejected; every rejection is kept in"
        " <code>rejections.parquet</code> with its detail.</p>",
        _html_table(_rejection_rows(data)),
        _figure(P.get("rejections")),
    ]

    d = data.distributions
    dists = [
        "<p>Gaps are measured at speaker changes between floor-holding turns"
        " (backchannels excluded): from the turn rows for every dialogue, and re-measured on"
        f" the audio of a sample of {len(data.audio_sample)} dialogue(s) from the acoustic end"
        " of one speaker's speech to the acoustic start of the other's, both against the floor"
        " of the pause between them (docs/turn-taking.md, <em>Gaps</em>). Floor continuity in"
        " each pause: the step of its level from the first to the second half (a join that"
        " jumps by more than 3 dB is heard), and how far its quietest 20 ms sink under its floor"
        " (noise alone dips 2–4 dB over 20 ms; a hole or a crossfade that loses power dips"
        " deeper)."
        " Loudness: from the manifest for every dialogue, and re-measured (ITU-R BS.1770) on the"
        " same sample.</p>",
        _html_table([dist_row(d[k]) for k in _DIST_ORDER]),
    ]
    dists += [
        _figure(P.get(n))
        for n in (
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
    ]
    if data.audio_errors:
        dists.append(
            '<p class="note">Not measured: ' + _esc("; ".join(data.audio_errors[:10])) + "</p>"
        )

    tt: list[str] = []
    if data.source_stats:
        tt.append(
            "<p>From the process stage's <code>stats.json</code>: floor-transfer offsets at every"
            " speaker change (negative = overlap), listener vocalisations by overlap class, and"
            " each candidate window's speaker-B utterance share — for all source dialogues and"
            " for the windows that were kept.</p>"
        )
        tt.append(_html_table([_source_rows(s) for s in data.source_stats]))
        for i, s in enumerate(data.source_stats):
            tt.append(f"<h3>{_esc(s.label)}</h3>")
            if s.rejected_by_reason:
                tt.append(
                    _html_table(
                        [
                            {"rejection reason": k, "count": v}
                            for k, v in sorted(s.rejected_by_reason.items())
                        ]
                    )
                )
            tt += [_figure(P.get(f"fto_{i}")), _figure(P.get(f"overlaps_{i}"))]
            tt.append(_figure(P.get(f"balance_{i}")))
    else:
        tt.append("<p><em>No source statistics (<code>stats.json</code>) in the inputs.</em></p>")

    ph = data.ph
    phs = [
        f"<p>{ph.dialogues} PH dialogue(s).</p>",
        _html_table([{"backend": k, "dialogues": v} for k, v in ph.backends.items()]),
        _html_table([{"voice cloning": k, "dialogues": v} for k, v in ph.cloning.items()]),
        _html_table([dist_row(ph.similarity)]),
        "<h3>Synthesis failures</h3>",
        _html_table([{"reason": k, "count": v} for k, v in ph.failures.items()]),
        _figure(P.get("ph_similarity")),
    ]

    pv = data.provenance
    prov = [
        _html_table(
            [
                {"field": "code version", "value": pv.code_version},
                {
                    "field": "code versions in data",
                    "value": ", ".join(pv.code_versions_in_data) or "–",
                },
                {"field": "config hash", "value": pv.config_hash},
                {"field": "release", "value": pv.release_id or "–"},
                *(
                    {
                        "field": f"release: {k}",
                        "value": v if not isinstance(v, dict | list) else str(v),
                    }
                    for k, v in sorted(pv.release_meta.items())
                ),
            ]
        ),
        "<h3>Sources and licences</h3>",
        _html_table([{"source": k, "name": n, "licence": lic} for k, n, lic in pv.sources]),
        _html_table(licence_table(data)),
        "".join(f"<p>{_esc(t)}</p>" for t in pv.terms),
        "<h3>Configuration</h3>",
        f"<pre>{_esc(yaml.safe_dump(dict(pv.config), sort_keys=True, allow_unicode=True))}</pre>",
    ]

    nav = "".join(f'<a href="#{sid}">{_esc(t)}</a>' for sid, t in SECTIONS)
    bodies = {
        "overview": overview,
        "counts": counts,
        "design": design,
        "rejections": rejections,
        "distributions": dists,
        "turn-taking": tt,
        "ph": phs,
        "provenance": prov,
    }
    sections = "".join(_section(sid, bodies[sid]) for sid, _ in SECTIONS)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_esc(data.title)}</title><style>{_CSS}</style></head><body>"
        f"<header><h1>{_esc(data.title)}</h1><p>duetflow dataset report · code"
        f" {_esc(pv.code_version)} · config {_esc(pv.config_hash)}</p></header>"
        f"<nav>{nav}</nav><main>{sections}</main></body></html>\n"
    )


# --- Markdown card -----------------------------------------------------------------------


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


def render_card(data: ReportData, plot_files: Mapping[str, str]) -> str:
    """A Markdown dataset card; ``plot_files`` maps plot names to paths relative to the card."""

    def img(name: str) -> list[str]:
        return [f"![{name}]({plot_files[name]})", ""] if name in plot_files else []

    pv = data.provenance
    front = {
        "pretty_name": data.title,
        "language": _languages(data),
        "license": hf_licence(r.licence for r in pv.licences),
        "task_categories": ["audio-to-audio", "automatic-speech-recognition"],
        "tags": ["spoken-dialogue", "two-speaker", "turn-taking", "duetflow"],
    }
    lines = [
        "---",
        yaml.safe_dump(front, sort_keys=True, allow_unicode=True).rstrip(),
        "---",
        "",
        f"# {data.title}",
        "",
        "Two-speaker dialogue audio for spoken-dialogue systems: human-human (HH),"
        " human-machine (HM) and pseudo-human voice-cloned TTS (PH) dialogues of 20–60 s,"
        " inter-turn gaps re-timed and both speakers loudness-balanced.",
        "",
        "- Categories: "
        + (
            ", ".join(
                f"{r['category']} {r['dialogues']}" for r in _subtotals(data.counts, "category")
            )
            or "none"
        ),
        f"- Dialogues: **{data.total_dialogues}**",
        f"- Hours: **{fmt_hours(sum(r.seconds for r in data.counts))}**",
        f"- Turns: **{data.total_turns}**",
        f"- Rejected items: **{data.total_rejections}**",
        "",
        "## Counts and hours",
        "",
        _md_table(counts_table(data)),
        "",
        _md_table(_subtotals(data.counts, "split")),
        "",
        _md_table(_subtotals(data.counts, "category")),
        "",
        *img("hours"),
        "## Turing-test design: topics, systems, TTS backends",
        "",
        "Per language × topic, categories side by side:",
        "",
        _md_table(topic_table(data)),
        "",
        "HM per S2S system × strategy:",
        "",
        _md_table(system_table(data)),
        "",
        "PH per TTS backend × language:",
        "",
        _md_table(backend_table(data)),
        "",
        "## Rejections",
        "",
        _md_table(_rejection_rows(data)),
        "",
        *img("rejections"),
        "## Distributions",
        "",
        f"Audio re-measured on a sample of {len(data.audio_sample)} dialogue(s).",
        "",
        _md_table([dist_row(data.distributions[k]) for k in _DIST_ORDER]),
        "",
    ]
    for n in (
        "gaps",
        "gaps_audio",
        "floor_continuity",
        "loudness",
        "loudness_diff",
        "durations",
        "turns",
        "utterance_share",
    ):
        lines += img(n)
    lines += ["## Turn-taking in the sources (before filtering)", ""]
    if data.source_stats:
        lines += [_md_table([_source_rows(s) for s in data.source_stats]), ""]
        for i, _ in enumerate(data.source_stats):
            lines += img(f"fto_{i}") + img(f"overlaps_{i}") + img(f"balance_{i}")
    else:
        lines += ["_No source statistics in the inputs._", ""]
    ph = data.ph
    lines += [
        "## Pseudo-human (PH) synthesis",
        "",
        f"{ph.dialogues} PH dialogue(s).",
        "",
        _md_table([{"backend": k, "dialogues": v} for k, v in ph.backends.items()]),
        "",
        _md_table([dist_row(ph.similarity)]),
        "",
        "Synthesis failures:",
        "",
        _md_table([{"reason": k, "count": v} for k, v in ph.failures.items()]),
        "",
        *img("ph_similarity"),
        "## Provenance and licences",
        "",
        f"- Code version: `{pv.code_version}`",
        f"- Config hash: `{pv.config_hash}`",
        f"- Release: `{pv.release_id or '-'}`",
        "- Inputs: " + ", ".join(f"{k} `{lbl}`" for k, lbl in pv.inputs),
        "",
        _md_table([{"source": k, "name": n, "licence": lic} for k, n, lic in pv.sources]),
        "",
        "Licences the dialogues carry (each row's `licence` column):",
        "",
        _md_table(licence_table(data)),
        "",
        *(f"- {t}" for t in pv.terms),
        "",
        "<details><summary>Configuration</summary>",
        "",
        "```yaml",
        yaml.safe_dump(dict(pv.config), sort_keys=True, allow_unicode=True).rstrip(),
        "```",
        "",
        "</details>",
        "",
    ]
    return "\n".join(lines)
