"""Run every benchmark in one command (``make bench``), one after the other.

Each script prints its own figures, ratios side by side within one run; this wrapper only runs
them in sequence and prints each one's last line with the machine's load average (1 / 5 / 15
minutes) when it ended, so the summary fits on a screen and says how busy the machine was.
``--only render.py kernels.py cli_import.py`` runs a subset (the issue-30 figures: render with
its peers, the kernels, the CLI's fixed cost); ``--baseline SRC`` gives render.py a tree to run
as *before* (e.g. an archive of main's ``src``). The figures and how to read them are in
docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = (
    "ingest.py",
    "select_stage.py",
    "turn_timing.py",
    "studio.py",
    "studio_memory.py",
    "render.py",
    "loudness.py",
    "kernels.py",
    "synthesize.py",
    "release.py",
    "report.py",
    "flows.py",
    "encoding.py",
    "startup.py",
    "cli_import.py",
    "pipeline_memory.py",
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--only", nargs="+", choices=SCRIPTS, help="run these scripts only")
    ap.add_argument(
        "--baseline", help="a source tree whose duetflow render.py also runs, as 'before'"
    )
    args = ap.parse_args()
    summary: list[str] = []
    failed = 0
    for name in args.only or SCRIPTS:
        print(f"== bench/{name}", flush=True)
        t0 = time.perf_counter()
        extra = ["--baseline", args.baseline] if args.baseline and name == "render.py" else []
        proc = subprocess.run(
            [sys.executable, str(HERE / name), *extra],
            capture_output=True,
            text=True,
            check=False,
        )
        sys.stdout.write(proc.stdout)
        sys.stderr.write(proc.stderr[-4000:])
        lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
        last = lines[-1] if lines else "(no output)"
        status = "ok" if proc.returncode == 0 else f"exit {proc.returncode}"
        failed += proc.returncode != 0
        load = "/".join(f"{v:.1f}" for v in os.getloadavg())
        summary.append(
            f"{name:<18} {status:<8} {time.perf_counter() - t0:7.1f} s  load {load}  {last}"
        )
    print("\n== summary")
    print("\n".join(summary))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
