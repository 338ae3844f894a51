"""Fixed cost of one ``duetflow run``: Prefect's API and imports, around a run with nothing to do.

    python bench/startup.py [--repeat 6] [--temp-repeat 2] [--samples DIR]

A tiny config (the DailyTalk samples, no synthesis, no publish) is run once to fill its work
directory; every timed run after that finds every step finished, so what it costs is the fixed
part of a run. Timed, interleaved ``--repeat`` times:

* **plain**: ``duetflow.pipeline.driver.run_pipeline`` on that config in a fresh interpreter
  (imports and the cached steps, no Prefect): the floor every mode shares;
* **fresh home**: ``duetflow run`` with an empty ``PREFECT_HOME`` each time (what a run cost
  when the temporary API's database was created and migrated per run);
* **persistent home**: ``duetflow run`` with neither ``PREFECT_API_URL`` nor ``PREFECT_HOME``
  set, so :func:`duetflow.cli.run.prefect_env` picks the persistent home
  (``$XDG_CACHE_HOME/duetflow/prefect``, pointed at a folder of this benchmark), created by an
  untimed first run;
* **kept server**: ``duetflow run`` with neither set, in a home where a server and its run host
  were started the way ``duetflow server start`` does (:func:`duetflow.flows.local_server.start`,
  :func:`duetflow.flows.run_host.start`): the run is forked from the host, which has Prefect and
  the pipeline imported (:mod:`duetflow.flows.run_host`); the CPU counted is the command's and
  the forked run's (the host's children, sampled the same way);
* **kept server, in process**: the same with ``DUETFLOW_RUN_HOST=off``: the command imports
  Prefect and runs the flow itself, :func:`~duetflow.cli.run.prefect_env` finds the server;
* **given server**: ``duetflow run`` with ``PREFECT_API_URL`` naming a server the benchmark
  started beforehand (neither server's start-up is a run's cost).

* **plain, before** and **kept server, before** (with ``--baseline SRC``): the plain pipeline
  and the kept-server run by another source tree (``PYTHONPATH=SRC``, e.g. an archive of main's
  ``src``), in the same interleaving, in a work directory of their own (another tree's code
  hashes make other stage keys: a shared one would be recomputed at every switch of tree),
  against a kept server and run host of their own, started by that tree (a run host serves
  only clients of its own interpreter and ``sys.path``); the kept-server run before is paired
  with the plain run before.

``--modes`` picks some of them (``plain`` always runs); the two temporary-API modes, ~10-25 s a
run, run in the first ``--temp-repeat`` rounds only. Wall time by the clock around the command;
CPU of the command's process tree (``psutil``, the temporary API server included; a kept or
given server is another process tree and is not counted). The fixed cost of a mode is its
figure less *plain*'s: per round (each run less the plain run just before it, the same load),
whose **median** is the headline, and of the best runs by wall. Each round's load average is
printed with it. Last line: ``startup: kept server median <m> s wall over plain (paired, <n>
runs, <k> over 3 s; range <a>-<b> s; CPU median +<c> s) [(before: ...)]; in process <m> s;
given server <m> s; temporary API: persistent home <m> s, fresh home <m> s; load <l> (rounds
...); plain median <w> s wall, CPU <c> s [(before: ...)]`` (a mode not run reads ``-``).
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from duetflow.flows import local_server, run_host

DUETFLOW = str(Path(sys.executable).with_name("duetflow"))
ALL_MODES = (
    "fresh home", "persistent home", "kept server", "kept server, in process", "given server"
)  # fmt: skip
#: processes whose children are part of a timed command (a run host forks the runs it is given)
HOSTS: list[int] = []
#: the modes that start a temporary API per run (slow: run in the first --temp-repeat rounds)
TEMPORARY = ("fresh home", "persistent home")
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
    hosts = [psutil.Process(pid) for pid in HOSTS]
    while proc.poll() is None:
        forked = [c for h in hosts for c in h.children(recursive=True)]
        for p in [proc, *proc.children(recursive=True), *forked]:
            try:
                t = p.cpu_times()
                # each process's own time: its reaped children's (children_user) are sampled
                # as processes of their own, so adding them would count them twice
                cpu[p.pid] = t.user + t.system
            except psutil.Error:
                pass
        time.sleep(0.05)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd} failed:\n{proc.stderr.read().decode()[-3000:]}")
    return wall, sum(cpu.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--repeat", type=int, default=6, help="rounds (plain and the servers)")
    ap.add_argument(
        "--temp-repeat", type=int, default=2, help="rounds that also run the temporary API"
    )
    ap.add_argument("--samples", type=Path, help="a `duetflow samples make` folder to reuse")
    ap.add_argument("--baseline", type=Path, help="a source tree run as 'kept server, before'")
    ap.add_argument(
        "--modes", nargs="+", choices=ALL_MODES, default=list(ALL_MODES), help="modes to run"
    )
    args = ap.parse_args()
    # a kill (SIGTERM) unwinds like Ctrl-C: the servers this run started are stopped (finally)
    # and its temporary folder removed, instead of a server left running in a deleted home
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    with tempfile.TemporaryDirectory(prefix="duetflow-startup-") as tmp:
        root = Path(tmp)
        samples = args.samples
        if samples is None:
            from duetflow.demo import make_samples

            samples = root / "samples"
            make_samples(samples, seed=0, scale=1, include=["dailytalk"])

        def config(name: str) -> Path:
            # a tree's own work directory: another tree's code hashes give other stage keys, so
            # sharing one would make every run of either tree do the work again
            path = root / f"{name}.yaml"
            doc = {
                "workdir": str(root / f"work-{name}"),
                "corpora": [{"name": "dailytalk", "root": str(samples / "dailytalk")}],
                "synth": {"enabled": False},
                "release": {"store": str(root / f"store-{name}")},
                "runner": {"max_workers": 2, "shard_size": 4},
            }
            path.write_text(yaml.safe_dump(doc), encoding="utf-8")
            return path

        cfg = config("run")
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
        given_url = "-"
        if "given server" in args.modes:
            given_url = local_server.start(root / "server-home", settings=quiet).url
        kept_home = root / "kept-home"
        kept_before = root / "kept-home-before"
        local_server.start(kept_home, settings=quiet)  # what `duetflow server start` does
        HOSTS.append(run_host.start(kept_home))  # ... with its run host
        try:
            modes: dict[str, tuple[list[str], Any]] = {
                "plain": ([sys.executable, "-c", PLAIN, str(cfg)], lambda k: base),
                "fresh home": (run, lambda k: {**base, "PREFECT_HOME": str(root / f"fresh{k}")}),
                "persistent home": (run, lambda k: base),
                "kept server": (run, lambda k: {**base, "DUETFLOW_PREFECT_HOME": str(kept_home)}),
                "kept server, in process": (
                    run,
                    lambda k: {
                        **base,
                        "DUETFLOW_PREFECT_HOME": str(kept_home),
                        run_host.OFF_ENV: "off",
                    },
                ),
                "given server": (run, lambda k: {**base, "PREFECT_API_URL": given_url}),
            }
            if args.baseline:
                # the baseline's own kept server and run host: a host serves only clients of
                # its own interpreter and sys.path, so the host above would decline the
                # baseline's runs (they would then run in process, and read ~1 s slower)
                baseline = str(args.baseline.resolve())
                local_server.start(kept_before, settings=quiet)
                had = os.environ.get("PYTHONPATH")
                os.environ["PYTHONPATH"] = baseline  # the host takes this process's environment
                try:
                    HOSTS.append(run_host.start(kept_before))
                finally:
                    if had is None:
                        del os.environ["PYTHONPATH"]
                    else:
                        os.environ["PYTHONPATH"] = had
                before = {**base, "DUETFLOW_PREFECT_HOME": str(kept_before)}
                before["PYTHONPATH"] = baseline
                cfg_before = config("before")
                run_before = [*run[:3], str(cfg_before), *run[4:]]
                _timed(run_before, before)  # fills the baseline's own work directory
                modes["plain, before"] = (
                    [sys.executable, "-c", PLAIN, str(cfg_before)],
                    lambda k: before,
                )
                modes["kept server, before"] = (run_before, lambda k: before)
            wanted = {"plain", "plain, before", "kept server, before", *args.modes}
            modes = {k: v for k, v in modes.items() if k in wanted}
            best: dict[str, tuple[float, float]] = {}
            runs: dict[str, list[tuple[float, float]]] = {}
            #: per mode, each run less the plain run of its round (same load): wall, CPU
            paired: dict[str, list[tuple[float, float]]] = {}
            loads: list[float] = []
            for k in range(args.repeat):
                for name, (cmd, env) in modes.items():
                    if name in TEMPORARY and k >= args.temp_repeat:
                        continue
                    w, c = _timed(cmd, env(k))
                    load = os.getloadavg()[0]
                    loads.append(load)
                    runs.setdefault(name, []).append((w, c))
                    # a mode less the plain run of its round and tree (the same load)
                    plain = "plain, before" if name.endswith(", before") else "plain"
                    pw, pc = runs[plain][-1]
                    extra = ""
                    if not name.startswith("plain"):
                        paired.setdefault(name, []).append((w - pw, c - pc))
                        extra = f"  over plain {w - pw:5.2f} s ({c - pc:+.2f} s CPU)"
                    print(
                        f"  run {k + 1} {name:<16} wall {w:6.2f} s  cpu {c:6.2f} s{extra}"
                        f"  load {load:.1f}",
                        flush=True,
                    )
                    if name not in best or w < best[name][0]:
                        best[name] = (w, c)
        finally:
            local_server.stop(root / "server-home")
            run_host.stop(kept_home)
            local_server.stop(kept_home)
            if args.baseline:
                run_host.stop(kept_before)
                local_server.stop(kept_before)
    plain_w = best["plain"][0]
    print(
        f"{args.repeat} rounds (load average {min(loads):.1f}-{max(loads):.1f} on "
        f"{os.cpu_count()} cores), each run less the plain run of its round:"
    )
    print(
        f"{'mode':<20}{'runs':>5}{'median wall':>13}{'range':>19}{'median cpu':>12}"
        f"{'best wall':>11}{'best over':>11}"
    )
    for name, (w, _) in best.items():
        if name.startswith("plain"):
            ws = sorted(r[0] for r in runs[name])
            print(f"{name:<20}{len(ws):>5}{statistics.median(ws):>12.2f}s{'':>19}"
                  f"{statistics.median(r[1] for r in runs[name]):>11.2f}s{w:>10.2f}s")  # fmt: skip
            continue
        ws = sorted(p[0] for p in paired[name])
        print(
            f"{name:<20}{len(ws):>5}{statistics.median(ws):>+12.2f}s"
            f"{f'{ws[0]:+.2f}..{ws[-1]:+.2f} s':>19}"
            f"{statistics.median(p[1] for p in paired[name]):>+11.2f}s{w:>10.2f}s"
            f"{w - plain_w:>+10.2f}s"
        )

    def over(name: str, detail: bool = False) -> str:
        if name not in paired:
            return "-"
        ws = [p[0] for p in paired[name]]
        med = statistics.median(ws)
        if not detail:
            return f"{med:.1f} s"
        slow = sum(1 for x in ws if x > 3.0)
        cpu = statistics.median(p[1] for p in paired[name])
        return (
            f"median {med:.1f} s wall over plain (paired, {len(ws)} runs, {slow} over 3 s; "
            f"range {min(ws):.1f}-{max(ws):.1f} s; CPU median +{cpu:.1f} s)"
        )

    def plain_of(name: str) -> str:
        rs = runs.get(name, [])
        if not rs:
            return "-"
        w = statistics.median(r[0] for r in rs)
        return f"{w:.1f} s wall, CPU {statistics.median(r[1] for r in rs):.2f} s"

    before = plain_before = ""
    if "kept server, before" in paired:
        before = f" (before: {over('kept server, before', detail=True)})"
        plain_before = f" (before: {plain_of('plain, before')})"
    load_s = "/".join(f"{v:.1f}" for v in os.getloadavg())
    print(
        f"startup: kept server {over('kept server', detail=True)}{before}; in process "
        f"{over('kept server, in process')}; given server "
        f"{over('given server')}; temporary API: persistent home {over('persistent home')}, "
        f"fresh home {over('fresh home')}; load {load_s} (rounds {min(loads):.1f}-"
        f"{max(loads):.1f}); plain median {plain_of('plain')}{plain_before}"
    )


if __name__ == "__main__":
    main()
