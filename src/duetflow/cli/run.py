"""``duetflow run -c CONFIG``: run the configured pipeline (the ``build_dataset`` flow).

Prefect is imported only when a command runs, after the environment defaults below are set,
so ``duetflow --help`` stays fast and the settings take effect.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

PROGRESS_LOGGER = "duetflow.progress"


def prefect_env(home: Path | None = None) -> None:
    """Defaults for a command-line run; anything already set in the environment wins.

    The temporary local API needs more than Prefect's 20 s to migrate a fresh database on a
    small machine, and must not phone home. ``home`` keeps the demo's Prefect database inside
    the demo folder when no Prefect API or home is configured.
    """
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    if home is not None and not os.environ.get("PREFECT_API_URL"):
        os.environ.setdefault("PREFECT_HOME", str(home))


class _BarHandler(logging.Handler):
    """Turns ``duetflow.progress`` records into one rich progress bar per stage and corpus."""

    def __init__(self, progress: Any) -> None:
        super().__init__(logging.INFO)
        self.progress = progress
        self.tasks: dict[str, Any] = {}

    def emit(self, record: logging.LogRecord) -> None:
        stage = getattr(record, "stage", None)
        if stage is None:
            return
        done = int(getattr(record, "done", 0))
        total = getattr(record, "total", None)
        if stage not in self.tasks:
            self.tasks[stage] = self.progress.add_task(stage, total=total)
        self.progress.update(self.tasks[stage], completed=done, total=total)


@contextmanager
def progress_bars(enabled: bool) -> Iterator[None]:
    """Progress bars on stderr while the block runs, when ``enabled`` (an interactive terminal)."""
    if not enabled:
        yield
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    logger = logging.getLogger(PROGRESS_LOGGER)
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), transient=False
    ) as progress:
        handler = _BarHandler(progress)
        old_level, old_prop = logger.level, logger.propagate
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
        try:
            yield
        finally:
            logger.removeHandler(handler)
            logger.setLevel(old_level)
            logger.propagate = old_prop


def echo_summary(summary: Any) -> None:
    """The closing lines of a run: release id, counts per corpus, cache reuse, report."""
    click.echo(f"release: {summary.release_id}  store: {summary.store}")
    kept: Mapping[str, int] = summary.kept
    released: Mapping[str, int] = getattr(summary, "released", {}) or {}
    for label in kept:
        line = f"  {label:<16} kept {kept[label]:>5}  rejected {summary.rejected[label]:>5}"
        if label in released and released[label] != kept[label]:
            line += f"  released {released[label]:>5} (HH matched to the HM topics)"
        click.echo(line)
    steps = ", ".join(
        f"{s} {summary.computed[s]} computed / {summary.reused[s]} reused" for s in summary.computed
    )
    click.echo(f"steps: {steps}")
    click.echo(f"work directory: {summary.workdir}")
    if summary.report:
        click.echo(f"report: {summary.report}")
    click.echo(f"wall time: {summary.seconds:.1f} s")


@click.command("run")
@click.option(
    "-c",
    "--config",
    "config_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Run config YAML.",
)
@click.option("--workdir", default=None, help="Override the config's work directory.")
@click.option("--store", default=None, help="Override release.store (path, file:// or s3://).")
@click.option(
    "--runner",
    type=click.Choice(["threads", "dask"]),
    default=None,
    help="Task runner (dask: runner.dask_address or a local cluster; needs a Prefect server).",
)
@click.option("--release-id", default=None, help="Publish under this id (default: content hash).")
@click.option("--no-synth", is_flag=True, help="Skip PH synthesis.")
@click.option("--no-publish", is_flag=True, help="Stop after rendering; publish nothing.")
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Progress bars (default: when stderr is a terminal).",
)
def command(
    config_path: Path,
    workdir: str | None,
    store: str | None,
    runner: str | None,
    release_id: str | None,
    no_synth: bool,
    no_publish: bool,
    progress: bool | None,
) -> None:
    """Run the pipeline of CONFIG end to end as the Prefect flow build_dataset.

    Finished shards are reused from the work directory, so re-running after a failure or a
    config change computes only what is missing or affected.
    """
    prefect_env()
    from duetflow.flows import build_dataset

    with progress_bars(sys.stderr.isatty() if progress is None else progress):
        summary = build_dataset(
            config=str(config_path.resolve()),
            workdir=workdir,
            store=store,
            runner=runner,
            release_id=release_id,
            synthesize=not no_synth,
            publish=not no_publish,
        )
    echo_summary(summary)
