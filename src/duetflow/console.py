"""The ``duetflow`` console script: the process's native defaults, then the CLI.

Kept apart from :mod:`duetflow.cli` because the thread variables and Arrow's allocator must be
in the environment before numpy, scipy, torch or pyarrow load, and importing :mod:`duetflow.cli`
imports every subcommand (:mod:`duetflow.native_threads`).
"""

from __future__ import annotations

import os


def run() -> None:
    """Entry point of the ``duetflow`` command."""
    from duetflow.native_threads import process_defaults

    process_defaults(os.environ)
    from duetflow.cli import run as cli_run

    cli_run()
