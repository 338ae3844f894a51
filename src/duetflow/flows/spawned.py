"""A background process this process started, while it waits for it to answer."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path


def startup_failure(
    proc: subprocess.Popen[bytes], what: str, deadline: float, timeout: float, log: Path
) -> str | None:
    """Why ``proc`` (``what``: "prefect server", "run host") will not answer, naming its log
    ``log``: it exited, or ``deadline`` (``time.monotonic()``) passed after ``timeout`` seconds;
    None while it may still come up."""
    if proc.poll() is not None:
        return f"{what} exited with code {proc.returncode}; see {log}"
    if time.monotonic() > deadline:
        return f"{what} did not answer within {timeout:.0f} s; see {log}"
    return None


__all__ = ["startup_failure"]
