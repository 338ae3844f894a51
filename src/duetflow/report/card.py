"""The Markdown dataset card (``README.md`` with Hugging Face front matter) and the short
Markdown summary the Prefect flows publish as an artifact.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import yaml

from duetflow.licences import hf_licence
from duetflow.report.data import PhStats, ReportData
from duetflow.report.parity import d_table, pair_table, verdict_lines
from duetflow.report.quality import FIGURES as DNSMOS_FIGURES
from duetflow.report.quality import dnsmos_intro, dnsmos_table
from duetflow.report.source_names import LICENCES
from duetflow.report.tables import (
    DIST_ORDER,
    DISTRIBUTION_FIGURES,
    backend_table,
    counts_table,
    design_target_table,
    dist_row,
    fmt_hours,
    fmt_num,
    fmt_pct,
    languages,
    licence_table,
    rejection_rows,
    source_rows,
    subtotals,
    system_table,
    topic_table,
)


def _design_targets(data: ReportData) -> list[str]:
    """The declared design's cells and problems (nothing when no design is declared)."""
    if not data.design_cells:
        return []
    problems = [f"- {p}" for p in data.design_problems] or [
        "Every cell of the design holds its target."
    ]
    return [
        "Declared design, every cell against its target:",
        "",
        _md_table(design_target_table(data)),
        "",
        *problems,
        "",
    ]


def summary_markdown(data: ReportData) -> str:
    """A short Markdown summary for a Prefect artifact: totals, splits, rejections, gaps."""
    hours = fmt_hours(sum(r.seconds for r in data.counts))
    lines = [
        f"# {md_text(data.title)}",
        "",
        f"**{data.total_dialogues}** dialogues, **{hours} h**,"
        f" {data.total_turns} turns; **{data.total_rejections}** items rejected.",
        "",
        _md_table(subtotals(data.counts, "split")),
        "",
        _md_table(subtotals(data.counts, "category")),
    ]
    if data.rejections:
        top = sorted(data.rejections, key=lambda r: -r.count)[:5]
        lines += [
            "",
            "Top rejection reasons: " + ", ".join(f"{md_text(r.reason)} ({r.count})" for r in top),
        ]
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


#: What Markdown (CommonMark + GFM tables, as Hugging Face renders a card) would act on inside a
#: line: raw HTML (``<script>``, ``<img onerror=...>``), entities, links and images, code spans,
#: emphasis by ``*``, table cells. ``_`` is left alone (intraword, as in ids, it does nothing).
_MD_ENTITIES = {"<": "&lt;", ">": "&gt;", "&": "&amp;", '"': "&quot;"}
_MD_BACKSLASHED = frozenset("\\`*[]|~$")


def md_text(v: Any) -> str:
    """``v`` as inert Markdown text: shown as written, never markup (one line)."""
    out = []
    for ch in str(v):
        if ch in _MD_ENTITIES:
            out.append(_MD_ENTITIES[ch])
        elif ch in _MD_BACKSLASHED:
            out.append("\\" + ch)
        elif ch in "\r\n\t" or (ord(ch) < 32 or 0x7F <= ord(ch) < 0xA0):
            out.append(" ")
        else:
            out.append(ch)
    return "".join(out)


def _md_cell(v: Any) -> str:
    return md_text(v)


def _fenced(text: str, info: str) -> list[str]:
    """``text`` in a code fence longer than any backtick run inside it (it cannot close it)."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + info, text, fence]


def _md_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None) -> str:
    if not rows:
        return "_none_"
    cols = list(columns or rows[0].keys())
    out = ["| " + " | ".join(cols) + " |", "|" + "|".join(" --- " for _ in cols) + "|"]
    out += ["| " + " | ".join(_md_cell(r.get(c, "")) for c in cols) + " |" for r in rows]
    return "\n".join(out)


def _backend_name(key: str) -> str:
    return LICENCES[key][0] if key in LICENCES else key


def ph_wording(ph: PhStats) -> str:
    """What the card calls the PH dialogues, from what the release's PH provenance says:
    "voice-cloned" only for dialogues a cloning backend made, else the backends by name
    (issue 27: the default eSpeak NG clones nothing)."""
    if ph.dialogues == 0:
        return "no pseudo-human (PH)"
    backends = ", ".join(f"{_backend_name(k)}: {n}" for k, n in ph.backends.items())
    cloned = ph.cloning.get("cloned", 0)
    if cloned == ph.dialogues:
        return f"pseudo-human voice-cloned TTS (PH; {backends})"
    if cloned == 0:
        return f"pseudo-human TTS (PH, not voice-cloned; {backends})"
    return f"pseudo-human TTS (PH; {cloned} of {ph.dialogues} voice-cloned; {backends})"


def _parity(data: ReportData, img: Callable[[str], list[str]]) -> list[str]:
    """The card's cue-parity section (docs/fairness.md)."""
    audit = data.cue_audit
    verdict = verdict_lines(audit)
    lines = [
        "## Cue parity",
        "",
        "Can what the pipeline controls (bandwidth, sample rate, pause floor, lead-in and tail,"
        " gaps, overlaps, loudness, peak, DC, duration, turn and speaking rate) tell the"
        " categories apart? Per language and category pair: a leave-one-out nearest-centroid"
        " classifier on these cues and the cues with the largest Cohen's d.",
        "",
        f"**{verdict[0]}**",
        "",
        *(f"- {line}" for line in verdict[1:]),
    ]
    if audit is not None:
        lines += [
            "",
            _md_table(pair_table(audit)),
            "",
            "Cohen's d per cue and pair (* separates perfectly; conv.: not gated between HH"
            " and HM):",
            "",
            _md_table(d_table(audit)),
            "",
            *img("cues"),
        ]
    return [*lines, ""]


