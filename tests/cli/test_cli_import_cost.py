"""A command's fixed cost: asking ``duetflow`` for help loads no numeric, table, orchestration
or model stack. Each probe is a fresh interpreter running the console entry point, which then
lists what ``sys.modules`` holds (a meta-path hook would miss nothing more: a module imported and
then deleted from ``sys.modules`` is not a cost anyone pays twice)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Packages whose import costs tenths of a second to seconds each; none is needed to print help.
HEAVY = ("numpy", "scipy", "pandas", "pyarrow", "prefect", "torch", "numba", "soundfile")

PROBE = r"""
import json, sys
heavy = json.loads(sys.argv[1])
preload = sys.argv[2]
if preload:
    __import__(preload)
from duetflow.console import run
found = {}
for argv in json.loads(sys.argv[3]):
    sys.argv = ["duetflow", *argv]
    try:
        run()
    except SystemExit as e:
        assert e.code in (0, None), (argv, e.code)
    found[" ".join(argv)] = sorted(m for m in sys.modules if m in heavy)
print("\n" + json.dumps(found))
"""


def _loaded(commands: list[list[str]], preload: str = "") -> dict[str, list[str]]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(HEAVY), preload, json.dumps(commands)],
        capture_output=True, text=True, check=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert "Usage: duetflow" in out.stdout  # the help was printed
    result: dict[str, list[str]] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("argv", [["--help"], ["ingest", "--help"]])
def test_fresh_help_loads_no_heavy_stack(argv: list[str]) -> None:
    assert _loaded([argv]) == {" ".join(argv): []}


def test_no_subcommand_help_loads_a_heavy_stack() -> None:
    """Every subcommand's help (and every group's subcommands' help), in one interpreter: the
    modules loaded after each are listed, so the first that pulls one in is named."""
    import click

    from duetflow.cli import main

    commands: list[list[str]] = [["--version"]]
    for name, cmd in main.commands.items():
        commands.append([name, "--help"])
        if isinstance(cmd, click.Group):
            commands += [[name, sub, "--help"] for sub in cmd.commands]
    found = _loaded(commands)
    assert len(found) == len(commands) > 15
    assert {k: v for k, v in found.items() if v} == {}


def test_the_probe_sees_a_heavy_import() -> None:
    """The instrument can fail: numpy imported before the command is reported."""
    assert _loaded([["--help"]], preload="numpy") == {"--help": ["numpy"]}
