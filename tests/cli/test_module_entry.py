"""``python -m duetflow`` runs the same command line as the ``duetflow`` console script."""

from __future__ import annotations

import subprocess
import sys


def test_python_m_duetflow_runs_the_cli() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "duetflow", "stage", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "stage" in done.stdout.lower()
    assert "Usage:" in done.stdout
