"""``duetflow publish --workdir DIR [--workdir ...] --store URI [--release ID] [-c CONFIG]``."""

from __future__ import annotations

from pathlib import Path

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
from duetflow.config import load_config


@click.command("publish")
@workdir_option(
    "Rendered work directory (from `duetflow process` / `synthesize`); repeatable.",
    old=("--work",),
    multiple=True,
    exists=True,
)
@store_option("Local path, file:// or s3://bucket/prefix (default: the config's release.store).")
@release_option("Release id (default: derived from the content).")
@click.option(
    "--report",
    "report_dir",
    default=None,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Report folder to copy into releases/<id>/report/.",
)
@config_option("Run config YAML (release and render sections are used).")
@seed_option("Override the config's seed (split assignment).")
@progress_option()
def command(
    workdir: tuple[Path, ...],
    store: str | None,
    release: str | None,
    report_dir: Path | None,
    config_path: Path | None,
    seed: int | None,
    progress: bool | None,
) -> None:
    """Validate, split and upload rendered work directories as a versioned release."""
    from duetflow.release.publish import publish
    from duetflow.report import release_report

    cfg = load_config(config_path, overrides=seed_override(seed))
    with progress_bars(progress_enabled(progress)):
        info = publish(
            list(workdir),
            store or cfg.release.store,
            cfg,
            release,
            report_dir,
            report=None if report_dir is not None else release_report,
        )
    c = info.counts
    click.echo(
        f"release {info.release_id}: {c.get('dialogues', 0)} dialogues "
        f"(train {c.get('train', 0)}, val {c.get('val', 0)}, test {c.get('test', 0)}), "
        f"{c.get('rejections', 0)} rejections; "
        f"{info.uploaded_objects} object(s) uploaded, {info.skipped_objects} already present"
    )
    for lic, n in sorted(c.get("by_licence", {}).items()):
        click.echo(f"  licence {lic}: {n['dialogues']} dialogues")
    for line in info.design_problems:
        click.echo(f"  design: {line}")
    for line in info.cue_parity:
        click.echo(f"  {line}")
    click.echo(info.uri)
