"""`duetflow corpora new NAME --package PKG --dest DIR`: a plug-in package outside duetflow's
namespace, installed with pip and used through its README's own commands."""

from __future__ import annotations

import importlib
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import duetflow
from duetflow.cli import main
from duetflow.corpora.scaffold_package import scaffold_package

SRC = Path(duetflow.__file__).resolve().parent.parent


def _run(cmd: list[str], env: dict[str, str], cwd: Path) -> str:
    res = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, f"{cmd}\n{res.stdout}\n{res.stderr}"
    return res.stdout + res.stderr


def _readme_commands(readme: str) -> list[str]:
    block = readme.split("```\n", 2)[1]
    return [line for line in block.splitlines() if line.strip()]


def test_package_scaffold_installs_and_ingests_its_own_samples(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dest = tmp_path / "fisher-plugin"
    monkeypatch.chdir(tmp_path)  # a relative --dest, as a user types it
    res = CliRunner().invoke(
        main, ["corpora", "new", "fisher", "--package", "fisher_corpus", "--dest",
               "fisher-plugin", "--layout", "textgrid"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    pyproject = (dest / "pyproject.toml").read_text()
    assert 'fisher = "fisher_corpus.adapter:FisherAdapter"' in pyproject
    assert 'fisher = "fisher_corpus.samples"' in pyproject
    assert not list(dest.rglob("duetflow*")), "nothing is written into duetflow's namespace"
    commands = _readme_commands((dest / "README.md").read_text())
    assert [c for c in res.output.splitlines() if c.startswith("  ")] == [
        f"  {c}" for c in commands
    ]
    # The README's commands, run as written but for where pip installs: a throwaway --target
    # folder on PYTHONPATH instead of the environment (so nothing outside tmp_path changes),
    # and this interpreter for `duetflow` / `python`.
    site = tmp_path / "site"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(SRC)])}
    env["TMPDIR"] = str(tmp_path)
    outputs = []
    for line in commands:
        argv = shlex.split(line.replace("/tmp/fisher-", f"{tmp_path}/fisher-"))
        if argv[:3] == ["pip", "install", "-e"]:
            assert argv[3] == "./fisher-plugin"  # a path to pip, not a project name
            argv = [sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                    "--no-build-isolation", "--target", str(site), argv[3]]  # fmt: skip
        elif argv[0] == "duetflow":
            argv = [sys.executable, "-c", "from duetflow.console import run; run()", *argv[1:]]
        elif argv[0] == "python":
            argv = [sys.executable, *argv[1:], "-p", "no:cacheprovider"]
        outputs.append(_run(argv, env, tmp_path))
    listed = outputs[1]
    assert "fisher  " in listed and "fisher_corpus.adapter:FisherAdapter  ok" in listed
    assert "fisher: found 3, kept 2, rejected 1" in outputs[3]
    assert "missing_annotation: 1" in outputs[3]
    assert "1 passed" in outputs[4]
    assert (tmp_path / "fisher-work" / "dialogues.parquet").is_file()
    # removed again: the target folder was the whole installation
    shutil.rmtree(site)
    gone = _run([sys.executable, "-c", "from duetflow.console import run; run()", "corpora",
                 "list"], env, tmp_path)  # fmt: skip
    assert "fisher" not in gone and "dailytalk" in gone


@pytest.mark.parametrize("layout", ["mono", "stereo", "textgrid", "eaf", "rttm"])
def test_every_layout_passes_its_generated_test(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str
) -> None:
    pkg = f"plug_{layout}"
    dest = tmp_path / "pkg"
    scaffold_package("toy", pkg, dest, layout=layout)
    monkeypatch.syspath_prepend(str(dest / "src"))
    monkeypatch.syspath_prepend(str(dest / "tests"))
    try:
        generated = importlib.import_module("test_toy")
        generated.test_toy_adapter_matches_truth(tmp_path / "data")
    finally:
        for mod in [m for m in sys.modules if m.startswith(pkg) or m == "test_toy"]:
            del sys.modules[mod]


def test_package_scaffold_refuses_duetflow_namespace_and_overwrites(tmp_path: Path) -> None:
    runner = CliRunner()
    bad = runner.invoke(main, ["corpora", "new", "x", "--package", "duetflow"])
    assert bad.exit_code == 2 and "outside duetflow's namespace" in bad.output
    args = ["corpora", "new", "x", "--package", "x_pkg", "--dest", str(tmp_path / "p")]
    assert runner.invoke(main, args).exit_code == 0
    again = runner.invoke(main, args)
    assert again.exit_code == 2 and "refusing to overwrite" in again.output
    lonely = runner.invoke(main, ["corpora", "new", "x", "--dest", str(tmp_path / "q")])
    assert lonely.exit_code == 2 and "--dest goes with --package" in lonely.output
