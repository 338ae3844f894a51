"""duetflow: Prefect flows that build two-speaker dialogue audio datasets.

The library core (model, corpora, audio, turns, filters, render, storage, release) is plain
Python; :mod:`duetflow.flows` and :mod:`duetflow.tasks` are the Prefect shell around it.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

try:
    __version__ = version("duetflow")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+local"

if TYPE_CHECKING:
    from duetflow.release.pull import open_release as open_release

__all__ = ["__version__", "open_release"]


def __getattr__(name: str) -> Any:
    # Lazy: importing duetflow must not import pandas/boto3 for the CLI's --version.
    if name == "open_release":
        from duetflow.release.pull import open_release

        return open_release
    raise AttributeError(name)
