"""The ``duetflow`` console script: the process's native defaults, then the CLI.

Kept apart from :mod:`duetflow.cli` because the thread variables and Arrow's allocator must be
in the environment before numpy, scipy, torch or pyarrow load, and importing :mod:`duetflow.cli`
imports every subcommand (:mod:`duetflow.native_threads`; glibc malloc's thresholds are applied to
this process directly, glibc having read its variables before they were set).

``duetflow run ...`` is first offered to the run host of a kept server
(:mod:`duetflow.flows.run_host`), before the command-line interface is imported: the host runs
the same command line (options checked there) and this process only waits for its exit code.
"""

from __future__ import annotations

import os
import sys


def run() -> None:
    """Entry point of the ``duetflow`` command."""
    from duetflow.native_threads import process_defaults, tune_malloc

    process_defaults(os.environ)
    tune_malloc(os.environ)  # glibc read its variables before they were set here
    argv = sys.argv[1:]
    if argv[:1] == ["run"] and not {"-h", "--help"} & set(argv):
        from duetflow.flows.home import prefect_home
        from duetflow.flows.run_host import hand_off

        code = hand_off("run", argv, prefect_home())
        if code is not None:
            sys.exit(code)
    from duetflow.cli import run as cli_run

    cli_run()
