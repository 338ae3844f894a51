"""duetflow: Prefect flows that build two-speaker dialogue audio datasets.

The library core (model, corpora, audio, turns, filters, render, storage, release, the stage
declarations and the plain executor in :mod:`duetflow.pipeline`) is plain Python and imports
no Prefect; :mod:`duetflow.flows`, :mod:`duetflow.tasks` and :mod:`duetflow.cli` are the shell
around it. Importing this package imports nothing else: trainers read releases with
:func:`duetflow.release.pull.open_release`.
"""

from __future__ import annotations

from duetflow._version import __version__

__all__ = ["__version__"]
