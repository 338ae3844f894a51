"""`duetflow corpora new`: the scaffold works once filled in, installed as a separate package."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from duetflow.cli import main
from duetflow.config import RunConfig
from duetflow.corpora import get_adapter, registry_entries
from duetflow.corpora.scaffold import LAYOUTS, class_name, render, scaffold
from duetflow.demo import generators
from duetflow.pipeline.ingest import ingest
from duetflow.records.manifest import iter_dialogues


def test_cli_new_writes_three_files_and_refuses_to_overwrite(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(main, ["corpora", "new", "switchboard", "--project", str(tmp_path)])
    assert res.exit_code == 0, res.output
    files = [
        tmp_path / "src/duetflow/corpora/switchboard.py",
        tmp_path / "src/duetflow/demo/switchboard.py",
        tmp_path / "tests/corpora/test_switchboard.py",
    ]
    assert all(p.is_file() for p in files)
    assert 'switchboard = "duetflow.corpora.switchboard:SwitchboardAdapter"' in res.output
    assert 'switchboard = "duetflow.demo.switchboard"' in res.output
    again = runner.invoke(main, ["corpora", "new", "switchboard", "--project", str(tmp_path)])
    assert again.exit_code == 2 and "refusing to overwrite" in again.output
    bad = runner.invoke(main, ["corpora", "new", "Bad-Name", "--project", str(tmp_path)])
    assert bad.exit_code == 2 and "lowercase Python identifier" in bad.output


@pytest.mark.parametrize("layout", LAYOUTS)
def test_scaffolded_files_are_lint_clean(tmp_path: Path, layout: str) -> None:
    out = scaffold("switchboard", tmp_path, layout=layout)
    res = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--line-length", "100",
         "--select", "E,F,W,B,UP,SIM,RUF", str(out.adapter), str(out.samples), str(out.test)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The scaffolds of corpora ``toy`` (mono) and ``phone`` (stereo) as a separately installed
    package ``toy_corpus``, with their adapters and sample generators as entry points."""
    site = tmp_path / "site"
    pkg = site / "toy_corpus"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    corpora, samples = [], []
    for name, layout in (("toy", "mono"), ("phone", "stereo")):
        files = render(name, f"toy_corpus.{name}", f"toy_corpus.{name}_samples", layout)
        # "filling it in": these corpora are Mandarin at 16 kHz
        adapter = files["adapter"].replace('"language": "en",', '"language": "zh",')
        assert adapter != files["adapter"]
        (pkg / f"{name}.py").write_text(adapter)
        (pkg / f"{name}_samples.py").write_text(files["samples"])
        (pkg / f"test_{name}.py").write_text(files["test"])
        corpora.append(f"{name} = toy_corpus.{name}:{class_name(name)}")
        samples.append(f"{name} = toy_corpus.{name}_samples")
    dist = site / "toy_corpus-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-corpus\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[duetflow.corpora]\n" + "\n".join(corpora) + "\n\n[duetflow.samples]\n"
        + "\n".join(samples) + "\n"
    )  # fmt: skip
    monkeypatch.syspath_prepend(str(site))
    registry_entries(refresh=True)
    generators(refresh=True)
    yield site
    for mod in [m for m in sys.modules if m.startswith("toy_corpus")]:
        del sys.modules[mod]
    monkeypatch.undo()
    registry_entries(refresh=True)
    generators(refresh=True)


def test_filled_in_scaffold_works_end_to_end(plugin: Path, tmp_path: Path) -> None:
    # the generated tests pass as generated
    for name in ("toy", "phone"):
        generated = importlib.import_module(f"toy_corpus.test_{name}")
        getattr(generated, f"test_{name}_adapter_matches_truth")(tmp_path / "gen" / name)
    # found through the entry points, like a corpus shipped in another package
    assert get_adapter("toy").__name__ == "ToyAdapter"
    res = CliRunner().invoke(main, ["samples", "list"])
    assert "toy  -> toy/" in res.output and "phone  -> phone/" in res.output
    res = CliRunner().invoke(
        main, ["samples", "make", str(tmp_path / "data"), "--seed", "3", "--scale", "2",
               "--only", "toy", "--only", "phone"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    truth = json.loads((tmp_path / "data" / "truth.json").read_text())
    assert truth["corpora"]["toy"]["dialogues"] == 4 and truth["corpora"]["phone"]["broken"] == 2
    # the stereo layout: a swapped file is caught by the energy check, the rest ingested
    phone = ingest("phone", tmp_path / "data" / "phone", tmp_path / "phone-work", RunConfig())
    assert phone.kept == 4 and phone.by_reason == {"channel_mismatch": 2}
    phone_dialogues = list(iter_dialogues(tmp_path / "phone-work"))
    assert {d.source.kind for d in phone_dialogues} == {"multichannel"}
    assert {d.licence for d in phone_dialogues} == {"LicenseRef-phone-TODO"}
    truth = {"dialogues": {k: v for k, v in truth["dialogues"].items() if v["corpus"] == "toy"}}
    report = ingest("toy", tmp_path / "data" / "toy", tmp_path / "work", RunConfig())
    assert report.kept == len(truth["dialogues"]) == 4
    assert report.by_reason == {"bad_timing": 2}
    assert report.found == report.kept + report.rejected
    dialogues = list(iter_dialogues(tmp_path / "work"))
    assert {d.language for d in dialogues} == {"zh"}
    for d in dialogues:
        want = truth["dialogues"][d.id]["turns"]
        assert [(t.speaker, t.start, t.end) for t in d.turns] == [
            (w["speaker"], w["start"], w["end"]) for w in want
        ]
