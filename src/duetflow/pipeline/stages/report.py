"""The report stage: the release's report, drawn from the staged release while it publishes.

The work is :mod:`duetflow.report` (the stage's entry module). It has no steps of its own in
the run's loop: the publish stage hands :func:`cached_report` to
:func:`duetflow.release.publish.publish` (``report=``), which calls it with the staged release
(its splits and id), so :mod:`duetflow.release` never imports the report. Cached by the
release's tables, id and split plan (:func:`report_key`) under
``<workdir>/cache/report/<key>/report`` and copied to ``<workdir>/report``.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from duetflow.config import RunConfig
from duetflow.hashing import files_fingerprint, text_digest
from duetflow.pipeline.cache import StepOutcome, build_cached, cache_dir
from duetflow.pipeline.stage import CONTENT_SECTIONS, StageSpec
from duetflow.records import convert, manifest

if TYPE_CHECKING:
    from duetflow.release.staging import ReportMaker, StagedRelease


def report_key(staged: StagedRelease) -> str:
    """Key of a release's report: its work directories' tables, its id and its split plan."""
    dirs = staged.workdirs
    names = (manifest.DIALOGUES, manifest.TURNS, manifest.REJECTIONS, "stats.json")
    fp = files_fingerprint(d / n for d in dirs for n in names)
    splits = text_digest(convert.dumps(sorted(staged.splits.items())))
    return STAGE.key(staged.config, fp, staged.release_id, splits, *(d.name for d in dirs))


def cached_report(config: RunConfig, done: list[StepOutcome]) -> ReportMaker:
    """A :data:`~duetflow.release.staging.ReportMaker` that reuses a finished report.

    The report is drawn from the staged release (its splits and id) into
    ``<workdir>/cache/report/<key>/report``; re-publishing the same release re-measures
    nothing. Each report step's outcome is appended to ``done``.
    """

    def make(staged: StagedRelease) -> Path:
        from duetflow.report import release_report

        key = report_key(staged)

        def build(out: Path) -> StepOutcome:
            release_report(dataclasses.replace(staged, staging=out))
            return StepOutcome("report", "report", key, str(out))

        outcome = build_cached(cache_dir(config, "report", key), build)
        done.append(outcome)
        return Path(outcome.path) / "report"

    return make


def expose_report(config: RunConfig, step: StepOutcome) -> Path:
    """Copy a cached report to ``<workdir>/report`` (a stable place to open it from)."""
    dest = Path(config.workdir) / "report"
    partial = dest.with_name(".report.partial")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        shutil.copytree(Path(step.path) / "report", partial)
        shutil.rmtree(dest, ignore_errors=True)
        partial.rename(dest)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return dest


STAGE = StageSpec(
    "report",
    CONTENT_SECTIONS,  # the report records the whole content config (content_json)
    ("duetflow.report",),
    inputs="the staged release: its work directories, splits and id",
    outputs="report/ (HTML, card, plots, report.json) uploaded with the release",
)
