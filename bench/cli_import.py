"""A CLI command's fixed cost: the CPU a fresh ``duetflow ... --help`` spends before it can answer.

One command: ``.venv/bin/python bench/cli_import.py`` (``--repeat N``). Each command runs in a
fresh interpreter through the console entry point (``duetflow.console.run``), ``--repeat``
times interleaved with a bare ``python -c pass``; the figure is the child's CPU time
(user + system, ``RUSAGE_CHILDREN``), best of the runs, less the bare interpreter's, so it is
what duetflow's imports cost and not the machine's load (wall time is reported beside it, and
on a loaded machine it is several times the CPU). Also listed: which heavy packages each command
loaded (none should: ``tests/cli/test_cli_import_cost.py``).

Last line: ``cli_import: --help <c> s CPU (<w> s wall), ingest --help <c> s ...; heavy none;
load <1-minute load average>``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

HEAVY = ("numpy", "scipy", "pandas", "pyarrow", "prefect", "torch", "numba", "soundfile")
COMMANDS = (["--help"], ["ingest", "--help"], ["process", "--help"], ["run", "--help"])
PROBE = r"""
import json, sys
heavy = json.loads(sys.argv[2])
sys.argv = ["duetflow", *json.loads(sys.argv[1])]
from duetflow.console import run
try:
    run()
except SystemExit:
    pass
print("\n" + json.dumps(sorted(m for m in sys.modules if m in heavy)))
"""


def _timed(cmd: list[str]) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    bare: list[tuple[float, float]] = []
    runs: dict[str, list[tuple[float, float]]] = {" ".join(c): [] for c in COMMANDS}
    heavy: dict[str, list[str]] = {}
    for _ in range(args.repeat):
        cpu, wall, _out = _timed([sys.executable, "-c", "pass"])
        bare.append((cpu, wall))
        for c in COMMANDS:
            name = " ".join(c)
            cmd = [sys.executable, "-c", PROBE, json.dumps(c), json.dumps(HEAVY)]
            cpu, wall, out = _timed(cmd)
            runs[name].append((cpu, wall))
            heavy[name] = json.loads(out.strip().splitlines()[-1])
    base_cpu = min(c for c, _ in bare)
    base_wall = min(w for _, w in bare)
    print(f"bare interpreter: {base_cpu:.3f} s CPU, {base_wall:.3f} s wall (subtracted)")
    parts = []
    for name, rs in runs.items():
        cpu = min(c for c, _ in rs) - base_cpu
        wall = min(w for _, w in rs) - base_wall
        print(f"duetflow {name:<16} {cpu:6.3f} s CPU {wall:6.3f} s wall  heavy: {heavy[name]}")
        parts.append(f"{name} {cpu:.2f} s CPU ({wall:.2f} s wall)")
    loaded = sorted({m for ms in heavy.values() for m in ms})
    print(
        f"cli_import: {', '.join(parts)}; heavy {' '.join(loaded) or 'none'}; "
        f"load {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
