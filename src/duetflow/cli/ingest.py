"""``duetflow ingest``: one corpus root → intake manifests in a work directory."""

from __future__ import annotations

import json
from pathlib import Path

import click

from duetflow.cli.options import config_option
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
@click.option(
    "--out",
    "workdir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Work directory for dialogues/turns/rejections.parquet.",
)
@config_option("Run config YAML (defaults otherwise).")
@click.option(
    "--option",
    "-o",
    "options",
    multiple=True,
    metavar="KEY=VALUE",
    help="Adapter option (value parsed as JSON when possible); repeatable.",
)
def command(
    corpus: str, root: Path, workdir: Path, config_path: Path | None, options: tuple[str, ...]
) -> None:
    """Ingest a corpus: print found / kept / rejected by reason.

    Exits 0 whenever the run completed, whatever was rejected; 2 when it could not run (unknown
    corpus, missing or wrong root, bad option).
    """
    from duetflow.config import load_config
    from duetflow.ingest import ingest

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
        # command on the same --out skips unchanged sessions.
        opts.setdefault("state_dir", str(workdir / "studio_state"))
    cfg = load_config(config_path)  # a bad config is one "error:" line naming the key
    try:
        report = ingest(corpus, root, workdir, cfg, opts or None)
    except ConfigError as e:
        raise click.UsageError(str(e)) from None
    click.echo(
        f"{report.corpus}: found {report.found}, kept {report.kept}, rejected {report.rejected}"
    )
    for reason, n in sorted(report.by_reason.items()):
        click.echo(f"  rejected {reason}: {n}")
    click.echo(f"intake tables in {workdir}")
