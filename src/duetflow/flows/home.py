"""The Prefect home a command-line run uses when no API is given: one place, importable without
click or Prefect (the ``duetflow`` entry point asks it before anything heavy loads)."""

from __future__ import annotations

import os
from pathlib import Path

from duetflow.user_cache import user_cache_dir

#: A Prefect home of duetflow's own, kept between runs (see :func:`duetflow.cli.run.prefect_env`).
PREFECT_HOME_ENV = "DUETFLOW_PREFECT_HOME"


def prefect_home(home: Path | None = None) -> Path:
    """The Prefect home a command-line run uses when no API is given (the order:
    :func:`duetflow.cli.run.prefect_env`)."""
    if "PREFECT_HOME" in os.environ:
        return Path(os.environ["PREFECT_HOME"])
    prefect_default = Path.home() / ".prefect"
    if home is not None:
        return home
    if os.environ.get(PREFECT_HOME_ENV):
        return Path(os.environ[PREFECT_HOME_ENV])
    if (prefect_default / "profiles.toml").exists():
        return prefect_default
    return user_cache_dir() / "prefect"
