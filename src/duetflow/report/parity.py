"""The report's cue-parity section: the per-pair table, d per cue, the verdict, one figure.

The audit comes from publish (``StagedRelease.cue_audit``, measured once for the gate and the
report) or, for a report of a local release folder, from its ``cues/cues.parquet`` (compared
again: no audio is read). Without either the section says that the audit was off.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from duetflow.config import RunConfig
from duetflow.fairness.audit import AuditResult
from duetflow.fairness.cues import CUE_BY_NAME, CUES
from duetflow.fairness.gate import audit
from duetflow.fairness.table import CUES_FILE, cue_rows, pair_rows, read_cues
from duetflow.report.plots import Plot, _png
from duetflow.report.sources import ReportInput

#: The folder of a release holding the cue table (``releases/<id>/cues/``).
CUES_DIR = "cues"
_COLORS = {"HH": "#3b6ea8", "HM": "#d9822b", "PH": "#3a9d5d"}


def release_audit(inputs: Sequence[ReportInput], config: RunConfig) -> AuditResult | None:
    """The audit of a local release folder from its ``cues/cues.parquet`` (None: none there)."""
    for inp in inputs:
        if inp.kind != "release":
            continue
        path = Path(inp.label) / CUES_DIR / CUES_FILE
        if path.is_file():
            rows = tuple(read_cues(path))
            mode = config.release.cue_parity if config.release.cue_parity != "off" else "warn"
            pairs, verdict = audit(rows, config.release.cue_thresholds, seed=config.seed, mode=mode)
            return AuditResult(rows, pairs, verdict)
    return None


def pair_table(result: AuditResult) -> list[dict[str, str]]:
    """One row per language and category pair (classifier, top cues, judged)."""
    return pair_rows(result.pairs)


def d_table(result: AuditResult) -> list[dict[str, str]]:
    """One row per cue: its d in every pair (* separates perfectly)."""
    return cue_rows(result.pairs)


def verdict_lines(result: AuditResult | None) -> list[str]:
    """The gate's verdict as sentences (the audit off: one sentence saying so)."""
    if result is None:
        return [
            "No cue audit in these inputs (release.cue_parity: off, or work directories): "
            "nothing here checks that the pipeline's cues do not tell the categories apart; "
            "run `duetflow audit` (docs/fairness.md)."
        ]
    v = result.verdict
    return [v.headline(), *v.lines(), *(f"not measured: {e}" for e in result.errors)]


def cue_plot(result: AuditResult | None) -> Plot | None:
    """One panel per cue: every dialogue's value per language and category, means marked."""
    if result is None or not result.rows:
        return None
    groups = sorted({(r.language, r.category) for r in result.rows})
    cols = 3
    rows_n = -(-len(CUES) // cols)
    width, height = 11.0, 1.9 * rows_n + 0.4
    fig = Figure(figsize=(width, height), dpi=80)
    FigureCanvasAgg(fig)
    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.03, top=0.98, hspace=0.75, wspace=0.3)
    for i, cue in enumerate(CUES):
        ax = fig.add_subplot(rows_n, cols, i + 1)
        for g, (lang, cat) in enumerate(groups):
            vals = np.array(
                [r.value(cue.name) for r in result.rows if (r.language, r.category) == (lang, cat)]
            )
            vals = vals[np.isfinite(vals)]
            if not vals.size:
                continue
            jitter = (np.arange(vals.size) % 7 - 3) * 0.05
            ax.scatter(g + jitter, vals, s=4, color=_COLORS.get(cat, "#777777"), alpha=0.6)
            ax.hlines(vals.mean(), g - 0.3, g + 0.3, color="black", linewidth=1.2)
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels([f"{lang} {cat}" for lang, cat in groups], fontsize=7)
        ax.set_title(f"{cue.name} ({CUE_BY_NAME[cue.name].unit})", fontsize=8)
        ax.tick_params(axis="y", labelsize=7)
    return Plot(
        "cues",
        "pipeline-controlled cues per dialogue, by language and category (bar: mean)",
        _png(fig),
    )
