"""The ``duetflow`` command. Each subcommand lives in its own module under ``duetflow.cli``.

A module exports ``command`` (a click command or group); :data:`COMMAND_MODULES` lists them in
help order. Modules are imported eagerly so a broken one fails loudly in tests.
"""

from __future__ import annotations

import importlib
import logging
import sys

import click

from duetflow._version import __version__
from duetflow.cli.options import Invocation
from duetflow.errors import DiskFullError, DuetflowError

COMMAND_MODULES = (
    "samples",
    "corpora",
    "ingest",
    "process",
    "rejections",
    "scripts",
    "synthesize",
    "publish",
    "stage",
    "releases",
    "validate",
    "pull",
    "report",
    "game",
    "audit",
    "run",
    "server",
    "worker",
    "demo",
    "deploy",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="duetflow")
@click.option("-v", "--verbose", count=True, help="More logging (-v info, -vv debug).")
def main(verbose: int) -> None:
    """Build two-speaker dialogue audio datasets (HH / HM / PH) with Prefect flows."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")


for _name in COMMAND_MODULES:
    try:
        _mod = importlib.import_module(f"duetflow.cli.{_name}")
    except ModuleNotFoundError as _e:
        if _e.name != f"duetflow.cli.{_name}":
            raise
        continue
    main.add_command(_mod.command)


def run(args: list[str] | None = None) -> None:
    """Entry point: turn library errors into one readable line and exit code 2. ``args``: the
    command line without the program name (default: ``sys.argv[1:]``)."""
    argv = sys.argv[1:] if args is None else list(args)
    try:
        main.main(args=argv, standalone_mode=False, obj=Invocation(argv))
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except click.exceptions.Abort:
        sys.exit(130)
    except DuetflowError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(2)
    except OSError as e:  # a full disk outside a step (which says so itself) is no bug either
        full = DiskFullError.of(e, e.filename or "a file")
        if full is None:
            raise
        click.echo(f"error: {full}", err=True)
        sys.exit(2)
