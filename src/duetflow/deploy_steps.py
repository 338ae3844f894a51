"""Deploy-time steps referenced by ``prefect.yaml`` (Prefect runs them during ``prefect deploy``).

:func:`project_directory` tells the deployments where the worker finds the flows: the checkout
``prefect deploy`` runs in, so ``prefect deploy --all`` from any clone registers deployments
that run without extra environment variables (``DUETFLOW_PROJECT_DIR`` still overrides it).
A directory that is not a duetflow checkout fails the deploy, naming what was checked.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Overrides the checkout directory recorded in the deployments (e.g. a path on the workers).
PROJECT_DIR_ENV = "DUETFLOW_PROJECT_DIR"
FLOWS = Path("src") / "duetflow" / "flows"


def project_directory(directory: str | None = None) -> dict[str, str]:
    """``{"directory": ...}``: ``directory``, else ``$DUETFLOW_PROJECT_DIR``, else the cwd.

    Raises ValueError (failing ``prefect deploy``) when it holds no ``src/duetflow/flows``.
    """
    env = os.environ.get(PROJECT_DIR_ENV)
    chosen = directory or env or os.getcwd()
    path = Path(chosen).expanduser().resolve()
    if not (path / FLOWS).is_dir():
        source = "the step's directory" if directory else (PROJECT_DIR_ENV if env else "the cwd")
        raise ValueError(
            f"{path} ({source}) is not a duetflow checkout: no {FLOWS} there; run "
            f"`prefect deploy` from the checkout or set {PROJECT_DIR_ENV} to it"
        )
    return {"directory": str(path)}


__all__ = ["PROJECT_DIR_ENV", "project_directory"]
