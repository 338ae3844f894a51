"""Options shared by several subcommands, declared once so they read the same everywhere."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def config_option(help: str = "Run config YAML (defaults when omitted).") -> Callable[[F], F]:
    """``-c/--config PATH`` → parameter ``config_path: Path | None``."""
    return click.option(
        "-c",
        "--config",
        "config_path",
        default=None,
        type=click.Path(dir_okay=False, path_type=Path),
        help=help,
    )
