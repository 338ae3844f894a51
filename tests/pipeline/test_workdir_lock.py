"""One run per work directory: a second run fails at once naming the first's pid; a lock left
by a killed run never blocks. Real processes hold the lock; nothing is simulated."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from duetflow.errors import WorkdirInUseError
from duetflow.flows.runner import resolve_config
from duetflow.pipeline.driver import run_pipeline, run_stage
from duetflow.pipeline.stage import RunState
from duetflow.pipeline.stages import INGEST
from duetflow.pipeline.workdir_lock import LOCK_NAME, holder, workdir_lock
from flow_helpers import write_config

DUETFLOW = str(Path(sys.executable).with_name("duetflow"))

_HOLD = textwrap.dedent(
    """
    import sys, time
    from duetflow.pipeline.workdir_lock import workdir_lock
    with workdir_lock(sys.argv[1]):
        print("held", flush=True)
        time.sleep(600)
    """
)


@pytest.fixture
def hold() -> Iterator[Callable[[Path], subprocess.Popen[str]]]:
    """Start a process that holds a work directory's lock (as a running run does)."""
    started: list[subprocess.Popen[str]] = []

    def _hold(workdir: Path) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, "-c", _HOLD, str(workdir)], stdout=subprocess.PIPE, text=True
        )
        started.append(proc)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        return proc

    yield _hold
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def test_a_second_run_fails_at_once_naming_the_first(
    tmp_path: Path, flow_samples: Path, hold: Callable[[Path], subprocess.Popen[str]]
) -> None:
    cfg = resolve_config(str(write_config(tmp_path / "run.yaml", flow_samples, scripts=False)))
    first = hold(cfg.workdir)
    assert holder(cfg.workdir) == first.pid
    one_stage = lambda: run_stage(INGEST, RunState(cfg), None)  # type: ignore[arg-type]  # noqa: E731
    for call in (lambda: run_pipeline(cfg), one_stage):
        with pytest.raises(WorkdirInUseError) as e:
            call()
        assert f"work directory {cfg.workdir} in use by pid {first.pid}" in str(e.value)
    assert sorted(p.name for p in Path(cfg.workdir).iterdir()) == [LOCK_NAME]  # nothing touched
    assert first.poll() is None


def test_the_cli_says_so_in_one_line_before_starting_anything(
    tmp_path: Path, flow_samples: Path, hold: Callable[[Path], subprocess.Popen[str]]
) -> None:
    cfg_path = write_config(tmp_path / "run.yaml", flow_samples, scripts=False)
    first = hold(tmp_path / "work")
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "PREFECT_HOME")}
    env.update(HOME=str(tmp_path / "user"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    done = subprocess.run(
        [DUETFLOW, "run", "-c", str(cfg_path), "--no-publish", "--no-progress"],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"error: work directory {tmp_path / 'work'} in use by pid ")
    assert f"pid {first.pid} " in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert not (tmp_path / "cache" / "duetflow" / "prefect").exists()  # no API was started


def test_a_lock_left_by_a_killed_run_does_not_block(
    tmp_path: Path, hold: Callable[[Path], subprocess.Popen[str]]
) -> None:
    work = tmp_path / "work"
    first = hold(work)
    with pytest.raises(WorkdirInUseError), workdir_lock(work):
        pass
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert holder(work) == first.pid  # the file still names it, but the kernel freed the lock
    with workdir_lock(work), workdir_lock(work):  # and it is re-entrant within one process
        assert holder(work) == os.getpid()
    assert holder(work) is None  # released: empty again
    assert (work / LOCK_NAME).read_bytes() == b""


def test_a_planted_link_at_the_lock_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    work = tmp_path / "work"
    work.mkdir()
    (work / LOCK_NAME).symlink_to(victim)
    with pytest.raises(WorkdirInUseError, match="symbolic link"), workdir_lock(work):
        pass
    assert victim.read_text() == "keep me"
