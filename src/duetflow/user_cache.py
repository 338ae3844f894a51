"""The per-user cache folder: what duetflow keeps between runs that is only ever a saving.

``$DUETFLOW_CACHE`` when set, else ``$XDG_CACHE_HOME/duetflow``, else ``~/.cache/duetflow``.
Nothing kept there is needed: removing the folder costs the next run the work it saved (the
releases :func:`duetflow.release.pull.open_release` pulled, the persistent Prefect home of
:func:`duetflow.cli.run.prefect_home`, the import graph of :func:`duetflow.hashing.code_hash`).
Imports nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

#: names the folder outright (tests point it at a temporary one)
CACHE_DIR_ENV = "DUETFLOW_CACHE"


def user_cache_dir() -> Path:
    """duetflow's per-user cache folder (not created here)."""
    if os.environ.get(CACHE_DIR_ENV):
        return Path(os.environ[CACHE_DIR_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "duetflow"
