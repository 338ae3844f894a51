"""The Dask runner on 2 workers against the thread runner on the same work, on a real server.

    python bench/dask_speedup.py [--scale 4] [--repeat 2]

A local Prefect server is started first (``duetflow.flows.local_server``, the way
``duetflow server start`` does; its start is not timed), then ``duetflow run`` runs the bundled
demo config over the sample corpora (``--scale``, the four corpora; PH synthesis and publish
off: ingest and process are the stages whose shards a runner spreads) with
``PREFECT_API_URL`` naming that server, each time on a fresh work directory (nothing cached),
in modes interleaved ``--repeat`` times:

* **threads 2**: ``runner.kind: threads``, ``max_workers: 2`` — one process, two task threads;
* **dask 2**: ``runner.kind: dask``, ``dask_workers: 2``, ``max_workers: 2`` — a local Dask
  cluster of two worker processes of one thread each, started and stopped by the run;
* **threads 1**: ``max_workers: 1`` — the same work one shard at a time (what a second worker
  adds at all on this machine).

Wall time by the clock; CPU of the whole process tree (``psutil``, sampled every 50 ms: the
Dask scheduler, nannies and workers included), split into the run's own process, the Dask
worker processes (``spawn_main``; the scheduler and nannies live in the run's process) and any
other (a process that lives under 50 ms is missed). The three runs of a repeat must report the
same kept and rejected counts. Also timed apart: a bare ``distributed.LocalCluster`` of two
worker processes started and closed (the cluster's fixed cost inside a Dask run).
Speed-up: best wall of threads 2 / best wall of dask 2 (> 1: Dask faster).
Last line: ``dask_speedup: dask 2 workers <s>x threads 2 (wall <d> s vs <t> s; CPU <c> s vs
<u> s); threads 2 vs 1 <p>x; cluster start <k> s; load <l>``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

DUETFLOW = str(Path(sys.executable).with_name("duetflow"))
MODES = {
    "threads 2": {"kind": "threads", "max_workers": 2},
    "dask 2": {"kind": "dask", "max_workers": 2, "dask_workers": 2},
    "threads 1": {"kind": "threads", "max_workers": 1},
}


def _config(samples: Path, run_dir: Path, runner: dict[str, Any]) -> Path:
    from duetflow.demo.prepare import bundled_config

    data = yaml.safe_load(bundled_config().read_text(encoding="utf-8"))
    data["corpora"] = [{**c, "root": str(samples / Path(c["root"]).name)} for c in data["corpora"]]
    data["synth"]["enabled"] = False
    data["workdir"] = str(run_dir / "work")
    data["release"]["store"] = str(run_dir / "store")
    data["runner"].update(runner)
    path = run_dir / "config.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, dict[str, float], str]:
    """Wall seconds, CPU seconds by process (the run's own, each other one of its tree by its
    role; sampled every 50 ms until it exits) and stdout of a command."""
    import psutil

    t0 = time.perf_counter()
    proc = psutil.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    cpu: dict[int, float] = {}
    role: dict[int, str] = {proc.pid: "run"}
    while proc.poll() is None:
        for p in [proc, *proc.children(recursive=True)]:
            try:
                t = p.cpu_times()
                cpu[p.pid] = t.user + t.system
                if p.pid not in role:
                    line = " ".join(p.cmdline())
                    role[p.pid] = (
                        "worker" if "spawn_main" in line or "forkserver" in line else "other"
                    )
            except psutil.Error:
                pass
        time.sleep(0.05)
    wall = time.perf_counter() - t0
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd} failed:\n{err[-3000:]}")
    by_role: dict[str, float] = {}
    for pid, c in cpu.items():
        by_role[role.get(pid, "other")] = by_role.get(role.get(pid, "other"), 0.0) + c
    return wall, by_role, out


def _counts(stdout: str) -> str:
    """The run's per-corpus kept / rejected lines (what must agree between the modes)."""
    return "\n".join(ln.strip() for ln in stdout.splitlines() if " kept " in ln)


def _cluster_start() -> float:
    from distributed import LocalCluster

    t0 = time.perf_counter()
    with LocalCluster(  # type: ignore[no-untyped-call]
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ):
        pass
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--scale", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    from duetflow.demo import make_samples
    from duetflow.flows import local_server

    root = Path(tempfile.mkdtemp(prefix="duetflow-bench-dask-"))
    try:
        samples = root / "samples"
        make_samples(samples, seed=0, scale=args.scale)
        quiet = {"PREFECT_SERVER_UI_ENABLED": "false", "PREFECT_LOGGING_LEVEL": "WARNING"}
        server = local_server.start(root / "server-home", settings=quiet)
        env = {
            **{k: v for k, v in os.environ.items() if k != "PREFECT_HOME"},
            "PREFECT_API_URL": server.url,
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_HOME": str(root / "client-home"),
            **quiet,
        }
        best: dict[str, tuple[float, float]] = {}
        roles: dict[str, dict[str, float]] = {}
        counts: dict[str, str] = {}
        try:
            for k in range(args.repeat):
                for name, runner in MODES.items():
                    run_dir = root / f"{name.replace(' ', '')}-{k}"
                    run_dir.mkdir()
                    cfg = _config(samples, run_dir, runner)
                    cmd = [DUETFLOW, "run", "-c", str(cfg), "--no-progress", "--no-publish",
                           "--no-synth"]  # fmt: skip
                    w, by_role, out = _timed(cmd, env)
                    c = sum(by_role.values())
                    counts.setdefault(name, _counts(out))
                    if _counts(out) != counts["threads 2"]:
                        sys.exit(f"{name} kept/rejected differ from threads 2:\n{_counts(out)}")
                    load = os.getloadavg()[0]
                    split = ", ".join(f"{r} {v:.1f}" for r, v in sorted(by_role.items()))
                    line = f"  run {k + 1} {name:<10} wall {w:6.1f} s  cpu {c:6.1f} s ({split})"
                    print(f"{line}  load {load:.1f}", flush=True)
                    if name not in best or w < best[name][0]:
                        best[name] = (w, c)
                        roles[name] = by_role
                    shutil.rmtree(run_dir, ignore_errors=True)
        finally:
            local_server.stop(root / "server-home")
        starts = [_cluster_start() for _ in range(2)]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"scale {args.scale}, best of {args.repeat}:\n{counts['threads 2']}")
    print(f"{'mode':<11}{'wall s':>8}{'cpu s':>8}")
    for name, (w, c) in best.items():
        split = ", ".join(f"{r} {v:.1f}" for r, v in sorted(roles[name].items()))
        print(f"{name:<11}{w:>8.1f}{c:>8.1f}  ({split})")
    print(
        f"bare LocalCluster(2 processes) start + close: {', '.join(f'{s:.1f}' for s in starts)} s"
    )
    (tw, tc), (dw, dc), (t1, _) = best["threads 2"], best["dask 2"], best["threads 1"]
    load_s = "/".join(f"{v:.1f}" for v in os.getloadavg())
    print(
        f"dask_speedup: dask 2 workers {tw / dw:.2f}x threads 2 (wall {dw:.1f} s vs {tw:.1f} s; "
        f"CPU {dc:.1f} s vs {tc:.1f} s); threads 2 vs 1 {t1 / tw:.2f}x; cluster start "
        f"{min(starts):.1f} s; load {load_s}"
    )


if __name__ == "__main__":
    main()
