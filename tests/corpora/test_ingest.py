"""Ingest stage, CLI commands and the entry-point registry (incl. broken and foreign plugins)."""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from duetflow.cli import main
from duetflow.config import RunConfig
from duetflow.corpora import available_adapters, get_adapter, registry_entries, registry_errors
from duetflow.errors import ConfigError
from duetflow.pipeline.ingest import ingest
from duetflow.records.locations import stamp_root
from duetflow.records.manifest import iter_dialogues, iter_rejections

from .helpers import truth_for

ROOTS = {
    "dailytalk": "dailytalk",
    "iemocap": "IEMOCAP_full_release",
    "magicdata_ramc": "MagicData-RAMC",
}


@pytest.mark.parametrize("corpus", sorted(ROOTS))
def test_ingest_writes_what_the_adapter_yields(
    sample_root: Path, tmp_path: Path, corpus: str
) -> None:
    expected, broken = truth_for(sample_root, corpus)
    root = sample_root / ROOTS[corpus]
    report = ingest(corpus, root, tmp_path, RunConfig())
    assert report.found == report.kept + report.rejected == len(expected) + len(broken)
    assert report.kept == len(expected)
    assert report.by_reason == dict(Counter(broken.values()))
    written = list(iter_dialogues(tmp_path))
    adapter = get_adapter(corpus)
    direct = [d for d in adapter(root).scan() if not hasattr(d, "reason")]
    # lossless round trip through the intake tables, plus the licence and the corpus root
    # (for the later stages, never published: duetflow.records.locations) ingest stamps on
    assert written == [stamp_root(replace(d, licence=adapter.licence), root.resolve())
                       for d in direct]  # fmt: skip
    assert adapter.licence and {d.licence for d in written} == {adapter.licence}
    assert {r.item_id: r.reason for r in iter_rejections(tmp_path)} == broken
    assert {p.name for p in tmp_path.iterdir()} == {
        "dialogues.parquet",
        "turns.parquet",
        "rejections.parquet",
    }


def test_ingest_is_deterministic(sample_root: Path, tmp_path: Path) -> None:
    root = sample_root / "MagicData-RAMC"
    ingest("magicdata_ramc", root, tmp_path / "a", RunConfig())
    ingest("magicdata_ramc", root, tmp_path / "b", RunConfig())
    for name in ("dialogues.parquet", "turns.parquet", "rejections.parquet"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_cli_ingest_counts_and_exit_codes(sample_root: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    args = ["ingest", "--corpus", "dailytalk", "--root", str(sample_root / "dailytalk")]
    res = runner.invoke(main, [*args, "--workdir", str(tmp_path / "w")])
    assert res.exit_code == 0, res.output
    assert "dailytalk: found 13, kept 6, rejected 7" in res.output
    assert "rejected path_escape: 1" in res.output
    bad = runner.invoke(main, ["ingest", "--corpus", "dailytalk", "--root", str(tmp_path / "no"),
                               "--workdir", str(tmp_path / "x")])  # fmt: skip
    assert bad.exit_code == 2 and "not a directory" in bad.output
    unknown = runner.invoke(main, ["ingest", "--corpus", "nope", "--root", str(sample_root),
                                   "--workdir", str(tmp_path / "x")])  # fmt: skip
    # the error lists what is registered, whatever plug-ins are installed
    listed = ", ".join(sorted(available_adapters()))
    assert unknown.exit_code == 2 and f"available: {listed}" in unknown.output
    wrong = runner.invoke(main, ["ingest", "--corpus", "iemocap", "--root", str(sample_root),
                                 "--workdir", str(tmp_path / "x")])  # fmt: skip
    assert wrong.exit_code == 2 and "Session" in wrong.output
    assert not (tmp_path / "x").exists()  # nothing written when the run cannot proceed
    opt = runner.invoke(main, [*args, "--workdir", str(tmp_path / "y"), "-o", "sample_rate=22050"])
    assert opt.exit_code == 0 and "kept 0" in opt.output


def test_cli_corpora_list() -> None:
    res = CliRunner().invoke(main, ["corpora", "list"])
    assert res.exit_code == 0
    for name in ("dailytalk", "iemocap", "magicdata_ramc"):
        assert name in res.output


# --- plugins from another package ---------------------------------------------------------------

PLUGIN = '''
from duetflow.corpora.adapter import CorpusAdapter
from duetflow.corpora.dailytalk import DailyTalkAdapter


class Twice(DailyTalkAdapter):
    """Yields every DailyTalk dialogue twice: ingest must quarantine the copy."""

    name = "twice"

    def scan(self):
        for item in super().scan():
            yield item
            if not hasattr(item, "reason"):
                yield item


class NotAnAdapter:
    pass
'''


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    site = tmp_path / "site"
    dist = site / "duetflow_test_plugins-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: duetflow-test-plugins\nVersion: 0.1\n"
    )
    (dist / "entry_points.txt").write_text(
        textwrap.dedent(
            """
            [duetflow.corpora]
            twice = duetflow_test_plugin:Twice
            broken = duetflow_test_missing_module:Adapter
            notone = duetflow_test_plugin:NotAnAdapter
            """
        )
    )
    (site / "duetflow_test_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(site))
    registry_entries(refresh=True)
    yield site
    monkeypatch.undo()
    registry_entries(refresh=True)


def test_registry_finds_foreign_plugins_and_survives_broken_ones(
    plugins: Path, sample_root: Path, tmp_path: Path
) -> None:
    adapters = available_adapters()
    assert {"dailytalk", "iemocap", "magicdata_ramc", "twice"} <= set(adapters)
    errors = registry_errors()
    assert "duetflow_test_missing_module" in errors["broken"]
    assert "not a CorpusAdapter" in errors["notone"]
    with pytest.raises(ConfigError, match="failed to load"):
        get_adapter("broken")
    res = CliRunner().invoke(main, ["corpora", "list"])
    assert res.exit_code == 0
    assert "broken" in res.output and "BROKEN" in res.output and "twice" in res.output
    report = ingest("twice", sample_root / "dailytalk", tmp_path / "w", RunConfig())
    assert report.kept == 6 and report.by_reason["duplicate_id"] == 6 + 1  # + the broken d10
    assert report.found == report.kept + report.rejected == 19
