"""Report throughput and memory at 1x and 10x corpus size.

One command: ``.venv/bin/python bench/report.py [--dialogues 2000] [--turns 12]``.

A synthetic rendered work directory (``--dialogues`` × scale rows with ``--turns`` turn rows
each, all pointing at one shared 20 s FLAC so the audio sample costs the same at every scale)
is reported in a fresh child process that prints its wall time and peak RSS (``ru_maxrss``).
Memory should stay flat from 1x to 10x: manifests are streamed row group by row group and
every distribution is a fixed-bin histogram.
Last line: ``report: <n> dialogues/s (10x); peak_rss_mb 1x <a> 10x <b>``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import kept_dialogue, rendered_writer, spoken_turn

from duetflow.audio.io import write_audio
from duetflow.records.dialogue import Rejection, Stage

SR = 16000


def make_workdir(root: Path, n: int, turns: int) -> Path:
    rng = np.random.default_rng(0)
    root.mkdir(parents=True, exist_ok=True)
    t = np.arange(20 * SR) / SR
    voice = (0.2 * np.sin(2 * np.pi * 150 * t) * (np.sin(2 * np.pi * 0.5 * t) > 0)).astype(
        np.float32
    )
    write_audio(root / "audio" / "shared.flac", voice, SR)
    with rendered_writer(root, 4096) as w:
        for i in range(n):
            did = f"bench__d{i:07d}"
            ts, start = [], 0.0
            for k in range(turns):
                dur = float(rng.uniform(0.8, 2.5))
                speaker = "A" if k % 2 == 0 else "B"
                ts.append(spoken_turn(did, k, speaker, start, start + dur, "words"))
                start += dur + float(rng.uniform(0.18, 0.23))
            lufs_a = -23.0 + float(rng.normal(0, 0.2))
            lufs_b = -23.0 + float(rng.normal(0, 0.2))
            row = kept_dialogue(
                did,
                f"bench__s{i // 3}",
                speakers=("A", "B"),
                audio_path="audio/shared.flac",
                sha256="0" * 64,
                duration_s=start,
                sample_rate=SR,
                n_turns=turns,
                corpus=("dailytalk", "iemocap", "magicdata_ramc")[i % 3],
                language="zh" if i % 3 == 2 else "en",
                loudness_lufs=(lufs_a, lufs_b),
                gap_ms=(180.0, 230.0),
            )
            w.write(row, ts)
            if i % 10 == 0:
                reason = ("imbalanced", "interruption", "too_short")[i % 3]
                w.reject([Rejection(f"bench__r{i}", Stage.FILTER, reason, corpus="dailytalk")])
    return root


def child(workdir: str, out: str) -> None:
    from duetflow.report import build_report

    t0 = time.perf_counter()
    paths = build_report(Path(workdir), Path(out), audio_sample=8)
    wall = time.perf_counter() - t0
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps({"wall_s": wall, "peak_rss_mb": rss_mb, "dialogues": paths.data.total_dialogues})
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dialogues", type=int, default=2000)
    ap.add_argument("--turns", type=int, default=12)
    ap.add_argument("--child", nargs=2)
    a = ap.parse_args()
    if a.child:
        child(*a.child)
        return
    results = {}
    with tempfile.TemporaryDirectory(prefix="duetflow-bench-report-") as tmp:
        for scale in (1, 10):
            n = a.dialogues * scale
            wd = make_workdir(Path(tmp) / f"wd{scale}", n, a.turns)
            out = subprocess.run(
                [sys.executable, __file__, "--child", str(wd), str(Path(tmp) / f"out{scale}")],
                capture_output=True,
                text=True,
                check=True,
            )
            res = json.loads(out.stdout.strip().splitlines()[-1])
            results[scale] = res
            print(
                f"{scale}x: {n} dialogues, {res['wall_s']:.1f} s, peak {res['peak_rss_mb']:.0f} MB"
            )
    r10 = results[10]
    print(
        f"report: {r10['dialogues'] / r10['wall_s']:.0f} dialogues/s (10x); "
        f"peak_rss_mb 1x {results[1]['peak_rss_mb']:.0f} 10x {r10['peak_rss_mb']:.0f}"
    )


if __name__ == "__main__":
    main()
