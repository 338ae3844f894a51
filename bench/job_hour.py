"""The whole job per rendered hour: ingest → process → publish CPU seconds, at sample scales.

    python bench/job_hour.py [--scales 1 4 16] [--workers 1]

For each scale the sample corpora are generated (``duetflow samples make --scale N``, seed 0,
the four corpora) and the bundled demo config — every corpus, matching, report, publish to a
local store; PH synthesis off (eSpeak NG's cost is ``bench/synthesize.py``'s, and it renders no
source hour) — runs in a fresh child process through
:func:`duetflow.pipeline.driver.run_pipeline` with one worker and the ``duetflow`` command's
native defaults (:func:`duetflow.native_threads.process_defaults`: one thread per library,
Arrow's system allocator; a variable already exported is kept, e.g.
``ARROW_DEFAULT_MEMORY_POOL=mimalloc`` for pyarrow's own default), so CPU time is the job's own
(no thread pool overlapping it). The child's CPU (``getrusage``, self and children) is read
around each stage through an executor that only times :meth:`stage` calls, so the figure splits
into ingest, process (+ matching), publish (validation, splits, report, upload to the local
store). Rendered hours are the sum of ``duration_s`` over the kept dialogues of the rendered
work directories. Peak RSS is the child's own high-water mark (``VmHWM``, :mod:`_rss`), also
read after each stage (``peak_rss_after_mb``: the stage that raised it).

Figures: CPU seconds per rendered hour at each scale; the *marginal* cost of one more hour
between the smallest and largest scale, ``(cpu_b - cpu_a) / (h_b - h_a)``, which takes the
job's fixed cost (imports, adapters, code keys) out; and the peak RSS ratio largest / smallest
scale (memory flat: ≤ 1.10). Last line: ``job_hour: <m> CPU s per extra rendered hour
(scale a→b); per hour <x> / <y> / <z> at scales ...; peak RSS ratio <r>; load <l>``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml
from _rss import peak_rss_mb

R = TypeVar("R")


def _config(samples: Path, run_dir: Path, workers: int) -> Path:
    from duetflow.demo.prepare import bundled_config

    data = yaml.safe_load(bundled_config().read_text(encoding="utf-8"))
    data["corpora"] = [{**c, "root": str(samples / Path(c["root"]).name)} for c in data["corpora"]]
    data["synth"]["enabled"] = False
    data["workdir"] = str(run_dir / "work")
    data["release"]["store"] = str(run_dir / "store")
    data["runner"].update({"max_workers": workers})
    path = run_dir / "config.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _cpu() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def _child(cfg_path: Path) -> dict[str, Any]:
    t_start, cpu_start = time.perf_counter(), _cpu()
    from duetflow.config import load_config
    from duetflow.pipeline import driver
    from duetflow.pipeline.executors import PlainExecutor
    from duetflow.records.manifest import iter_column

    cpu: dict[str, float] = {"imports": _cpu() - cpu_start}
    rss_after: dict[str, float] = {}  # the high-water mark after each stage: which one raised it

    class Timed(PlainExecutor):
        """The plain executor, with each stage's CPU added up (nothing else changes)."""

        def stage(self, name: str, body: Callable[[], R]) -> R:
            c0 = _cpu()
            try:
                return body()
            finally:
                cpu[name] = cpu.get(name, 0.0) + _cpu() - c0
                rss_after[name] = peak_rss_mb()

    cfg = load_config(cfg_path)
    c0 = _cpu()
    result = driver.run_pipeline(cfg, executor=Timed(), synthesize=False, publish=True)
    staged = sum(v for k, v in cpu.items() if k != "imports")
    cpu["other"] = _cpu() - c0 - staged  # matching, merges' bookkeeping between stages
    total = _cpu() - cpu_start
    seconds = 0.0
    for m in result.merged:
        seconds += sum(
            float(d) for d in iter_column(Path(m.path) / "dialogues.parquet", "duration_s")
        )
    release = result.release
    return {
        "wall_s": round(time.perf_counter() - t_start, 1),
        "cpu_s": round(total, 2),
        "cpu_by_stage_s": {k: round(v, 2) for k, v in cpu.items()},
        "rendered_h": round(seconds / 3600, 4),
        "kept": {m.label: m.kept for m in result.merged},
        "released": release.release_id if release is not None else None,
        "peak_rss_mb": peak_rss_mb(),
        "peak_rss_after_mb": rss_after,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--scales", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(_child(args.child)))
        return
    from duetflow.demo import make_samples
    from duetflow.native_threads import process_defaults

    tmp = Path(tempfile.mkdtemp(prefix="duetflow-bench-jobhour-"))
    env = {**os.environ, "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    process_defaults(env)  # as the `duetflow` command runs (duetflow.native_threads)
    rows: dict[int, dict[str, Any]] = {}
    try:
        for scale in args.scales:
            samples = tmp / f"samples{scale}"
            make_samples(samples, seed=0, scale=scale)
            run_dir = tmp / f"run{scale}"
            run_dir.mkdir()
            cmd = [
                sys.executable,
                __file__,
                "--child",
                str(_config(samples, run_dir, args.workers)),
            ]
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                sys.exit(f"scale {scale} failed:\n{proc.stderr[-4000:]}")
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            row["cpu_per_h"] = round(row["cpu_s"] / row["rendered_h"], 1)
            row["load"] = round(os.getloadavg()[0], 1)
            rows[scale] = row
            print(f"scale {scale}: {json.dumps(row)}", flush=True)
            shutil.rmtree(samples, ignore_errors=True)
            shutil.rmtree(run_dir, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    head = f"{'scale':>5} {'rendered h':>11} {'CPU s':>8} {'CPU s / h':>10} {'peak RSS MB':>12}"
    print(head + "  by stage")
    for scale, r in rows.items():
        stages = ", ".join(f"{k} {v:.1f}" for k, v in r["cpu_by_stage_s"].items())
        print(
            f"{scale:>5} {r['rendered_h']:>11.3f} {r['cpu_s']:>8.1f} {r['cpu_per_h']:>10.1f} "
            f"{r['peak_rss_mb']:>12.0f}  {stages}"
        )
    lo, hi = min(rows), max(rows)
    a, b = rows[lo], rows[hi]
    extra_h = b["rendered_h"] - a["rendered_h"]
    marginal = (b["cpu_s"] - a["cpu_s"]) / extra_h if extra_h > 0 else float("nan")
    per_h = " / ".join(f"{rows[s]['cpu_per_h']:.0f}" for s in rows)
    scales = ", ".join(str(s) for s in rows)
    load = "/".join(f"{v:.1f}" for v in os.getloadavg())
    print(
        f"job_hour: {marginal:.0f} CPU s per extra rendered hour (scale {lo}→{hi}); per hour "
        f"{per_h} at scales {scales}; peak RSS ratio {b['peak_rss_mb'] / a['peak_rss_mb']:.3f}; "
        f"load {load}"
    )


if __name__ == "__main__":
    main()
