"""Studio turn detection: accuracy vs crosstalk level, speed, and incremental re-ingest cost.

Usage::

    .venv/bin/python bench/studio.py [--seeds 1 2 3] [--crosstalk -10 -15 -20 -25] [--out DIR]

For every crosstalk level and seed it writes one HM ``tracks`` session (mic + clean line-out)
and one HH ``stereo`` session (two mics hearing each other) with the sample generator, detects
turns with :func:`duetflow.corpora.studio.segment.detect_turns` through the studio adapter, and
reports turn-level F1 and boundary errors against the generator's truth, plus the real-time factor
(seconds of dialogue per CPU second). Finally it ingests the sessions of one level (-20 dB) twice
with incremental state and reports both wall times and the second run's counters.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from duetflow.config import build_config
from duetflow.corpora.studio import StudioAdapter
from duetflow.corpora.studio.segment import score_turns
from duetflow.demo.studio import write_session
from duetflow.records.dialogue import Dialogue, Turn


def run(seeds: list[int], levels: list[float], out: Path) -> None:
    print("crosstalk_db  layout  sessions  min_F1  median_err_ms  p90_err_ms  x_realtime")
    for level in levels:
        for layout, category, language in (("tracks", "HM", "en"), ("stereo", "HH", "zh")):
            root = out / f"x{abs(int(level))}" / layout
            truth = {}
            for seed in seeds:
                sid = f"{layout}_{seed}"
                truth[sid] = write_session(
                    root, seed, sid, category=category, layout=layout, language=language,
                    crosstalk_db=level,
                )  # fmt: skip
            adapter = StudioAdapter(root, {"state_dir": None})
            t0 = time.process_time()
            dialogues = [d for d in adapter.scan() if isinstance(d, Dialogue)]
            cpu = time.process_time() - t0
            f1s, errors, audio_s = [], [], 0.0
            for d in dialogues:
                ref = [
                    Turn(t["speaker"], t["start"], t["end"]) for t in truth[d.source_id]["turns"]
                ]
                s = score_turns(ref, d.turns)
                f1s.append(s.f1)
                errors.extend(s.boundary_errors_s)
                audio_s += d.duration_s
            print(
                f"{level:>12.0f}  {layout:6}  {len(dialogues):8d}  {min(f1s):6.3f}  "
                f"{1000 * float(np.median(errors)):13.1f}  "
                f"{1000 * float(np.percentile(errors, 90)):10.1f}  {audio_s / cpu:10.1f}"
            )
    level = -20.0 if -20.0 in levels else levels[0]
    root = out / f"x{abs(int(level))}"
    cfg = build_config({"workdir": str(out / "work")})
    for label in ("first ingest", "re-run"):
        adapter = StudioAdapter(root, config=cfg)
        t0 = time.perf_counter()
        n = sum(1 for _ in adapter.scan())
        print(f"{label}: {n} sessions in {time.perf_counter() - t0:.2f} s; {adapter.counters}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--crosstalk", type=float, nargs="+", default=[-10.0, -15.0, -20.0, -25.0])
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="duetflow-bench-studio-"))
    try:
        run(args.seeds, args.crosstalk, out)
    finally:
        if args.out is None:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
