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
    "--package",
    default=None,
    help="Write a separate plug-in package with this import name (e.g. my_corpora) under "
    "--dest, with its own pyproject.toml and entry points, instead of into duetflow's tree.",
)
@click.option(
    "--dest",
    default=None,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder of the plug-in package (with --package; default: ./<package>).",
)
@click.option(
    "--project",
    default=".",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Without --package: the duetflow source tree to write into (holds src/duetflow, tests).",
)
@click.option("--force", is_flag=True, help="Overwrite existing files.")
@click.option(
    "--layout",
    default="mono",
    show_default=True,
    help="mono: one mixed channel; stereo: a channel per speaker (e.g. Fisher); textgrid, eaf, "
    "rttm: a recording + a Praat TextGrid / ELAN .eaf / RTTM file per dialogue.",
)
def new(
    name: str, package: str | None, dest: Path | None, project: Path, force: bool, layout: str
) -> None:
    """Scaffold adapter, sample generator and test for corpus NAME (see docs/adding-a-corpus.md)."""
    from duetflow.corpora.scaffold import scaffold
    from duetflow.corpora.scaffold_package import scaffold_package
    from duetflow.errors import ConfigError

    if dest is not None and package is None:
        raise click.UsageError("--dest goes with --package (the plug-in package to write)")
    try:
        if package is not None:
            pkg = scaffold_package(name, package, dest or Path(package), layout=layout,
                                   force=force)  # fmt: skip
            for path in pkg.files:
                click.echo(f"wrote {path}")
            click.echo("then, from the environment where duetflow is installed:")
            for line in pkg.commands:
                click.echo(f"  {line}")
            return
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
    click.echo("(or write a separate plug-in package: add --package NAME --dest DIR)")
