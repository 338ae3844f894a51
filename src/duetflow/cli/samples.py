"""``duetflow samples make``: small corpora in the real layouts, plus their ground truth."""

from __future__ import annotations

from pathlib import Path

import click


@click.group("samples")
def command() -> None:
    """Sample corpora for demos, tests and benchmarks."""


@command.command("make")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--seed", default=0, show_default=True, help="Same seed → byte-identical files.")
@click.option(
    "--scale",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="Multiply the number of dialogues (never their shape).",
)
@click.option(
    "--only",
    "include",
    multiple=True,
    help="Generate only these (see `duetflow samples list`); repeatable.",
)
def make(directory: Path, seed: int, scale: int, include: tuple[str, ...]) -> None:
    """Write DIRECTORY/{dailytalk, IEMOCAP_full_release, MagicData-RAMC, ...} and truth.json."""
    from duetflow.demo import generators, make_samples

    known = list(generators())
    unknown = [n for n in include if n not in known]
    if unknown:
        raise click.BadParameter(f"unknown {unknown}; known: {known}", param_hint="--only")
    truth = make_samples(directory, seed=seed, scale=scale, include=list(include) or None)
    for name, info in truth["corpora"].items():
        click.echo(
            f"{name}: {directory / info['root']} ({info['dialogues']} dialogues, "
            f"{info['broken']} broken on purpose)"
        )
    click.echo(f"ground truth: {directory / 'truth.json'}")


@command.command("list")
def list_() -> None:
    """Registered sample generators (entry-point group ``duetflow.samples``)."""
    from duetflow.demo import generator_errors, generators

    for name, gen in generators(refresh=True).items():
        click.echo(f"{name}  -> {gen.folder}/")
    for name, err in generator_errors().items():
        click.echo(f"{name}  BROKEN: {err}")
