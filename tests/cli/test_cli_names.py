"""One name per thing on the command line: `duetflow demo --dest`, `--out` its old name."""

from __future__ import annotations

from click.testing import CliRunner

from duetflow.cli import main


def test_demo_takes_dest_and_out_is_its_deprecated_alias() -> None:
    helped = CliRunner().invoke(main, ["demo", "--help"])
    assert "--dest DIRECTORY" in helped.output and "--out" not in helped.output
    both = CliRunner().invoke(main, ["demo", "--out", "a", "--dest", "b"])
    assert both.exit_code == 2 and "--out is the old name of --dest: use one" in both.output
