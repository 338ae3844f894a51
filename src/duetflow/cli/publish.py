"""``duetflow publish --work WORKDIR [--work ...] --store URI [--release ID] [-c CONFIG]``."""

from __future__ import annotations

from pathlib import Path

import click

from duetflow.cli.options import config_option
from duetflow.config import load_config


@click.command("publish")
@click.option(
    "--work",
    "workdirs",
    required=True,
    multiple=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Rendered work directory (from `duetflow process` / `synthesize`); repeatable.",
)
@click.option("--store", default=None, help="Local path, file:// or s3://bucket/prefix "
              "(default: the config's release.store).")  # fmt: skip
@click.option("--release", "release_id", default=None, help="Release id (default: content hash).")
@click.option(
    "--report",
    "report_dir",
    default=None,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Report folder to copy into releases/<id>/report/.",
)
@config_option("Run config YAML (release and render sections are used).")
def command(
    workdirs: tuple[Path, ...],
    store: str | None,
    release_id: str | None,
    report_dir: Path | None,
    config_path: Path | None,
) -> None:
    """Validate, split and upload rendered work directories as a versioned release."""
    from duetflow.release.publish import publish

    cfg = load_config(config_path)
    info = publish(list(workdirs), store or cfg.release.store, cfg, release_id, report_dir)
    c = info.counts
    click.echo(
        f"release {info.release_id}: {c.get('dialogues', 0)} dialogues "
        f"(train {c.get('train', 0)}, val {c.get('val', 0)}, test {c.get('test', 0)}), "
        f"{c.get('rejections', 0)} rejections; "
        f"{info.uploaded_objects} object(s) uploaded, {info.skipped_objects} already present"
    )
    click.echo(info.uri)
