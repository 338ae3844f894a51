"""`duetflow process` and `duetflow synthesize` are the pipeline's stages, not copies of them.

A plain pipeline run over the DailyTalk sample (+ scripts) and the two commands over the same
intake / voices with the same config must write the same bytes: every table, ``stats.json`` and
every audio file of the stage's output. Only the commit marker (``result.json``, which names
its own path) and the command's voice cache are not stage output.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from duetflow.cli import main
from duetflow.config import load_config
from duetflow.demo import make_samples
from duetflow.pipeline.commands import synthesize
from duetflow.pipeline.driver import PipelineResult, run_pipeline
from duetflow.progress import LOGGER

pytestmark = pytest.mark.slow

NOT_OUTPUT = ("result.json", "voice_cache/")


def _digest(root: Path) -> dict[str, str]:
    found = {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }
    return {k: v for k, v in found.items() if not k.startswith(NOT_OUTPUT)}


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, PipelineResult]:
    root = tmp_path_factory.mktemp("commands")
    samples = root / "samples"
    make_samples(samples, seed=0, scale=1, include=["dailytalk", "scripts"])
    data = {
        "workdir": str(root / "work"),
        "corpora": [{"name": "dailytalk", "root": str(samples / "dailytalk")}],
        "synth": {
            "enabled": True,
            "scripts": str(samples / "scripts"),
            "voice_categories": ["HM", "HH"],
        },
        "runner": {"shard_size": 2},
    }
    path = root / "run.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return root, path, run_pipeline(load_config(path), publish=False)


def _invoke(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_duetflow_process_writes_the_bytes_of_the_process_stage(
    ran: tuple[Path, Path, PipelineResult],
) -> None:
    root, config, result = ran
    (intake,) = [s for s in result.steps if s.stage == "ingest"]
    (stage,) = result.processed
    out = root / "cli-rendered"
    text = _invoke("process", "--intake", intake.path, "--workdir", str(out), "-c", str(config))
    expected = _digest(Path(stage.path))
    assert sum(k.startswith("audio/") for k in expected) == stage.kept > 0
    assert {"dialogues.parquet", "turns.parquet", "rejections.parquet", "stats.json"} <= set(
        expected
    )
    assert _digest(out) == expected
    assert f"{stage.kept} rendered" in text
    assert not (root / ".cli-rendered.steps").exists()  # the scratch shards are gone


def test_duetflow_synthesize_writes_the_bytes_of_the_synth_stage(
    ran: tuple[Path, Path, PipelineResult],
) -> None:
    root, config, result = ran
    (voices,) = [m.path for m in result.merged if m.label != "ph"]
    (ph,) = [m for m in result.merged if m.label == "ph"]
    out = root / "cli-ph"
    text = _invoke(
        "synthesize", "--voices", voices, "--workdir", str(out), "-c", str(config), "--no-progress"
    )
    expected = _digest(Path(ph.path))
    assert sum(k.startswith("audio/") for k in expected) == ph.kept > 0
    assert _digest(out) == expected
    assert f"-> {ph.kept} PH dialogues, {ph.rejected} rejected" in text
    assert (out / "voice_cache").is_dir()  # the command's own cache stays beside its output


class _Seen(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.seen: list[tuple[str, int, int | None]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append((record.stage, record.done, record.total))  # type: ignore[attr-defined]


def test_synthesize_announces_its_jobs_before_the_first_is_done(
    ran: tuple[Path, Path, PipelineResult],
) -> None:
    """The progress total of ``synthesize`` is known up front and is what gets done: the
    pipeline's synth shards' ``found`` (one job per script and backend of its language)."""
    root, config, result = ran
    (voices,) = [m.path for m in result.merged if m.label != "ph"]
    jobs = sum(s.found for s in result.steps if s.stage == "synth")
    assert jobs > 0
    logger = logging.getLogger(LOGGER)
    seen, level = _Seen(), logger.level
    logger.addHandler(seen)
    logger.setLevel(logging.INFO)
    try:
        synthesize(None, Path(voices), load_config(config), root / "progress-ph")
    finally:
        logger.removeHandler(seen)
        logger.setLevel(level)
    mine = [s for s in seen.seen if s[0] == "synthesize progress-ph"]
    assert mine[0] == ("synthesize progress-ph", 0, jobs)
    assert mine[-1] == ("synthesize progress-ph", jobs, jobs)
