"""Run every benchmark in one command (``make bench``), one after the other.

Each script prints its own figures, ratios side by side within one run; this wrapper only runs
them in sequence and prints each one's last line with the machine's load average (1 / 5 / 15
minutes) when it ended, so the summary fits on a screen and says how busy the machine was.
``--only NAME ...`` runs a subset; ``--issue30`` the scripts behind issue 30's four figures
(render with its honest peers and the kernels; the fixed cost of a CLI command and of a
``duetflow run``; CPU seconds per rendered hour at scales 1 / 4 / 16 with the memory ratio; the
Dask runner's speed-up; with ``--only``, those of them), whose last lines are printed again at
the end as one block, each with its load average.
``--baseline SRC`` gives render.py and startup.py a tree to run as *before* (e.g. an archive
of main's ``src``). The figures and how to read them are in docs/performance.md.
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
    "render.py --default-render",
    "loudness.py",
    "kernels.py",
    "band_limit_floor.py",
    "fresh_pages.py",
    "synthesize.py",
    "release.py",
    "report.py",
    "flows.py",
    "encoding.py",
    "startup.py",
    "cli_import.py",
    "pipeline_memory.py",
    "job_hour.py",
    "dask_speedup.py",
)
#: issue 30's figures: (what, the scripts whose last lines give it)
ISSUE30 = (
    (
        "1. render x real time per core, vs the int16 floor (code defaults; the bundled run "
        "config's render section)",
        (
            "render.py",
            "render.py --default-render",
            "kernels.py",
            "band_limit_floor.py",
            "fresh_pages.py",
        ),
    ),
    ("2. honest peers (pydub + pyloudnorm, lhotse)", ("render.py", "render.py --default-render")),
    ("3. fixed cost: CLI import, `duetflow run` on a kept server", ("cli_import.py", "startup.py")),
    ("4. CPU s per rendered hour (1/4/16), Dask speed-up", ("job_hour.py", "dask_speedup.py")),
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    names = sorted({e.split()[0] for e in SCRIPTS})
    ap.add_argument("--only", nargs="+", choices=names, help="run these scripts only")
    ap.add_argument("--issue30", action="store_true", help="issue 30's four figures only")
    ap.add_argument(
        "--baseline", help="a source tree render.py and startup.py also run, as 'before'"
    )
    args = ap.parse_args()
    summary: list[str] = []
    lasts: dict[str, str] = {}
    failed = 0
    # an entry is a script and its arguments ("render.py --default-render"); --only names scripts
    chosen = tuple(e for e in SCRIPTS if args.only is None or e.split()[0] in args.only)
    if args.issue30:  # with --only: those of them
        chosen = tuple(n for n in dict.fromkeys(n for _, ns in ISSUE30 for n in ns) if n in chosen)
    for name in chosen:
        print(f"== bench/{name}", flush=True)
        t0 = time.perf_counter()
        script, *extra = name.split()
        if args.baseline and script in ("render.py", "startup.py"):
            extra += ["--baseline", args.baseline]
        proc = subprocess.run(
            [sys.executable, str(HERE / script), *extra],
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
        lasts[name] = f"{last}  [load {load}]"
        summary.append(
            f"{name:<28} {status:<8} {time.perf_counter() - t0:7.1f} s  load {load}  {last}"
        )
    print("\n== summary")
    print("\n".join(summary))
    if args.issue30:
        print("\n== issue 30 figures (each script's last line, load average 1/5/15 min at its end)")
        for what, names in ISSUE30:
            print(what)
            for n in names:
                print(f"    {n:<28} {lasts.get(n, '(not run)')}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