def render_card(data: ReportData, plot_files: Mapping[str, str]) -> str:
    """A Markdown dataset card; ``plot_files`` maps plot names to paths relative to the card."""

    def img(name: str) -> list[str]:
        if name not in plot_files:
            return []
        return [f"![{name}]({plot_files[name]})", ""]  # our own plot names and paths

    pv = data.provenance
    front = {
        "pretty_name": data.title,
        "language": languages(data),
        "license": hf_licence(r.licence for r in pv.licences),
        "task_categories": ["audio-to-audio", "automatic-speech-recognition"],
        "tags": ["spoken-dialogue", "two-speaker", "turn-taking", "duetflow"],
    }
    lines = [
        "---",
        yaml.safe_dump(front, sort_keys=True, allow_unicode=True).rstrip(),
        "---",
        "",
        f"# {md_text(data.title)}",
        "",
        "Two-speaker dialogue audio for spoken-dialogue systems: human-human (HH),"
        f" human-machine (HM) and {ph_wording(data.ph)} dialogues of 20–60 s,"
        " inter-turn gaps re-timed and both speakers loudness-balanced.",
        "",
        "- Categories: "
        + (
            ", ".join(
                f"{md_text(r['category'])} {r['dialogues']}"
                for r in subtotals(data.counts, "category")
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
        _md_table(subtotals(data.counts, "split")),
        "",
        _md_table(subtotals(data.counts, "category")),
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
        *_design_targets(data),
        "## Rejections",
        "",
        _md_table(rejection_rows(data)),
        "",
        *img("rejections"),
        "## Distributions",
        "",
        f"Audio re-measured on a sample of {len(data.audio_sample)} dialogue(s).",
        "",
        _md_table([dist_row(data.distributions[k]) for k in DIST_ORDER]),
        "",
    ]
    for n in DISTRIBUTION_FIGURES:
        lines += img(n)
    lines += _parity(data, img)
    lines += ["## Speech quality (DNSMOS)", "", md_text(dnsmos_intro(data)), ""]
    if data.dnsmos:
        lines += [_md_table(dnsmos_table(data)), ""]
    for n in DNSMOS_FIGURES:
        lines += img(n)
    lines += ["## Turn-taking in the sources (before filtering)", ""]
    if data.source_stats:
        lines += [_md_table([source_rows(s) for s in data.source_stats]), ""]
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
        _md_table([{"voice cloning": k, "dialogues": v} for k, v in ph.cloning.items()]),
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
        f"- Code version: {md_text(pv.code_version)}",
        f"- Config hash: {md_text(pv.config_hash)}",
        f"- Release: {md_text(pv.release_id or '-')}",
        "- Inputs: " + ", ".join(f"{md_text(k)} {md_text(lbl)}" for k, lbl in pv.inputs),
        "",
        _md_table([{"source": k, "name": n, "licence": lic} for k, n, lic in pv.sources]),
        "",
        "Licences the dialogues carry (each row's `licence` column):",
        "",
        _md_table(licence_table(data)),
        "",
        *(f"- {md_text(t)}" for t in pv.terms),
        "",
        "<details><summary>Configuration</summary>",
        "",
        *_fenced(
            yaml.safe_dump(dict(pv.config), sort_keys=True, allow_unicode=True).rstrip(), "yaml"
        ),
        "",
        "</details>",
        "",
    ]
    return "\n".join(lines)
