"""Turn :class:`ReportData` into a self-contained HTML page.

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

from duetflow.report.data import ReportData
from duetflow.report.parity import d_table, pair_table, verdict_lines
from duetflow.report.plots import Plot
from duetflow.report.quality import FIGURES as DNSMOS_FIGURES
from duetflow.report.quality import dnsmos_intro, dnsmos_table
from duetflow.report.tables import (
    DIST_ORDER,
    DISTRIBUTION_FIGURES,
    backend_table,
    counts_table,
    design_target_table,
    dist_row,
    fmt_hours,
    languages,
    licence_table,
    rejection_rows,
    source_rows,
    subtotals,
    system_table,
    topic_table,
)

#: (id, heading) of every section, in page order.
SECTIONS: tuple[tuple[str, str], ...] = (
    ("overview", "Overview"),
    ("counts", "Counts and hours"),
    ("design", "Turing-test design: topics, systems, TTS backends"),
    ("rejections", "Rejections"),
    ("distributions", "Distributions measured on the rendered dialogues"),
    ("cue-parity", "Cue parity: what the pipeline controls, per category pair"),
    ("quality", "Speech quality (DNSMOS) by category and corpus"),
    ("turn-taking", "Turn-taking in the sources (before filtering)"),
    ("ph", "Pseudo-human (PH) synthesis"),
    ("provenance", "Provenance and licences"),
)

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


def _parity(data: ReportData, plots: Mapping[str, Plot]) -> list[str]:
    """The cue-parity section (docs/fairness.md)."""
    audit = data.cue_audit
    body = [
        "<p>Per language and category pair: a leave-one-out nearest-centroid classifier on the"
        " cues the pipeline controls (accuracy and AUC with 95 % intervals, permutation p),"
        " the cues with the largest standardised difference (Cohen's d), and the gate's"
        " verdict. A listener should be able to tell the categories apart by the voices and"
        " the words only.</p>"
    ]
    lines = verdict_lines(audit)
    body.append(f"<p><b>{_esc(lines[0])}</b></p>")
    body += [f'<p class="note">{_esc(line)}</p>' for line in lines[1:]]
    if audit is not None:
        body += [
            _html_table(pair_table(audit)),
            "<h3>Cohen's d per cue and pair</h3>",
            _html_table(d_table(audit)),
            _figure(plots.get("cues")),
        ]
    return body


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
        ("languages", ", ".join(languages(data)) or "–"),
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
        _html_table(subtotals(data.counts, "split")),
        "<h3>Per category</h3>",
        _html_table(subtotals(data.counts, "category")),
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
    if data.design_cells:  # the declared design: every cell against its target
        design += [
            "<h3>Declared design: every cell against its target</h3>",
            _html_table(design_target_table(data)),
            "".join(f"<p>{_esc(p)}</p>" for p in data.design_problems)
            or "<p>Every cell of the design holds its target.</p>",
        ]

    rejections = [
        f"<p>{data.total_rejections} item(s) rejected; every rejection is kept in"
        " <code>rejections.parquet</code> with its detail.</p>",
        _html_table(rejection_rows(data)),
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
        _html_table([dist_row(d[k]) for k in DIST_ORDER]),
    ]
    dists += [_figure(P.get(n)) for n in DISTRIBUTION_FIGURES]
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
        tt.append(_html_table([source_rows(s) for s in data.source_stats]))
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
        "cue-parity": _parity(data, P),
        "quality": [
            f"<p>{_esc(dnsmos_intro(data))}</p>",
            _html_table(dnsmos_table(data)),
            *(_figure(P.get(n)) for n in DNSMOS_FIGURES),
        ],
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
