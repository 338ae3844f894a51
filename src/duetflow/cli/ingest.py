"""``duetflow ingest --corpus NAME --root DIR --workdir DIR``: a corpus → intake manifests."""

from __future__ import annotations

import json
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
from duetflow.errors import ConfigError


@click.command("ingest")
@click.option(
    "--corpus", required=True, help="Registered adapter name (see `duetflow corpora list`)."
)
@click.option(
    "--root",
    required=True,
    type=click.Path(path_type=Path),
    help="Corpus root as downloaded (e.g. .../dailytalk, .../IEMOCAP_full_release).",
)
@workdir_option("Work directory for dialogues/turns/rejections.parquet.", old=("--out",))
@config_option("Run config YAML (defaults otherwise).")
@click.option(
    "--option",
    "-o",
    "options",
    multiple=True,
    metavar="KEY=VALUE",
    help="Adapter option (value parsed as JSON when possible); repeatable.",
)
@click.option(
    "--licence",
    default=None,
    help="The corpus's licence (SPDX id or LicenseRef-<name>), overriding the adapter's.",
)
@seed_option()
@progress_option()
def command(
    corpus: str,
    root: Path,
    workdir: Path,
    config_path: Path | None,
    options: tuple[str, ...],
    licence: str | None,
    seed: int | None,
    progress: bool | None,
) -> None:
    """Ingest a corpus: print found / kept / rejected by reason.

    Exits 0 whenever the run completed, whatever was rejected; 2 when it could not run (unknown
    corpus, missing or wrong root, bad option, no licence).
    """
    from duetflow.config import load_config
    from duetflow.pipeline.ingest import ingest

    opts: dict[str, object] = {}
    for item in options:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected KEY=VALUE, got {item!r}", param_hint="--option")
        try:
            opts[key] = json.loads(value)
        except json.JSONDecodeError:
            opts[key] = value
    if not root.is_dir():
        raise click.BadParameter(f"{root} is not a directory", param_hint="--root")
    if corpus == "studio":
        # Incremental state lives beside the intake tables it describes, so re-running the same
        # command on the same --workdir skips unchanged sessions.
        opts.setdefault("state_dir", str(workdir / "studio_state"))
    # a bad config is one "error:" line naming the key, not a usage error
    cfg = load_config(config_path, overrides=seed_override(seed) or None)
    try:
        with progress_bars(progress_enabled(progress)):
            report = ingest(corpus, root, workdir, cfg, opts or None, licence=licence)
    except ConfigError as e:
        raise click.UsageError(str(e)) from None
    click.echo(
        f"{report.corpus}: found {report.found}, kept {report.kept}, rejected {report.rejected}"
    )
    for reason, n in sorted(report.by_reason.items()):
        click.echo(f"  rejected {reason}: {n}")
    click.echo(f"intake tables in {workdir}")
