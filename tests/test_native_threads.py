"""The ``duetflow`` command starts with one native compute thread per library, Arrow on the
system allocator and glibc malloc keeping freed buffers for reuse unless told otherwise, set before
numpy and pyarrow load; the deployments' work pool says the same."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from duetflow.native_threads import (
    ARROW_POOL,
    ARROW_POOL_VAR,
    DEFAULT_THREADS,
    MALLOC_VARS,
    THREAD_VARS,
    default_threads,
    process_defaults,
)

ROOT = Path(__file__).resolve().parents[1]

# Runs the console entry point in a fresh interpreter and reports each thread variable as it
# stood when numpy was first imported (a meta-path hook sees the import before numpy runs).
PROBE = r"""
import json, os, sys
seen = {}
class Hook:
    def find_spec(self, name, path=None, target=None):
        if name == "numpy" and "at_numpy" not in seen:
            seen["at_numpy"] = {k: os.environ.get(k) for k in VARS}
        return None
VARS = json.loads(sys.argv[1])
sys.meta_path.insert(0, Hook())
sys.argv = ["duetflow", "process", "--help"]
from duetflow.console import run
try:
    run()
except SystemExit:
    pass
import numpy  # noqa: F401  (in case the command itself did not)
print(json.dumps(seen["at_numpy"]))
"""


def _probe(env: dict[str, str]) -> dict[str, str | None]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(list(THREAD_VARS))],
        env=env, capture_output=True, text=True, check=True, cwd=ROOT,
    )  # fmt: skip
    result: dict[str, str | None] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _clean_env() -> dict[str, str]:
    drop = (*THREAD_VARS, ARROW_POOL_VAR, *MALLOC_VARS)
    return {k: v for k, v in os.environ.items() if k not in drop}


# The backend of Arrow's default pool in a fresh ``duetflow`` command (pyarrow loaded after it).
POOL_PROBE = r"""
import json, sys
sys.argv = ["duetflow", "process", "--help"]
from duetflow.console import run
try:
    run()
except SystemExit:
    pass
import pyarrow
print(json.dumps(pyarrow.default_memory_pool().backend_name))
"""


def _pool(env: dict[str, str]) -> str:
    out = subprocess.run(
        [sys.executable, "-c", POOL_PROBE], env=env, capture_output=True, text=True, check=True,
        cwd=ROOT,
    )  # fmt: skip
    name: str = json.loads(out.stdout.strip().splitlines()[-1])
    return name


def test_default_threads_sets_only_what_is_unset() -> None:
    env = {"OMP_NUM_THREADS": "8", "MKL_NUM_THREADS": ""}
    added = default_threads(env)
    assert added == {"OPENBLAS_NUM_THREADS": DEFAULT_THREADS}
    assert env == {"OMP_NUM_THREADS": "8", "MKL_NUM_THREADS": "", "OPENBLAS_NUM_THREADS": "1"}
    assert default_threads(env) == {}


def test_process_defaults_add_arrows_pool_only_where_unset() -> None:
    env = {"OMP_NUM_THREADS": "8"}
    added = process_defaults(env)
    assert added == {
        "OPENBLAS_NUM_THREADS": DEFAULT_THREADS, "MKL_NUM_THREADS": DEFAULT_THREADS,
        ARROW_POOL_VAR: ARROW_POOL, **MALLOC_VARS,
    }  # fmt: skip
    assert env["OMP_NUM_THREADS"] == "8"
    assert process_defaults(env) == {}
    mine = {ARROW_POOL_VAR: "jemalloc", "MALLOC_TRIM_THRESHOLD_": "131072"}
    added = process_defaults(mine)
    assert ARROW_POOL_VAR not in added and mine[ARROW_POOL_VAR] == "jemalloc"
    assert "MALLOC_TRIM_THRESHOLD_" not in added and mine["MALLOC_TRIM_THRESHOLD_"] == "131072"
    assert added["MALLOC_MMAP_THRESHOLD_"] == MALLOC_VARS["MALLOC_MMAP_THRESHOLD_"]


def test_the_command_runs_arrow_on_the_system_allocator() -> None:
    # pyarrow's wheels default to mimalloc, which keeps freed pages: the job's RSS grew with
    # the corpus (docs/performance.md, *Whole-pipeline memory*)
    assert _pool(_clean_env()) == "system"


def test_the_command_keeps_an_arrow_pool_the_user_chose() -> None:
    assert _pool({**_clean_env(), ARROW_POOL_VAR: "mimalloc"}) == "mimalloc"


def test_the_command_sets_one_thread_before_numpy_loads() -> None:
    assert _probe(_clean_env()) == dict.fromkeys(THREAD_VARS, DEFAULT_THREADS)


def test_the_command_keeps_a_thread_count_the_user_set() -> None:
    env = {**_clean_env(), "OMP_NUM_THREADS": "3"}
    assert _probe(env) == {**dict.fromkeys(THREAD_VARS, DEFAULT_THREADS), "OMP_NUM_THREADS": "3"}


def test_importing_the_library_changes_no_environment() -> None:
    names = [*THREAD_VARS, ARROW_POOL_VAR, *MALLOC_VARS]
    code = (
        "import json, os; import duetflow, duetflow.cli, duetflow.pipeline.driver; "
        f"print(json.dumps([os.environ.get(k) for k in {names!r}]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=_clean_env(), capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [None] * len(names)


def test_the_deployments_work_pool_runs_one_thread_per_library() -> None:
    doc = yaml.safe_load((ROOT / "prefect.yaml").read_text(encoding="utf-8"))
    env = doc["definitions"]["work_pools"]["process_pool"]["job_variables"]["env"]
    assert {k: env.get(k) for k in THREAD_VARS} == dict.fromkeys(THREAD_VARS, DEFAULT_THREADS)
    assert env.get(ARROW_POOL_VAR) == ARROW_POOL
    assert {k: env.get(k) for k in MALLOC_VARS} == MALLOC_VARS


_GLIBC = (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")

# A window's pattern, in a fresh ``duetflow`` command (or a bare interpreter): two whole-length
# float32 buffers (3 MB each) filled, then both freed, window after window; the minor page faults
# of the last 20 windows (every page a freshly mapped or re-grown buffer touches is one).
FAULT_PROBE = r"""
import json, resource, sys
if sys.argv[1] == "command":
    sys.argv = ["duetflow", "process", "--help"]
    from duetflow.console import run
    try:
        run()
    except SystemExit:
        pass
