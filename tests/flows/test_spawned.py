"""startup_failure: why a background process this one started will not answer."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from duetflow.flows.spawned import startup_failure


def test_an_exited_process_is_named_with_its_code_and_log(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    proc.wait(30)
    log = tmp_path / "x.log"
    msg = startup_failure(proc, "run host", time.monotonic() + 60, 60, log)
    assert msg == f"run host exited with code 3; see {log}"


def test_a_live_process_fails_only_past_its_deadline(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        log = tmp_path / "s.log"
        assert startup_failure(proc, "prefect server", time.monotonic() + 60, 60, log) is None
        late = startup_failure(proc, "prefect server", time.monotonic() - 1, 5, log)
        assert late == f"prefect server did not answer within 5 s; see {log}"
        assert proc.poll() is None  # it only says why; stopping it is the caller's
    finally:
        proc.kill()
        proc.wait(30)
