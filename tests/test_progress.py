"""Progress: stages report done/total; the CLI draws them on stderr, only when asked or a tty."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from duetflow.cli import main
from duetflow.cli.progress import _BarHandler, progress_bars
from duetflow.config import build_config
from duetflow.corpora import get_adapter
from duetflow.pipeline.ingest import ingest
from duetflow.progress import LOGGER, Progress, emit, track


class _Recorder(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.seen: list[tuple[str, int, int | None]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append((record.stage, record.done, record.total))  # type: ignore[attr-defined]


@pytest.fixture
def recorder() -> Iterator[_Recorder]:
    logger = logging.getLogger(LOGGER)
    rec = _Recorder()
    old = logger.level
    logger.addHandler(rec)
    logger.setLevel(logging.INFO)
    try:
        yield rec
    finally:
        logger.removeHandler(rec)
        logger.setLevel(old)


def test_progress_is_silent_unless_someone_listens(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    emit("ingest", "x", 1, 2)
    assert not [r for r in caplog.records if r.name == LOGGER]  # never reaches app handlers


def test_counters_report_every_step(recorder: _Recorder) -> None:
    bar = Progress("pull", "train", 3)
    bar.advance()
    bar.advance(2)
    assert list(track("abc", "publish", total=3)) == ["a", "b", "c"]
    assert recorder.seen[:3] == [("pull train", 0, 3), ("pull train", 1, 3), ("pull train", 3, 3)]
    assert recorder.seen[-1] == ("publish", 3, 3)


def test_ingest_reports_items_against_the_adapters_count(
    sample_root: Path, tmp_path: Path, recorder: _Recorder
) -> None:
    root = sample_root / "dailytalk"
    total = get_adapter("dailytalk")(root).count_sources()
    report = ingest("dailytalk", root, tmp_path / "w", build_config({}))
    mine = [s for s in recorder.seen if s[0] == "ingest dailytalk"]
    assert total == report.found and mine[-1] == ("ingest dailytalk", report.found, total)
    assert [d for _, d, _ in mine] == list(range(report.found + 1))


def test_bars_go_to_stderr_only_when_enabled(sample_root: Path, tmp_path: Path) -> None:
    args = ["ingest", "--corpus", "dailytalk", "--root", str(sample_root / "dailytalk")]
    on = CliRunner().invoke(main, [*args, "--workdir", str(tmp_path / "a"), "--progress"])
    assert on.exit_code == 0, on.output
    assert "ingest dailytalk" in on.stderr and "13/13" in on.stderr
    assert "ingest dailytalk" not in on.stdout and "found 13" in on.stdout
    off = CliRunner().invoke(main, [*args, "--workdir", str(tmp_path / "b")])  # not a tty
    assert off.exit_code == 0 and "13/13" not in off.stderr


def test_one_bar_per_stage_and_label() -> None:
    from rich.console import Console
    from rich.progress import Progress as RichProgress

    progress = RichProgress(console=Console(file=io.StringIO()))
    handler = _BarHandler(progress)
    logger = logging.getLogger(LOGGER)
    logger.addHandler(handler)
    old = logger.level
    logger.setLevel(logging.INFO)
    try:
        emit("process", "dailytalk", 1, 3)
        emit("process", "dailytalk", 3, 3)
        emit("synth", "ph", 2, None)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)
    tasks = {t.description: t for t in progress.tasks}
    assert set(tasks) == {"process dailytalk", "synth ph"}
    assert tasks["process dailytalk"].completed == 3 and tasks["process dailytalk"].total == 3
    assert tasks["synth ph"].completed == 2
    before = list(logger.handlers)
    with progress_bars(False):  # disabled: nothing attached
        assert logger.handlers == before
