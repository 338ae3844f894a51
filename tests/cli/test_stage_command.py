"""`duetflow stage`: one command over every stage's spec (a run with it: tests/flows/
test_add_a_stage.py)."""

from __future__ import annotations

from click.testing import CliRunner

from duetflow.cli import main
from duetflow.pipeline.stages import STAGES


def test_the_stage_command_lists_the_pipeline_in_order() -> None:
    out = CliRunner().invoke(main, ["stage", "--list"])
    assert out.exit_code == 0, out.output
    names = [line.split()[0] for line in out.output.splitlines()]
    assert names == [s.name for s in STAGES]
    assert names[:3] == ["ingest", "process", "match"] and names[-1] == "publish"


def test_an_unknown_stage_or_a_wrong_target_is_a_usage_error_naming_it() -> None:
    unknown = CliRunner().invoke(main, ["stage", "nosuch"])
    assert unknown.exit_code == 2 and "no stage 'nosuch'" in unknown.output
    assert "ingest, process, match" in unknown.output
    not_a_spec = CliRunner().invoke(main, ["stage", "duetflow.pipeline.stages:STAGES"])
    assert not_a_spec.exit_code == 2 and "is a tuple, not a StageSpec" in not_a_spec.output
    missing = CliRunner().invoke(main, ["stage", "duetflow.pipeline.stages:NOPE"])
    assert missing.exit_code == 2 and "duetflow.pipeline.stages:NOPE" in missing.output
    bare = CliRunner().invoke(main, ["stage"])
    assert bare.exit_code == 2 and "missing NAME" in bare.output
