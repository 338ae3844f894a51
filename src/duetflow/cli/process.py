"""``duetflow process --intake WORKDIR [--intake WORKDIR ...] --workdir WORKDIR2``."""

from __future__ import annotations

from pathlib import Path

import click

from duetflow.cli.options import (
    config_option,
    progress_enabled,
    progress_option,
    renamed_option,
    seed_option,
    seed_override,
    workdir_option,
)
from duetflow.cli.progress import progress_bars
from duetflow.config import load_config


@click.command("process")
@renamed_option(
    "--intake",
    param="intake",
    old=("--in",),
    required=True,
    multiple=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Intake work directory (from `duetflow ingest`); repeat to merge several.",
)
@workdir_option(
    "Rendered work directory to write (audio/, dialogues/turns/rejections.parquet, stats.json).",
    old=("--out",),
)
@config_option("Run config YAML (window, filters, render sections, seed, sample_rate).")
@seed_option()
@progress_option()
def command(
    intake: tuple[Path, ...],
    workdir: Path,
    config_path: Path | None,
    seed: int | None,
    progress: bool | None,
) -> None:
    """Window, filter and render intake dialogues: one FLAC per kept window plus manifests."""
    from duetflow.pipeline.commands import process_workdir

    config = load_config(config_path, overrides=seed_override(seed))
    with progress_bars(progress_enabled(progress)):
        report = process_workdir(list(intake), workdir, config)
    click.echo(
        f"{report.sources} dialogues -> {report.windows} windows: {report.rendered} rendered, "
        f"{report.rejected} rejected (+{report.carried} carried from intake); "
        f"{report.audio_s:.1f} s audio in {report.out_dir}"
    )
    for reason, n in report.rejected_by_reason.items():
        click.echo(f"  rejected {n}: {reason}")
    if report.rejected or report.carried:
        click.echo(f"why each was rejected: duetflow rejections {workdir} [--reason REASON]")
