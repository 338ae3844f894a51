"""Helpers of the chaos suite: running the command and reading what it wrote."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq


@dataclass(frozen=True)
class CliResult:
    """What ``duetflow ...`` did: exit code and both streams."""

    rc: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err


Cli = Callable[..., CliResult]


@dataclass(frozen=True)
class Intake:
    """Row counts and rejection reasons of an intake work directory."""

    kept: int
    rejected: int
    reasons: dict[str, str]  # item id -> reason
    details: dict[str, str]  # item id -> detail

    @property
    def found(self) -> int:
        return self.kept + self.rejected


def intake(workdir: Path) -> Intake:
    """Read the three intake tables, which must all be there (all or nothing)."""
    names = ("dialogues.parquet", "turns.parquet", "rejections.parquet")
    present = [n for n in names if (workdir / n).is_file()]
    assert present == list(names), f"intake tables incomplete: {present}"
    kept = pq.read_table(workdir / "dialogues.parquet").num_rows
    rej = pq.read_table(workdir / "rejections.parquet").to_pylist()
    return Intake(
        kept,
        len(rej),
        {r["item_id"]: r["reason"] for r in rej},
        {r["item_id"]: r["detail"] for r in rej},
    )


def summary_counts(text: str) -> tuple[int, int, int]:
    """(found, kept, rejected) from ingest's summary line."""
    line = next(x for x in text.splitlines() if ": found " in x)
    parts = line.split(": found ", 1)[1].replace(",", "").split()
    return int(parts[0]), int(parts[2]), int(parts[4])


def duetflow_exe() -> str:
    exe = shutil.which("duetflow", path=str(Path(sys.executable).parent))
    assert exe is not None, "the duetflow console script is not installed"
    return exe
