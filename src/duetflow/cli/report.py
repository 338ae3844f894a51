"""``duetflow report WORKDIR|RELEASE_URI... --out DIR``: the report of a run or a release."""

from __future__ import annotations

from pathlib import Path

import click

from duetflow.cli.options import config_option
from duetflow.config import load_config


@click.command("report")
@click.argument("sources", nargs=-1, required=True)
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for index.html, README.md (dataset card), plots/ and report.json.",
)
@config_option("Run config (bands, seed); default: the release's own config, else the defaults.")
@click.option(
    "--audio-sample",
    type=click.IntRange(min=0),
    default=24,
    show_default=True,
    help="Dialogues whose audio is re-measured (VAD gaps, loudness); 0 skips audio.",
)
@click.option("--title", default=None, help="Page and card title.")
def command(
    sources: tuple[str, ...],
    out_dir: Path,
    config_path: Path | None,
    audio_sample: int,
    title: str | None,
) -> None:
    """Write the HTML report and dataset card of rendered WORKDIRs or a release.

    A source is a rendered work directory, a folder of them, a release folder
    (STORE/releases/ID), a store root (latest release) or a store URI (file://, s3://).
    """
    from duetflow.report import build_report

    config = load_config(config_path) if config_path else None
    paths = build_report(list(sources), out_dir, config, audio_sample=audio_sample, title=title)
    d = paths.data
    click.echo(
        f"{d.total_dialogues} dialogues, {d.total_hours:.3f} h, {d.total_rejections} rejected"
    )
    click.echo(f"html: {paths.html}")
    click.echo(f"card: {paths.markdown}")
