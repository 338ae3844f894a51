"""``build_dataset``: the main job, the whole configured pipeline from one YAML config.

:func:`duetflow.pipeline.driver.run_pipeline` (the one definition of a run) on the Prefect executor:
ingest → process → match → synthesize → publish, each stage a subflow on the task runner the
config names (one local Dask cluster shared by all of them), then Prefect artifacts: a markdown
summary and a table of kept/rejected counts by stage and reason.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefect import get_run_logger

from duetflow.config import RunConfig
from duetflow.flows.executor import PrefectExecutor
from duetflow.flows.lean import flow, flow_heartbeat
from duetflow.flows.runner import build_task_runner, dask_cluster, resolve_config
from duetflow.pipeline import driver
from duetflow.pipeline.cache import StepOutcome


@dataclass(frozen=True)
class BuildSummary:
    """What ``build_dataset`` returns and what the CLI prints."""

    release_id: str | None
    store: str
    workdir: str
    report: str | None
    kept: Mapping[str, int]  # per corpus: what the filters kept (PH: dialogues synthesized)
    rejected: Mapping[str, int]
    computed: Mapping[str, int]
    reused: Mapping[str, int]
    seconds: float
    by_reason: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    released: Mapping[str, int] = field(default_factory=dict)  # per corpus, after HH ↔ HM matching

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(json.dumps(self.__dict__, default=dict))
        return data


def outcome_rows(merged: Sequence[StepOutcome]) -> list[dict[str, Any]]:
    """Rows ``corpus, stage, outcome, reason, count``: what was kept and why the rest was not."""
    rows: list[dict[str, Any]] = []
    for m in merged:
        rows.append(
            {"corpus": m.label, "stage": m.stage, "outcome": "kept", "reason": "", "count": m.kept}
        )
        for key, n in sorted(m.by_reason.items()):
            stage, _, reason = key.partition(":")
            rows.append(
                {"corpus": m.label, "stage": stage, "outcome": "rejected", "reason": reason,
                 "count": n}
            )  # fmt: skip
    return rows


def summary_markdown(summary: BuildSummary, rows: Sequence[Mapping[str, Any]]) -> str:
    """The run's markdown artifact: release, per-corpus counts, cache use, rejections."""
    lines = [
        "# duetflow build",
        "",
        f"* release: `{summary.release_id}` in `{summary.store}`",
        f"* work directory: `{summary.workdir}`",
        f"* report: `{summary.report}`" if summary.report else "* report: (none)",
        f"* wall time: {summary.seconds:.1f} s",
        "",
        "| corpus | kept | rejected |",
        "| --- | ---: | ---: |",
    ]
    for label in summary.kept:
        lines.append(f"| {label} | {summary.kept[label]} | {summary.rejected.get(label, 0)} |")
    lines += ["", "| stage | steps computed | steps reused |", "| --- | ---: | ---: |"]
    for stage in summary.computed:
        lines.append(f"| {stage} | {summary.computed[stage]} | {summary.reused.get(stage, 0)} |")
    rejected = [r for r in rows if r["outcome"] == "rejected"]
    if rejected:
        lines += ["", "| corpus | stage | reason | count |", "| --- | --- | --- | ---: |"]
        for r in rejected:
            lines.append(f"| {r['corpus']} | {r['stage']} | {r['reason']} | {r['count']} |")
    return "\n".join(lines) + "\n"


def _publish_artifacts(summary: BuildSummary, rows: list[dict[str, Any]]) -> None:
    from prefect.artifacts import create_markdown_artifact, create_table_artifact

    create_markdown_artifact(
        summary_markdown(summary, rows), key="duetflow-build-summary",
        description="duetflow build_dataset: release, counts, cache reuse",
    )  # fmt: skip
    create_table_artifact(
        rows, key="duetflow-counts", description="kept / rejected by corpus, stage and reason"
    )


@flow(name="build-dataset")
def build_dataset(
    config: str | RunConfig | None = None,
    workdir: str | None = None,
    store: str | None = None,
    runner: str | None = None,
    release_id: str | None = None,
    synthesize: bool = True,
    publish: bool = True,
    overrides: dict[str, Any] | None = None,
) -> BuildSummary:
    """Run the configured pipeline end to end and publish a release.

    Every stage resumes from the work directory's cache: a re-run after a crash computes only
    the shards that did not finish, an unchanged re-run renders and synthesizes nothing.
    """
    with flow_heartbeat():
        return _build(config, workdir, store, runner, release_id, synthesize, publish, overrides)


def _build(
    config: str | RunConfig | None,
    workdir: str | None,
    store: str | None,
    runner: str | None,
    release_id: str | None,
    synthesize: bool,
    publish: bool,
    overrides: dict[str, Any] | None,
) -> BuildSummary:
    started = time.perf_counter()
    cfg = resolve_config(config, workdir=workdir, store=store, runner=runner, overrides=overrides)
    logger = get_run_logger()
    logger.info(
        "build_dataset: %d corpora, workdir %s, runner %s (max_workers=%d, shard_size=%d)",
        len(cfg.corpora), cfg.workdir, cfg.runner.kind, cfg.runner.max_workers,
        cfg.runner.shard_size,
    )  # fmt: skip
    with dask_cluster(cfg.runner) as address:
        executor = PrefectExecutor(lambda: build_task_runner(cfg.runner, address))
        result = driver.run_pipeline(
            cfg,
            executor=executor,
            synthesize=synthesize,
            publish=publish,
            release_id=release_id,
        )
    merged = list(result.merged)
    processed = {m.label: m for m in result.processed}
    release = result.release
    stage_names = ("ingest", "process", "synth", "report")
    summary = BuildSummary(
        release_id=release.release_id if release else None,
        store=str(cfg.release.store),
        workdir=str(cfg.workdir),
        report=str(Path(cfg.workdir) / "report") if release and release.report else None,
        kept={m.label: processed.get(m.label, m).kept for m in merged},
        rejected={m.label: processed.get(m.label, m).rejected for m in merged},
        computed={s: result.computed(s) for s in stage_names},
        reused={s: result.reused(s) for s in stage_names},
        seconds=time.perf_counter() - started,
        by_reason={m.label: dict(m.by_reason) for m in merged},
        released={m.label: m.kept for m in merged},
    )
    rows = outcome_rows(merged)
    _publish_artifacts(summary, rows)
    (Path(cfg.workdir) / "last_run.json").write_text(
        json.dumps(summary.to_json(), indent=1, sort_keys=True), encoding="utf-8"
    )
    logger.info(
        "build_dataset done in %.1f s: release %s, kept %s", summary.seconds,
        summary.release_id, dict(summary.kept),
    )  # fmt: skip
    return summary
