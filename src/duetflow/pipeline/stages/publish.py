"""The publish stage: validate, split and publish the merged work directories as one release.

The work is :func:`duetflow.release.publish.publish` (the stage's entry module); one step in the
caller's process (store credentials live there, not on workers). Not cached: publishing is
idempotent (objects present with the same checksum are skipped). The release's report is the
report stage (:mod:`duetflow.pipeline.stages.report`), drawn from the staged release.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duetflow.config import RunConfig
from duetflow.errors import ConfigError
from duetflow.pipeline.cache import PH_LABEL, StepOutcome
from duetflow.pipeline.executors import Batch
from duetflow.pipeline.stage import CONTENT_SECTIONS, IO_TAG, RunState, StageSpec, StepHints, Work
from duetflow.pipeline.stages.report import cached_report, expose_report

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReleaseSummary:
    """A published release: its id, the store, publish's own record and the report step."""

    release_id: str
    store: str
    info: Mapping[str, Any]
    report: StepOutcome | None = None


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


def _as_dict(obj: Any) -> dict[str, Any]:
    data: Any = {"value": str(obj)}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        data = json.loads(json.dumps(dataclasses.asdict(obj), default=str))
    elif isinstance(obj, Mapping):
        data = json.loads(json.dumps(dict(obj), default=str))
    return dict(data)


def plan(state: RunState) -> Iterable[Work]:
    if not state.workdirs:
        raise ConfigError(
            f"nothing to publish: no rendered work directories in {state.config.workdir}"
        )
    dirs = [m.path for m in state.workdirs]
    yield Work([dirs], (state.config, state.release_id), Batch("publish"))


def merge(state: RunState, work: Work, done: list[Any]) -> list[ReleaseSummary]:
    summary: ReleaseSummary = done[0]
    if summary.report is not None:
        state.steps.append(summary.report)
        log.info("report %s: %s", "reused" if summary.report.reused else "built",
                 summary.report.path)  # fmt: skip
    log.info("published release %s to %s", summary.release_id, summary.store)
    return [summary]


def resume(state: RunState, ex: Any) -> None:
    """On its own: the rendered corpora after HH ↔ HM matching, then PH (when synthesized)."""
    from duetflow.pipeline.stages.match import after_match, rendered_outcomes

    if state.workdirs:
        return
    after_match(state, ex)
    state.workdirs.extend(o for o in rendered_outcomes(state.config, with_ph=True)
                          if o.label == PH_LABEL)  # fmt: skip


STAGE = StageSpec(
    "publish",
    CONTENT_SECTIONS,  # the default release id hashes the whole content config
    ("duetflow.release.publish",),
    inputs="the rendered (and matched) work directories + PH",
    outputs="releases/<id>/ in the store (manifests, audio, splits, stats, report, RELEASE.json)",
    step=run_publish,
    plan=plan,
    merge=merge,
    resume=resume,
    hints=StepHints(
        "publish-release",
        tags=(IO_TAG,),
        retries=3,
        delay_s=5,
        backoff=True,
        jitter=0.5,
        in_caller=True,
    ),
    flow="publish",
)
