"""Fixed cost of one ``duetflow run``: Prefect's API and imports, around a run with nothing to do.

    python bench/startup.py [--repeat 2] [--samples DIR]

A tiny config (the DailyTalk samples, no synthesis, no publish) is run once to fill its work
directory; every timed run after that finds every step finished, so what it costs is the fixed
part of a run. Timed, interleaved ``--repeat`` times, the best of each counting:

* **plain**: ``duetflow.pipeline.driver.run_pipeline`` on that config in a fresh interpreter
  (imports and the cached steps, no Prefect): the floor every mode shares;
* **fresh home**: ``duetflow run`` with an empty ``PREFECT_HOME`` each time (what a run cost
  when the temporary API's database was created and migrated per run);
* **persistent home**: ``duetflow run`` with neither ``PREFECT_API_URL`` nor ``PREFECT_HOME``
  set, so :func:`duetflow.cli.run.prefect_env` picks the persistent home
  (``$XDG_CACHE_HOME/duetflow/prefect``, pointed at a folder of this benchmark), created by an
  untimed first run;
* **kept server**: ``duetflow run`` with neither set, in a home where a server was started the
  way ``duetflow server start`` does (:func:`duetflow.flows.local_server.start`), which
  :func:`~duetflow.cli.run.prefect_env` finds and uses;
* **given server**: ``duetflow run`` with ``PREFECT_API_URL`` naming a server the benchmark
  started beforehand (neither server's start-up is a run's cost).

Wall time by the clock around the command; CPU of the command's process tree (``psutil``, the
temporary API server included). The fixed cost of a mode is its figure less *plain*'s.
Last line: ``startup: kept server <w> s wall (<c> s CPU) over plain; given server <w> s;
temporary API: persistent home <w> s, fresh home <w> s``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from duetflow.flows import local_server

DUETFLOW = str(Path(sys.executable).with_name("duetflow"))
PLAIN = (
    "import sys; from duetflow.config import load_config; from duetflow.pipeline.driver import "
    "run_pipeline; run_pipeline(load_config(sys.argv[1]), synthesize=False, publish=False)"
)


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds (process tree, sampled until it exits) of one command."""
    import psutil

    t0 = time.perf_counter()
    proc = psutil.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    cpu: dict[int, float] = {}
    while proc.poll() is None:
        for p in [proc, *proc.children(recursive=True)]:
            try:
                t = p.cpu_times()
                cpu[p.pid] = t.user + t.system + t.children_user + t.children_system
            except psutil.Error:
                pass
        time.sleep(0.05)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd} failed:\n{proc.stderr.read().decode()[-3000:]}")
    return wall, sum(cpu.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--samples", type=Path, help="a `duetflow samples make` folder to reuse")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="duetflow-startup-") as tmp:
        root = Path(tmp)
        samples = args.samples
        if samples is None:
            from duetflow.demo import make_samples

            samples = root / "samples"
            make_samples(samples, seed=0, scale=1, include=["dailytalk"])
        cfg = root / "run.yaml"
        cfg.write_text(
            yaml.safe_dump(
                {
                    "workdir": str(root / "work"),
                    "corpora": [{"name": "dailytalk", "root": str(samples / "dailytalk")}],
                    "synth": {"enabled": False},
                    "release": {"store": str(root / "store")},
                    "runner": {"max_workers": 2, "shard_size": 4},
                }
            ),
            encoding="utf-8",
        )
        base = {
            k: v
            for k, v in os.environ.items()
            if k not in ("PREFECT_API_URL", "PREFECT_HOME", "DUETFLOW_PREFECT_HOME")
        }
        base["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
        base["XDG_CACHE_HOME"] = str(root / "xdg")
        base["HOME"] = str(root / "home")  # no ~/.prefect profiles of the user's
        run = [DUETFLOW, "run", "-c", str(cfg), "--no-progress", "--no-publish", "--no-synth"]
        _timed(run, base)  # fills the work directory and creates the persistent home
        quiet = {"PREFECT_SERVER_UI_ENABLED": "false"}
        given = local_server.start(root / "server-home", settings=quiet)
        kept_home = root / "kept-home"
        local_server.start(kept_home, settings=quiet)  # what `duetflow server start` does
        try:
            modes: dict[str, tuple[list[str], Any]] = {
                "plain": ([sys.executable, "-c", PLAIN, str(cfg)], lambda k: base),
                "fresh home": (run, lambda k: {**base, "PREFECT_HOME": str(root / f"fresh{k}")}),
                "persistent home": (run, lambda k: base),
                "kept server": (run, lambda k: {**base, "DUETFLOW_PREFECT_HOME": str(kept_home)}),
                "given server": (run, lambda k: {**base, "PREFECT_API_URL": given.url}),
            }
            best: dict[str, tuple[float, float]] = {}
            for k in range(args.repeat):
                for name, (cmd, env) in modes.items():
                    w, c = _timed(cmd, env(k))
                    print(f"  run {k + 1} {name:<16} wall {w:6.2f} s  cpu {c:6.2f} s", flush=True)
                    if name not in best or w < best[name][0]:
                        best[name] = (w, c)
        finally:
            local_server.stop(root / "server-home")
            local_server.stop(kept_home)
    load = os.getloadavg()[0]
    plain_w, plain_c = best["plain"]
    print(f"best of {args.repeat} (load average {load:.1f} on {os.cpu_count()} cores):")
    print(f"{'mode':<18}{'wall s':>8}{'cpu s':>8}{'fixed wall s':>14}{'fixed cpu s':>13}")
    for name, (w, c) in best.items():
        print(f"{name:<18}{w:>8.2f}{c:>8.2f}{w - plain_w:>14.2f}{c - plain_c:>13.2f}")
    g, kept = best["given server"], best["kept server"]
    p, f = best["persistent home"], best["fresh home"]
    print(
        f"startup: kept server {kept[0] - plain_w:.1f} s wall ({kept[1] - plain_c:.1f} s CPU) "
        f"over plain; given server {g[0] - plain_w:.1f} s; temporary API: persistent home "
        f"{p[0] - plain_w:.1f} s, fresh home {f[0] - plain_w:.1f} s"
    )


if __name__ == "__main__":
    main()
