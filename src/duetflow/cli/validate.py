"""``duetflow validate URI[/releases/ID]``: exit code 1 on any problem."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from duetflow.cli.options import config_option
from duetflow.config import load_config


@click.command("validate")
@click.argument("uri")
@click.option(
    "--shallow", is_flag=True, help="Trust stored checksums instead of reading every object."
)
@click.option(
    "--audio-sample",
    type=click.IntRange(min=0),
    default=None,
    help="Dialogues whose audio is re-measured (acoustic gaps, digital holes); 0 skips them."
    " Default: duetflow.release.workdir_checks.AUDIO_SAMPLE.",
)
@config_option("Run config YAML (default: the release's own recorded render/release settings).")
def command(uri: str, shallow: bool, audio_sample: int | None, config_path: Path | None) -> None:
    """Re-check a published release against its RELEASE.json and the schemas."""
    from duetflow.release.validate import validate_release
    from duetflow.release.workdir_checks import AUDIO_SAMPLE

    cfg = load_config(config_path) if config_path else None
    n = AUDIO_SAMPLE if audio_sample is None else audio_sample
    problems = validate_release(uri, config=cfg, deep=not shallow, audio_sample=n)
    if problems:
        for p in problems:
            click.echo(f"problem: {p}", err=True)
        click.echo(f"{len(problems)} problem(s) in {uri}", err=True)
        sys.exit(1)
    click.echo(f"{uri}: valid")
