"""``duetflow process --in WORKDIR [--in WORKDIR ...] --out WORKDIR2``."""

from __future__ import annotations

from pathlib import Path

import click

from duetflow.cli.options import config_option
from duetflow.config import load_config


@click.command("process")
@click.option(
    "--in",
    "in_dirs",
    required=True,
    multiple=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Intake work directory (from `duetflow ingest`); repeat to merge several.",
)
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Rendered work directory to write (audio/, dialogues/turns/rejections.parquet, "
    "stats.json).",
)
@config_option("Run config YAML (window, filters, render sections, seed, sample_rate).")
@click.option("--seed", type=int, default=None, help="Override the config's seed.")
def command(
    in_dirs: tuple[Path, ...], out_dir: Path, config_path: Path | None, seed: int | None
) -> None:
    """Window, filter and render intake dialogues: one FLAC per kept window plus manifests."""
    from duetflow.process import process_workdir

    config = load_config(config_path, overrides={} if seed is None else {"seed": seed})
    report = process_workdir(list(in_dirs), out_dir, config)
    click.echo(
        f"{report.sources} dialogues -> {report.windows} windows: {report.rendered} rendered, "
        f"{report.rejected} rejected (+{report.carried} carried from intake); "
        f"{report.audio_s:.1f} s audio in {report.out_dir}"
    )
    for reason, n in report.rejected_by_reason.items():
        click.echo(f"  rejected {n}: {reason}")
