"""``duetflow run -c CONFIG``: run the configured pipeline (the ``build_dataset`` flow).

Prefect is imported only when a command runs, after the environment defaults below are set,
so ``duetflow --help`` stays fast and the settings take effect.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from duetflow.cli.options import (
    config_option,
    progress_enabled,
    progress_option,
    release_option,
    seed_option,
    seed_override,
    store_option,
    workdir_option,
)
from duetflow.cli.progress import progress_bars


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
@config_option("Run config YAML.", required=True)
@workdir_option("Override the config's work directory.", required=False)
@store_option("Override release.store (path, file:// or s3://).")
@click.option(
    "--runner",
    type=click.Choice(["threads", "dask"]),
    default=None,
    help="Task runner (dask: runner.dask_address or a local cluster; needs a Prefect server).",
)
@release_option("Publish under this id (default: content hash).", old=("--release-id",))
@seed_option()
@click.option("--no-synth", is_flag=True, help="Skip PH synthesis.")
@click.option("--no-publish", is_flag=True, help="Stop after rendering; publish nothing.")
@progress_option()
def command(
    config_path: Path,
    workdir: Path | None,
    store: str | None,
    runner: str | None,
    release: str | None,
    seed: int | None,
    no_synth: bool,
    no_publish: bool,
    progress: bool | None,
) -> None:
    """Run the pipeline of CONFIG end to end as the Prefect flow build_dataset.

    The config is validated first (keys, values, corpora, roots, licences), before Prefect
    starts. Finished shards are reused from the work directory, so re-running after a failure
    or a config change computes only what is missing or affected.
    """
    overrides = seed_override(seed)
    check_runnable(config_path, workdir, store, runner, overrides)
    prefect_env()
    from duetflow.flows import build_dataset

    with progress_bars(progress_enabled(progress)):
        summary = build_dataset(
            config=str(config_path.resolve()),
            workdir=str(workdir) if workdir else None,
            store=store,
            runner=runner,
            release_id=release,
            synthesize=not no_synth,
            publish=not no_publish,
            overrides=overrides or None,
        )
    echo_summary(summary)


def check_runnable(
    config_path: Path,
    workdir: Path | None,
    store: str | None,
    runner: str | None,
    overrides: Mapping[str, Any],
) -> None:
    """Load and check the run's config without Prefect: a typo costs a second, not a flow run.

    Raises click.UsageError (exit 2) naming the problem.
    """
    from duetflow.config import load_config
    from duetflow.errors import ConfigError
    from duetflow.pipeline import preflight

    extra: dict[str, Any] = dict(overrides)
    if workdir:
        extra["workdir"] = str(workdir)
    if store:
        extra["release"] = {"store": store}
    if runner:
        extra["runner"] = {"kind": runner}
    try:
        preflight(load_config(config_path, overrides=extra or None))
    except ConfigError as e:
        raise click.UsageError(str(e)) from None
