"""``duetflow corpora``: list registered adapters, scaffold a new one."""

from __future__ import annotations

from pathlib import Path

import click


@click.group("corpora")
def command() -> None:
    """Corpus adapters (entry-point group ``duetflow.corpora``)."""


@command.command("list")
def list_() -> None:
    """Registered adapters; a plugin that fails to import is listed with its error."""
    from duetflow.corpora import registry_entries

    entries = registry_entries(refresh=True)
    if not entries:
        click.echo("no corpus adapters registered")
        return
    width = max(len(e.name) for e in entries)
    for e in entries:
        status = "ok" if e.error is None else f"BROKEN: {e.error}"
        click.echo(f"{e.name:<{width}}  {e.target}  {status}")


@command.command("new")
@click.argument("name")
@click.option(
    "--project",
    default=".",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Source tree to write into (holds src/duetflow and tests).",
)
@click.option("--force", is_flag=True, help="Overwrite existing files.")
@click.option(
    "--layout",
    type=click.Choice(["mono", "stereo"]),
    default="mono",
    show_default=True,
    help="Start from one mixed channel (mono) or one channel per speaker (stereo, e.g. Fisher).",
)
def new(name: str, project: Path, force: bool, layout: str) -> None:
    """Scaffold adapter, sample generator and test for corpus NAME (see docs/adding-a-corpus.md)."""
    from duetflow.corpora.scaffold import scaffold
    from duetflow.errors import ConfigError

    try:
        out = scaffold(name, project, force=force, layout=layout)
    except ConfigError as e:
        raise click.UsageError(str(e)) from None
    click.echo(f"adapter:          {out.adapter}")
    click.echo(f"sample generator: {out.samples}")
    click.echo(f"test:             {out.test}")
    click.echo("register both in pyproject.toml, then reinstall (pip install -e .):")
    click.echo('  [project.entry-points."duetflow.corpora"]')
    click.echo(f"  {out.entry_point}")
    click.echo('  [project.entry-points."duetflow.samples"]')
    click.echo(f"  {out.samples_entry_point}")
