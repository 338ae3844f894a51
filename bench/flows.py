"""Prefect overhead: the same sample workload through build_dataset and through plain calls.

    python bench/flows.py --scale 10 [--samples DIR] [--out bench/results/flows.json]

Each mode runs in a fresh subprocess on its own work directory and store (nothing cached),
after the imports. The flow mode first runs one trivial flow so the Prefect API (a temporary
local server unless PREFECT_API_URL is set) is up before the clock starts: the ratio is the
orchestration overhead, not the server start-up, which is reported separately.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from duetflow.native_threads import process_defaults

HERE = Path(__file__).resolve().parent


def _config(samples: Path, run_dir: Path, shard_size: int, workers: int) -> Path:
    from duetflow.demo.prepare import bundled_config

    data = yaml.safe_load(bundled_config().read_text(encoding="utf-8"))
    data["corpora"] = [{**c, "root": str(samples / Path(c["root"]).name)} for c in data["corpora"]]
    data["synth"]["scripts"] = str(samples / "scripts")
    data["workdir"] = str(run_dir / "work")
    data["release"]["store"] = str(run_dir / "store")
    data["runner"].update({"shard_size": shard_size, "max_workers": workers})
    path = run_dir / "config.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _cpu_s() -> tuple[float, float]:
    """CPU seconds of this process, and of its live children (the temporary API server)."""
    import psutil

    me = psutil.Process()
    t = me.cpu_times()
    own, children = t.user + t.system, 0.0
    for p in me.children(recursive=True):
        try:
            c = p.cpu_times()
        except psutil.Error:
            continue
        children += c.user + c.system
    return own, children


def _cpu_since(c0: tuple[float, float], out: dict[str, Any]) -> None:
    own, children = _cpu_s()
    out["cpu_s"] = round(own - c0[0] + children - c0[1], 2)
    out["server_cpu_s"] = round(children - c0[1], 2)


def _child(mode: str, cfg_path: Path) -> dict[str, Any]:
    from duetflow.config import load_config

    cfg = load_config(cfg_path)
    out: dict[str, Any] = {"mode": mode}
    if mode == "flow":
        from prefect import flow

        from duetflow.flows import build_dataset

        @flow(name="bench-warmup")
        def warmup() -> int:
            return 1

        t0 = time.perf_counter()
        warmup()
        out["api_start_s"] = round(time.perf_counter() - t0, 2)
        t0, c0 = time.perf_counter(), _cpu_s()
        summary = build_dataset(config=str(cfg_path))
        out["wall_s"] = round(time.perf_counter() - t0, 2)
        _cpu_since(c0, out)
        out["release_id"] = summary.release_id
        out["released"] = dict(summary.released)
        out["steps"] = dict(summary.computed)
    else:
        from duetflow.pipeline.driver import run_pipeline

        t0, c0 = time.perf_counter(), _cpu_s()
        result = run_pipeline(cfg)
        out["wall_s"] = round(time.perf_counter() - t0, 2)
        _cpu_since(c0, out)
        out["release_id"] = result.release.release_id if result.release else None
        out["released"] = {m.label: m.kept for m in result.merged}
        out["steps"] = {s: result.computed(s) for s in ("ingest", "process", "synth", "report")}
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument("--samples", type=Path, default=None, help="existing make_samples output")
    ap.add_argument("--shard-size", type=int, default=16)
    ap.add_argument("--workers", type=int, default=1, help="thread pool size (1: same work order)")
    ap.add_argument("--repeat", type=int, default=1, help="alternate plain/flow runs N times")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "flows.json")
    ap.add_argument("--child", choices=["flow", "plain"], help=argparse.SUPPRESS)
    ap.add_argument("--config", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(_child(args.child, args.config)))
        return

    tmp = Path(tempfile.mkdtemp(prefix="duetflow-bench-flows-"))
    try:
        samples = args.samples
        if samples is None:
            from duetflow.demo import make_samples

            samples = tmp / "samples"
            t0 = time.perf_counter()
            make_samples(samples, seed=0, scale=args.scale)
            print(f"samples (scale {args.scale}) in {time.perf_counter() - t0:.1f} s", flush=True)
        env = {
            **os.environ,
            "PREFECT_HOME": str(tmp / "prefect"),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
            "PREFECT_LOGGING_LEVEL": "WARNING",
        }
        process_defaults(env)  # as the `duetflow` command runs (duetflow.native_threads)
        runs: dict[str, list[dict[str, Any]]] = {"plain": [], "flow": []}
        for rep in range(args.repeat):
            for mode in ("plain", "flow"):  # alternated: drifting machine load hits both
                run_dir = tmp / f"{mode}-{rep}"
                run_dir.mkdir()
                cfg = _config(samples, run_dir, args.shard_size, args.workers)
                proc = subprocess.run(
                    [sys.executable, __file__, "--child", mode, "--config", str(cfg)],
                    env=env, capture_output=True, text=True, check=False,
                )  # fmt: skip
                if proc.returncode != 0:
                    sys.exit(f"{mode} run failed:\n{proc.stdout}\n{proc.stderr[-4000:]}")
                runs[mode].append(json.loads(proc.stdout.strip().splitlines()[-1]))
                print(mode, runs[mode][-1], flush=True)
                shutil.rmtree(run_dir, ignore_errors=True)
        plain = statistics.median(r["wall_s"] for r in runs["plain"])
        flow = statistics.median(r["wall_s"] for r in runs["flow"])
        report = {
            "scale": args.scale,
            "shard_size": args.shard_size,
            "workers": args.workers,
            "repeat": args.repeat,
            "plain_s": [r["wall_s"] for r in runs["plain"]],
            "flow_s": [r["wall_s"] for r in runs["flow"]],
            "plain_median_s": plain,
            "flow_median_s": flow,
            "api_start_s": [r.get("api_start_s") for r in runs["flow"]],
            "peak_rss_mb": {m: max(r["peak_rss_mb"] for r in runs[m]) for m in runs},
            "overhead_ratio": round(flow / plain, 3),
            "plain_cpu_s": [r["cpu_s"] for r in runs["plain"]],
            "flow_cpu_s": [r["cpu_s"] for r in runs["flow"]],
            "cpu_ratio": round(
                statistics.median(r["cpu_s"] for r in runs["flow"])
                / statistics.median(r["cpu_s"] for r in runs["plain"]),
                3,
            ),
            "flow_server_cpu_s": [r["server_cpu_s"] for r in runs["flow"]],
            # the same dialogues published, and the same release (ids hash the manifests)
            "same_release": all(
                (r["released"], r["release_id"])
                == (runs["plain"][0]["released"], runs["plain"][0]["release_id"])
                for r in runs["flow"]
            ),
            "steps": runs["flow"][0]["steps"],
            "released": runs["flow"][0]["released"],
            "machine": f"{platform.machine()} {os.cpu_count()} cpu py{platform.python_version()}",
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1), encoding="utf-8")
        print(json.dumps(report, indent=1))
        server = statistics.median(r["server_cpu_s"] for r in runs["flow"])
        print(
            f"flows: {report['overhead_ratio']:.2f}x wall, {report['cpu_ratio']:.2f}x CPU "
            f"({server:.1f} s of it the API server's) at scale {args.scale}; "
            f"same release {report['same_release']}"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
