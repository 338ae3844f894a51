"""``duetflow synthesize --scripts PATH --voices WORKDIR --backend NAME --workdir WORKDIR``."""

from __future__ import annotations

from pathlib import Path

import click

from duetflow.cli.options import (
    config_option,
    progress_enabled,
    progress_option,
    seed_option,
    seed_override,
    workdir_option,
)
from duetflow.cli.progress import progress_bars
from duetflow.config import load_config


@click.command("synthesize")
@click.option(
    "--scripts",
    "scripts",
    type=click.Path(exists=True, path_type=Path),
    default=None,
    help="Script .json/.jsonl file or folder; default: synth.scripts from the config.",
)
@click.option(
    "--voices",
    "voices",
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Rendered or intake work directory whose kept dialogues provide reference voices.",
)
@click.option(
    "--backend",
    default=None,
    help="TTS backend (default, dia, spark, or any registered one); default: synth.backend.",
)
@workdir_option(
    "Rendered PH work directory to write (audio/, dialogues/turns/rejections.parquet).",
    old=("--out",),
)
@config_option("Run config YAML (seed, render bands, synth section).")
@seed_option()
@progress_option()
@click.option(
    "--from-hh/--no-from-hh",
    default=None,
    help="Also derive scripts from the voices workdir's kept HH transcripts.",
)
@click.option(
    "--qa/--no-qa",
    default=None,
    help="Clone-similarity QA (Resemblyzer); default: on when the tts extra is installed.",
)
def command(
    scripts: Path | None,
    voices: Path,
    backend: str | None,
    workdir: Path,
    config_path: Path | None,
    seed: int | None,
    progress: bool | None,
    from_hh: bool | None,
    qa: bool | None,
) -> None:
    """Speak two-speaker scripts in the voices of real speakers: a rendered PH work directory."""
    from duetflow.pipeline.commands import synthesize

    overrides = seed_override(seed)
    if from_hh is not None:
        overrides["synth"] = {"from_hh_transcripts": from_hh}
    config = load_config(config_path, overrides=overrides)
    if scripts is None and config.synth.scripts is None and not config.synth.from_hh_transcripts:
        raise click.UsageError("no scripts: pass --scripts, set synth.scripts, or use --from-hh")
    with progress_bars(progress_enabled(progress)):
        report = synthesize(scripts, voices, config, workdir, backend, qa=qa)
    click.echo(
        f"{report.scripts} scripts -> {report.kept} PH dialogues, {report.rejected} rejected "
        f"({report.voices} reference voices, backend {report.backend})"
    )
    for reason, n in report.reasons.items():
        click.echo(f"  rejected {n}: {reason}")
    click.echo(
        f"{report.utterances} utterances, {report.audio_s:.1f} s audio, "
        f"synthesis RTF {report.rtf:.3f}"
    )
    click.echo(f"work directory: {workdir}")