import numpy as np
src = np.ones(3 << 18, np.float32)
def window():
    a = np.empty_like(src); a[:] = src
    b = np.empty_like(src); b[:] = a
    return float(b[-1])
for _ in range(5):
    window()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    window()
print(json.dumps(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before))
"""


def _faults(how: str, env: dict[str, str]) -> int:
    out = subprocess.run(
        [sys.executable, "-c", FAULT_PROBE, how], env=env, capture_output=True, text=True,
        check=True, cwd=ROOT,
    )  # fmt: skip
    n: int = json.loads(out.stdout.strip().splitlines()[-1])
    return n


@pytest.mark.skipif(not _GLIBC, reason="glibc's malloc tunables (another C library ignores them)")
def test_the_command_keeps_freed_buffers_for_the_next_window() -> None:
    # glibc's own thresholds, as a user may export them: each window's buffers fault in afresh
    # (2 x 768 pages a window, 20 windows); a bare interpreter under glibc's dynamic thresholds
    # does nearly the same
    pages = 2 * (3 << 20) // 4096
    glibc = {"MALLOC_MMAP_THRESHOLD_": "131072", "MALLOC_TRIM_THRESHOLD_": "131072"}
    assert _faults("command", {**_clean_env(), **glibc}) >= 10 * pages
    assert _faults("bare", _clean_env()) >= 10 * pages
    # the command's defaults, applied to its own process: the heap keeps them, no fault
    assert _faults("command", _clean_env()) < pages


@pytest.mark.skipif(not _GLIBC, reason="glibc's mallopt")
def test_tune_malloc_applies_whole_numbers_glibc_accepts() -> None:
    # run in a child: mallopt changes the process it runs in
    code = (
        "import json; from duetflow.native_threads import tune_malloc; print(json.dumps(["
        "tune_malloc({'MALLOC_MMAP_THRESHOLD_': '33554432', 'MALLOC_TRIM_THRESHOLD_': 'lots'}),"
        "tune_malloc({'MALLOC_TRIM_THRESHOLD_': str(1 << 40)}), tune_malloc({})]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=_clean_env(), capture_output=True, text=True, check=True
    )
    applied, no_int, none = json.loads(out.stdout.strip().splitlines()[-1])
    assert applied == {"MALLOC_MMAP_THRESHOLD_": 33554432}  # 'lots' is not a number
    assert no_int == {}  # mallopt takes a C int: not passed on wrapped
    assert none == {}
