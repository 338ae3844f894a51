"""The publish step: validate, split and publish the merged work directories with the report
drawn from the staged release (cached by :func:`report_key`)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from duetflow.config import RunConfig
from duetflow.hashing import files_fingerprint, text_digest
from duetflow.pipeline.cache import StepOutcome, build_cached, cache_dir
from duetflow.pipeline.stages import REPORT
from duetflow.records import convert, manifest

if TYPE_CHECKING:
    from duetflow.release.staging import ReportMaker, StagedRelease


@dataclass(frozen=True)
class ReleaseSummary:
    """A published release: its id, the store, publish's own record and the report step."""

    release_id: str
    store: str
    info: Mapping[str, Any]
    report: StepOutcome | None = None


def report_key(staged: StagedRelease) -> str:
    """Key of a release's report: its work directories' tables, its id and its split plan."""
    dirs = staged.workdirs
    names = (manifest.DIALOGUES, manifest.TURNS, manifest.REJECTIONS, "stats.json")
    fp = files_fingerprint(d / n for d in dirs for n in names)
    splits = text_digest(convert.dumps(sorted(staged.splits.items())))
    return REPORT.key(staged.config, fp, staged.release_id, splits, *(d.name for d in dirs))


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


def run_publish(
    workdirs: Sequence[str | Path],
    config: RunConfig,
    release_id: str | None = None,
) -> ReleaseSummary:
    """Validate, split and publish the rendered work directories with the release's report.

    Idempotent for equal content. The report is drawn from the staged release (splits, id) and
    copied to ``<workdir>/report`` as well, a stable place to open it from.
    """
    from duetflow.release.publish import publish

    reports: list[StepOutcome] = []
    info = publish(
        [Path(w) for w in workdirs],
        config.release.store,
        config,
        release_id=release_id or config.release.release_id,
        report=cached_report(config, reports),
    )
    report = reports[-1] if reports else None
    if report is not None:
        expose_report(config, report)
    return ReleaseSummary(info.release_id, str(config.release.store), _as_dict(info), report)


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


def _as_dict(obj: Any) -> dict[str, Any]:
    data: Any = {"value": str(obj)}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        data = json.loads(json.dumps(dataclasses.asdict(obj), default=str))
    elif isinstance(obj, Mapping):
        data = json.loads(json.dumps(dict(obj), default=str))
    return dict(data)
