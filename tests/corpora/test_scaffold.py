"""`duetflow corpora new`: the scaffold works once filled in, installed as a separate package."""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from duetflow.cli import main
from duetflow.config import RunConfig
from duetflow.corpora import get_adapter, registry_entries
from duetflow.corpora.scaffold import class_name, render, scaffold
from duetflow.ingest import ingest


def test_cli_new_writes_three_files_and_refuses_to_overwrite(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(main, ["corpora", "new", "switchboard", "--project", str(tmp_path)])
    assert res.exit_code == 0, res.output
    files = [
        tmp_path / "src/duetflow/corpora/switchboard.py",
        tmp_path / "src/duetflow/samples/switchboard.py",
        tmp_path / "tests/corpora/test_switchboard.py",
    ]
    assert all(p.is_file() for p in files)
    assert 'switchboard = "duetflow.corpora.switchboard:SwitchboardAdapter"' in res.output
    again = runner.invoke(main, ["corpora", "new", "switchboard", "--project", str(tmp_path)])
    assert again.exit_code == 2 and "refusing to overwrite" in again.output
    bad = runner.invoke(main, ["corpora", "new", "Bad-Name", "--project", str(tmp_path)])
    assert bad.exit_code == 2 and "lowercase Python identifier" in bad.output


def test_scaffolded_files_are_lint_clean(tmp_path: Path) -> None:
    out = scaffold("switchboard", tmp_path)
    res = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--line-length", "100",
         "--select", "E,F,W,B,UP,SIM,RUF", str(out.adapter), str(out.samples), str(out.test)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The scaffold of corpus ``toy`` as a separately installed package ``toy_corpus``."""
    site = tmp_path / "site"
    pkg = site / "toy_corpus"
    pkg.mkdir(parents=True)
    files = render("toy", "toy_corpus.adapter", "toy_corpus.samples")
    # "filling it in": this corpus is Mandarin at 16 kHz
    adapter = files["adapter"].replace('"language": "en",', '"language": "zh",')
    assert adapter != files["adapter"]
    (pkg / "__init__.py").write_text("")
    (pkg / "adapter.py").write_text(adapter)
    (pkg / "samples.py").write_text(files["samples"])
    (pkg / "test_toy.py").write_text(files["test"])
    dist = site / "toy_corpus-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-corpus\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        f"[duetflow.corpora]\ntoy = toy_corpus.adapter:{class_name('toy')}\n"
    )
    monkeypatch.syspath_prepend(str(site))
    registry_entries(refresh=True)
    yield site
    for mod in [m for m in sys.modules if m.startswith("toy_corpus")]:
        del sys.modules[mod]
    monkeypatch.undo()
    registry_entries(refresh=True)


def test_filled_in_scaffold_works_end_to_end(plugin: Path, tmp_path: Path) -> None:
    # the generated test passes as generated
    generated = importlib.import_module("toy_corpus.test_toy")
    generated.test_toy_adapter_matches_truth(tmp_path / "gen")
    # found through the entry point, like a corpus shipped in another package
    assert get_adapter("toy").__name__ == "ToyAdapter"
    samples = importlib.import_module("toy_corpus.samples")
    truth = samples.generate(tmp_path / "data", seed=3, scale=2)
    report = ingest("toy", tmp_path / "data" / "toy", tmp_path / "work", RunConfig())
    assert report.kept == len(truth["dialogues"]) == 4
    assert report.by_reason == {"bad_timing": 2}
    assert report.found == report.kept + report.rejected
    from duetflow.manifest import iter_dialogues

    dialogues = list(iter_dialogues(tmp_path / "work"))
    assert {d.language for d in dialogues} == {"zh"}
    for d in dialogues:
        want = truth["dialogues"][d.id]["turns"]
        assert [(t.speaker, t.start, t.end) for t in d.turns] == [
            (w["speaker"], w["start"], w["end"]) for w in want
        ]
