"""Options shared by several subcommands, declared once so they read the same everywhere.

One name per thing across the whole CLI: a work directory is ``--workdir``, a release id
``--release``, a store ``--store``, a seed ``--seed``, a run config ``-c/--config`` and the
progress bars ``--progress/--no-progress``. Names used before this was unified (``--out``,
``--in``, ``--work``, ``--release-id``) still work for one release: hidden from ``--help``, with
a deprecation warning on stderr.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

import click

F = TypeVar("F", bound=Callable[..., Any])


class Invocation:
    """The command line the ``duetflow`` entry point was given (``ctx.obj`` of every command it
    runs): what a command hands to another process to run it the same way. Absent where a
    command is invoked some other way (click's test runner)."""

    def __init__(self, argv: Sequence[str]) -> None:
        self.argv = list(argv)


def invocation() -> Invocation | None:
    """The :class:`Invocation` of the running command, if the entry point made one."""
    obj = click.get_current_context().obj
    return obj if isinstance(obj, Invocation) else None


def config_option(
    help: str = "Run config YAML (defaults when omitted).", *, required: bool = False
) -> Callable[[F], F]:
    """``-c/--config PATH`` → parameter ``config_path: Path | None``."""
    return click.option(
        "-c",
        "--config",
        "config_path",
        default=None,
        required=required,
        type=click.Path(dir_okay=False, path_type=Path),
        help=help,
    )


def renamed_option(
    *flags: str,
    param: str,
    old: Sequence[str] = (),
    required: bool = False,
    multiple: bool = False,
    type: Any = None,
    help: str = "",
) -> Callable[[F], F]:
    """An option ``flags`` → parameter ``param``; the ``old`` flags are hidden aliases.

    Using an old flag prints ``warning: --out is deprecated; use --workdir`` on stderr and
    works as the new one; giving both is a usage error. ``required`` is checked after the
    aliases are merged (so ``--out`` alone satisfies a required ``--workdir``).
    """
    hidden = f"{param}__deprecated"
    label = flags[-1]

    def empty(value: Any) -> bool:
        return value is None or value == ()

    def decorate(f: F) -> F:
        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            legacy = kwargs.pop(hidden, None)
            if not empty(legacy):
                if not empty(kwargs.get(param)):
                    raise click.UsageError(f"{'/'.join(old)} is the old name of {label}: use one")
                click.echo(f"warning: {'/'.join(old)} is deprecated; use {label}", err=True)
                kwargs[param] = legacy
            if required and empty(kwargs.get(param)):
                raise click.UsageError(f"Missing option '{label}'.")
            return f(*args, **kwargs)

        out: Any = wrapper
        if old:
            out = click.option(*old, hidden, hidden=True, multiple=multiple, type=type)(out)
        suffix = " [required]" if required else ""
        out = click.option(*flags, param, multiple=multiple, type=type, help=help + suffix)(out)
        return cast(F, out)

    return decorate


def workdir_option(
    help: str,
    *,
    old: Sequence[str] = (),
    required: bool = True,
    multiple: bool = False,
    exists: bool = False,
) -> Callable[[F], F]:
    """``--workdir DIR`` → parameter ``workdir`` (a tuple when ``multiple``)."""
    return renamed_option(
        "--workdir",
        param="workdir",
        old=old,
        required=required,
        multiple=multiple,
        type=click.Path(exists=exists, file_okay=False, path_type=Path),
        help=help,
    )


def store_option(
    help: str = "Store URI (default: the config's release.store).",
) -> Callable[[F], F]:
    """``--store URI`` → parameter ``store: str | None``."""
    return click.option("--store", "store", default=None, help=help)


def release_option(
    help: str = "Release id (default: derived from the content).",
    *,
    default: str | None = None,
    old: Sequence[str] = (),
) -> Callable[[F], F]:
    """``--release ID`` → parameter ``release: str | None``."""
    if not old:
        return click.option(
            "--release", "release", default=default, show_default=default is not None, help=help
        )
    return renamed_option("--release", param="release", old=old, help=help)


def seed_option(help: str = "Override the config's seed.") -> Callable[[F], F]:
    """``--seed N`` → parameter ``seed: int | None``."""
    return click.option("--seed", "seed", type=int, default=None, help=help)


def seed_override(seed: int | None) -> dict[str, Any]:
    """Config overrides for ``--seed`` (none when it was not given)."""
    return {} if seed is None else {"seed": seed}


def progress_option() -> Callable[[F], F]:
    """``--progress/--no-progress`` → parameter ``progress: bool | None`` (None: on a tty)."""
    return click.option(
        "--progress/--no-progress",
        "progress",
        default=None,
        help="Progress bars on stderr (default: when stderr is a terminal).",
    )


def progress_enabled(progress: bool | None) -> bool:
    """What ``--progress/--no-progress`` means: the flag, else whether stderr is a terminal."""
    return sys.stderr.isatty() if progress is None else progress


__all__ = [
    "config_option",
    "progress_enabled",
    "progress_option",
    "release_option",
    "renamed_option",
    "seed_option",
    "seed_override",
    "store_option",
    "workdir_option",
]
