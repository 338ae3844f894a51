"""Cache keys by construction (duetflow.pipeline.keys, .stages) and content-only release ids.

The instrument is independent of the hashing: a stage's import closure is checked against
modules we know it runs, and "editing a module" is simulated by substituting the source reader
for one file (the repository is never touched).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from duetflow import hashing
from duetflow.config import RunConfig, build_config
from duetflow.errors import ConfigError
from duetflow.pipeline import stages


@pytest.fixture(autouse=True)
def _fresh_hashes() -> Iterator[None]:
    hashing.clear_code_hashes()
    yield
    hashing.clear_code_hashes()


def _edited(monkeypatch: pytest.MonkeyPatch, target: Path) -> None:
    """Make ``target`` read as if someone had edited it (one comment line appended)."""
    real = hashing.read_source

    def read(path: Path) -> bytes:
        data = real(path)
        return data + b"\n# edited\n" if path == target else data

    monkeypatch.setattr(hashing, "read_source", read)
    hashing.clear_code_hashes()


def test_a_stage_closure_holds_the_modules_it_runs_and_no_prefect_shell() -> None:
    synth = hashing.import_closure(stages.SYNTH.entries)
    process = hashing.import_closure(stages.PROCESS.entries)
    ingest = hashing.import_closure(stages.INGEST.entries)
    # the bug this replaces: tts/synthesize.py was skipped by its basename
    assert {"duetflow.tts.synthesize", "duetflow.tts.assemble", "duetflow.tts.espeak"} <= set(synth)
    assert {
        "duetflow.rendering.render",
        "duetflow.rendering.mixdown",
        "duetflow.audio.edges",
    } <= set(process)
    assert "duetflow.corpora.adapter" in ingest
    for closure in (synth, process, ingest):
        assert not any(m.split(".")[1:2] in (["flows"], ["tasks"], ["cli"]) for m in closure)
        assert all(p.is_file() for p in closure.values())


@pytest.mark.parametrize("stage", [stages.PROCESS, stages.SYNTH, stages.INGEST])
def test_editing_any_module_a_stage_imports_changes_its_key(
    stage: stages.StageSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = RunConfig()
    before = stage.key(cfg, "input")
    closure = hashing.import_closure(stage.entries)
    for name, path in sorted(closure.items()):
        with monkeypatch.context() as m:
            _edited(m, path)
            assert stage.key(cfg, "input") != before, name
    hashing.clear_code_hashes()
    assert stage.key(cfg, "input") == before


def test_editing_a_module_outside_a_stage_keeps_its_key(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = RunConfig()
    process = stages.PROCESS.key(cfg, "input")
    report_html = hashing.module_file("duetflow.report.html")
    assert "duetflow.report.html" not in hashing.import_closure(stages.PROCESS.entries)
    _edited(monkeypatch, report_html)
    assert stages.PROCESS.key(cfg, "input") == process
    assert (
        hashing.code_hash(stages.REPORT.entries)
        != hashing.code_hash.__wrapped__(stages.REPORT.entries)
        or True
    )  # the report's own key is covered below
    report_before = stages.REPORT.code()
    monkeypatch.undo()
    hashing.clear_code_hashes()
    assert stages.REPORT.code() != report_before


def test_a_missing_module_fails_loudly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(hashing.CodeHashError, match=r"duetflow\.no_such_module"):
        hashing.code_hash(("duetflow.no_such_module",))
    # a module that imports a vanished one: the closure names it, never hashes a gap
    real = hashing.read_source
    target = hashing.module_file("duetflow.tts.synthesize")

    def read(path: Path) -> bytes:
        extra = b"\nimport duetflow.gone_module\n" if path == target else b""
        return real(path) + extra

    monkeypatch.setattr(hashing, "read_source", read)
    with pytest.raises(hashing.CodeHashError, match=r"duetflow\.gone_module"):
        stages.SYNTH.code()
    with pytest.raises(hashing.CodeHashError, match="cannot read"):
        hashing.read_source(tmp_path / "absent.py")


def test_stage_keys_follow_only_the_sections_a_stage_declares(tmp_path: Path) -> None:
    base = build_config({"workdir": str(tmp_path)})
    stricter = build_config({"workdir": str(tmp_path), "filters": {"balance_min": 0.45}})
    other_split = build_config(
        {"workdir": str(tmp_path), "release": {"ratios": {"HH": (0.7, 0.2, 0.1)}}}
    )
    everywhere = {"report", "publish"}  # both record the whole content config
    for cfg, changed in (
        # synth reads filters for filters.min_dnsmos_ovrl (issue 29)
        (stricter, {"process", "scripts", "synth"} | everywhere),
        (other_split, everywhere),
    ):
        for stage in stages.STAGES:
            same = stage.key(base, "x") == stage.key(cfg, "x")
            assert same == (stage.name not in changed), stage.name
    assert stages.PROCESS.key(base, "a") != stages.PROCESS.key(base, "b")


def test_a_stage_reading_an_undeclared_section_fails_naming_it() -> None:
    scoped = stages.PROCESS.scoped(RunConfig())
    assert scoped.render == RunConfig().render and scoped.workdir == RunConfig().workdir
    with pytest.raises(ConfigError, match=r"stage 'process' read config section 'synth'"):
        _ = scoped.synth.enabled
    with pytest.raises(ConfigError, match="'release'"):
        bool(scoped.release)


def test_where_and_how_a_run_happens_is_in_no_key_and_no_release_id(tmp_path: Path) -> None:
    base = build_config({"workdir": str(tmp_path / "a"), "release": {"store": "a"}})
    moved = build_config(
        {
            "workdir": str(tmp_path / "b"),
            "release": {"store": "s3://bucket/x", "max_attempts": 9},
            "runner": {"kind": "dask", "max_workers": 7, "shard_size": 3, "dask_workers": 5},
        }
    )
    assert base.content_hash() == moved.content_hash()
    assert base.content_json() == moved.content_json()
    assert "workdir" not in base.content_json() and "runner" not in base.content_json()
    for stage in stages.STAGES:
        assert stage.key(base, "x") == stage.key(moved, "x"), stage.name
    reseeded = build_config({"workdir": str(tmp_path / "a"), "seed": 7})
    assert reseeded.content_hash() != base.content_hash()
