"""Dataset report: statistics, plots, a self-contained HTML page and a Markdown dataset card.

``build_report(source, out_dir)`` reads rendered work directories or a published release and
writes ``out_dir/index.html`` (one file, figures embedded), ``out_dir/README.md`` (the dataset
card, figures under ``plots/``) and ``out_dir/report.json`` (every number, machine-readable).
:func:`summary_markdown` and :func:`counts_table` give the Prefect flows their artifacts from
the same :class:`ReportData`, so the UI, the page and the card never disagree.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from duetflow.config import RunConfig
from duetflow.report.card import render_card, summary_markdown
from duetflow.report.collect import collect
from duetflow.report.data import (
    DEFAULT_AUDIO_SAMPLE,
    CountRow,
    Distribution,
    RejectionRow,
    ReportData,
)
from duetflow.report.html import SECTIONS, render_html
from duetflow.report.plots import Plot, all_plots
from duetflow.report.source_names import LICENCES
from duetflow.report.sources import ReportInput, open_inputs
from duetflow.report.tables import counts_table

if TYPE_CHECKING:
    from duetflow.fairness.audit import AuditResult
    from duetflow.release.staging import StagedRelease

log = logging.getLogger(__name__)

HTML_NAME = "index.html"
CARD_NAME = "README.md"
JSON_NAME = "report.json"
PLOTS_DIR = "plots"

__all__ = [
    "LICENCES",
    "SECTIONS",
    "CountRow",
    "Distribution",
    "RejectionRow",
    "ReportData",
    "ReportInput",
    "ReportPaths",
    "build_report",
    "collect_report",
    "counts_table",
    "release_report",
    "summary_markdown",
]


@dataclass(frozen=True)
class ReportPaths:
    """What :func:`build_report` wrote, plus the data it wrote it from."""

    html: Path
    markdown: Path
    plots: tuple[Path, ...]
    json: Path
    data: ReportData


def _write(path: Path, data: bytes) -> None:
    """Atomic write (temp + rename), so a reader never sees half a report."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def collect_report(
    source: Path | str | Sequence[Path | str],
    config: RunConfig | None = None,
    *,
    audio_sample: int = DEFAULT_AUDIO_SAMPLE,
    title: str | None = None,
    splits: Mapping[str, str] | None = None,
    release_id: str | None = None,
    cue_audit: AuditResult | None = None,
) -> ReportData:
    """Only the numbers (no files): for artifacts and checks."""
    with open_inputs(source, config) as inputs:
        return collect(
            inputs,
            config,
            audio_sample=audio_sample,
            title=title,
            splits=splits,
            release_id=release_id,
            cue_audit=cue_audit,
        )


def build_report(
    source: Path | str | Sequence[Path | str],
    out_dir: Path,
    config: RunConfig | None = None,
    *,
    audio_sample: int = DEFAULT_AUDIO_SAMPLE,
    title: str | None = None,
    splits: Mapping[str, str] | None = None,
    release_id: str | None = None,
    cue_audit: AuditResult | None = None,
) -> ReportPaths:
    """Write the HTML report, the Markdown card, the plots and report.json into ``out_dir``.

    ``source``: a rendered work directory, a folder of several (one per corpus + PH), a list of
    them, a local release folder ``<store>/releases/<id>``, a store root (latest release) or a
    store URI. ``config`` gives the configured bands (gap window, balance, loudness tolerance)
    and the sampling seed; by default the release's own config, else the defaults.
    ``audio_sample`` dialogues are re-measured from their audio (VAD gaps, loudness).
    ``splits`` (dialogue id → split) and ``release_id`` let publish report the release it is
    about to write from the work directories; ``cue_audit`` is its cue audit (docs/fairness.md).
    Same inputs and config give byte-identical files.
    """
    data = collect_report(
        source,
        config,
        audio_sample=audio_sample,
        title=title,
        splits=splits,
        release_id=release_id,
        cue_audit=cue_audit,
    )
    return write_report(data, Path(out_dir))


def release_report(staged: StagedRelease) -> Path:
    """The report of a staged release (a :data:`~duetflow.release.staging.ReportMaker`).

    Drawn from the release's work directories with its own splits and id, into the staging
    folder; returns the folder publish uploads as ``releases/<id>/report/``.
    """
    out = staged.staging / "report"
    build_report(
        list(staged.workdirs),
        out,
        staged.config,
        splits=staged.splits,
        release_id=staged.release_id,
        cue_audit=staged.cue_audit,
    )
    return out


def write_report(data: ReportData, out_dir: Path) -> ReportPaths:
    """Render already-collected :class:`ReportData` into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    plot_dir = out_dir / PLOTS_DIR
    plot_dir.mkdir(exist_ok=True)
    for old in plot_dir.glob("*.png"):
        old.unlink()
    plots: list[Plot] = all_plots(data)
    plot_paths: list[Path] = []
    for p in plots:
        path = plot_dir / f"{p.name}.png"
        _write(path, p.png)
        plot_paths.append(path)
    html_path = out_dir / HTML_NAME
    _write(html_path, render_html(data, plots).encode("utf-8"))
    card_path = out_dir / CARD_NAME
    rel = {p.name: f"{PLOTS_DIR}/{p.name}.png" for p in plots}
    _write(card_path, render_card(data, rel).encode("utf-8"))
    json_path = out_dir / JSON_NAME
    blob = json.dumps(data.to_dict(), sort_keys=True, indent=1, ensure_ascii=False, default=str)
    _write(json_path, (blob + "\n").encode("utf-8"))
    log.info("report written to %s (%d plots)", out_dir, len(plots))
    return ReportPaths(html_path, card_path, tuple(plot_paths), json_path, data)
