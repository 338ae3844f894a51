"""Peak memory of the whole plain pipeline at sample scale 1 and 16: does it grow with the corpus?

    python bench/pipeline_memory.py [--scales 1 16] [--stages]

For each scale, the sample corpora (``duetflow samples make``, seed 0) are generated and the
bundled demo config (every corpus, PH synthesis with eSpeak NG, matching, report, publish to a
local store) runs through ``duetflow.pipeline.driver.run_pipeline`` in a fresh child process,
one worker, with the ``duetflow`` command's native defaults
(:func:`duetflow.native_threads.process_defaults`; an exported variable is kept, e.g.
``ARROW_DEFAULT_MEMORY_POOL=mimalloc``). Peak RSS is the child's ``VmHWM`` (its own high-water
mark: interpreter, imports, buffers). ``--stages`` also reports, per pipeline step, the peak of
Python-allocated memory while it ran (``tracemalloc``, numpy buffers included; slower), which
names the step that grows. The high-water mark is also read after each phase (ingest to
synthesis; publish with its report), which names the phase that raised it; a release the publish
checks refuse is reported as such (the peak then covers publish up to its checks).
Last line: ``pipeline_memory: peak_rss_mb <a> at scale 1, <b> at scale 16; ratio <r>``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from _rss import peak_rss_mb


def _config(samples: Path, run_dir: Path) -> Path:
    from duetflow.demo.prepare import bundled_config

    data = yaml.safe_load(bundled_config().read_text(encoding="utf-8"))
    data["corpora"] = [{**c, "root": str(samples / Path(c["root"]).name)} for c in data["corpora"]]
    data["synth"]["scripts"] = str(samples / "scripts")
    data["workdir"] = str(run_dir / "work")
    data["release"]["store"] = str(run_dir / "store")
    data["runner"].update({"max_workers": 1})
    path = run_dir / "config.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _child(cfg_path: Path, stages: bool) -> dict[str, Any]:
    import dataclasses

    from duetflow.config import load_config
    from duetflow.pipeline import driver
    from duetflow.pipeline.stages import STAGES, process, synth
    from duetflow.pipeline.stages.publish import run_publish

    peaks: dict[str, float] = {}
    specs = STAGES
    publish_step: Any = run_publish
    if stages:
        import tracemalloc

        tracemalloc.start()

        def measured(fn: Any, name: str) -> Any:
            def wrapped(*a: Any, **k: Any) -> Any:
                tracemalloc.reset_peak()
                try:
                    return fn(*a, **k)
                finally:
                    mb = tracemalloc.get_traced_memory()[1] / 2**20
                    peaks[name] = max(peaks.get(name, 0.0), round(mb, 1))

            return wrapped

        # each stage's step function (the spec's), and the merges of the shard stages
        specs = tuple(
            dataclasses.replace(s, step=measured(s.step, s.step.__name__)) if s.step else s
            for s in STAGES
        )
        publish_step = measured(run_publish, "run_publish")
        for module in (process, synth):
            module.merge_workdirs = measured(module.merge_workdirs, "merge_workdirs")  # type: ignore[attr-defined]
    from duetflow.errors import ManifestError

    def rss() -> float:
        return peak_rss_mb()

    cfg = load_config(cfg_path)
    t0 = time.perf_counter()
    result = driver.run_pipeline(cfg, publish=False, stages=specs)
    phases = {"ingest..synth": rss()}
    dirs = [m.path for m in result.merged]
    try:  # the release's report is made inside publish, from the staged release
        publish_step(dirs, cfg)
        published = "ok"
    except ManifestError as e:  # the release's checks refused it: measured up to there
        published = "refused: " + str(e).splitlines()[0][-80:]
    phases["publish"] = rss()
    return {
        "wall_s": round(time.perf_counter() - t0, 1),
        "kept": {m.label: m.kept for m in result.merged},
        "peak_rss_mb": rss(),
        "peak_rss_after_mb": phases,
        "publish": published,
        "stage_peak_mb": peaks,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--scales", type=int, nargs="+", default=[1, 16])
    ap.add_argument("--stages", action="store_true", help="tracemalloc peak per pipeline step")
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(_child(args.child, args.stages)))
        return
    from duetflow.native_threads import process_defaults

    tmp = Path(tempfile.mkdtemp(prefix="duetflow-bench-pipemem-"))
    env = {**os.environ, "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    process_defaults(env)  # as the `duetflow` command runs (duetflow.native_threads)
    rows: dict[int, dict[str, Any]] = {}
    try:
        for scale in args.scales:
            from duetflow.demo import make_samples

            samples = tmp / f"samples{scale}"
            make_samples(samples, seed=0, scale=scale)
            run_dir = tmp / f"run{scale}"
            run_dir.mkdir()
            cmd = [sys.executable, __file__, "--child", str(_config(samples, run_dir))]
            if args.stages:
                cmd.append("--stages")
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                sys.exit(f"scale {scale} failed:\n{proc.stderr[-4000:]}")
            rows[scale] = json.loads(proc.stdout.strip().splitlines()[-1])
            print(f"scale {scale}: {json.dumps(rows[scale])}", flush=True)
            shutil.rmtree(samples, ignore_errors=True)
            shutil.rmtree(run_dir, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    lo, hi = min(rows), max(rows)
    a, b = rows[lo]["peak_rss_mb"], rows[hi]["peak_rss_mb"]
    print(
        f"pipeline_memory: peak_rss_mb {a:.0f} at scale {lo}, {b:.0f} at scale {hi}; "
        f"ratio {b / a:.3f}"
    )


if __name__ == "__main__":
    main()
