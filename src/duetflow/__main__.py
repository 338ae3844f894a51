"""``python -m duetflow``: the same command as the ``duetflow`` console script."""

from __future__ import annotations

from duetflow.console import run

if __name__ == "__main__":
    run()
