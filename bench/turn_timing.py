"""Acoustic turn timing: its cost per source hour, what it adds to the process stage, its memory.

One command: ``.venv/bin/python bench/turn_timing.py`` (``--minutes 30 --repeat 3``).

* corpus: seeded synthetic conversations in two shapes, written to a temporary folder: a mono
  mix (MagicData-RAMC / studio mono: 16 kHz, both speakers in one channel) and a two-channel
  recording (IEMOCAP / studio stereo: one speaker per channel, -14 dB crosstalk), turns of
  1.5–6 s with 0.2–0.9 s pauses, one change in four a 0.1–0.25 s terminal overlap, annotations
  20–250 ms loose on each side;
* **timing**: :func:`duetflow.acoustics.timing.refine_timing` on a ``--minutes`` recording of each
  shape, CPU seconds per source hour (``time.process_time``: per core);
* **process, before / after**: :func:`duetflow.pipeline.process.process_dialogues` (timing, windows,
  filters, render of every kept window; interruptions allowed, so both render about the same
  windows) on a 3-minute recording of each shape with ``turns.acoustic_timing`` false and
  true, interleaved ``--repeat`` times, the best run of each (the least disturbed on a shared
  machine); the ratio is the share timing adds;
* **memory**: the peak Python heap (tracemalloc, numpy included) of timing a 2-minute and a
  ``--minutes`` recording: flat when the ratio is about 1.

Last line: ``turn_timing: <x> s per source hour (mono); process +<p> %; peak_ratio <r>``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
import soundfile as sf

from duetflow.acoustics.timing import refine_timing
from duetflow.config import build_config
from duetflow.demo.voice import FEMALE, MALE, room_tone, speech
from duetflow.pipeline.process import process_dialogues
from duetflow.records.dialogue import (
    AudioSource,
    Category,
    Dialogue,
    MixedMonoSource,
    MultichannelSource,
    Speaker,
    Turn,
)

SR = 16000


def recording(root: Path, name: str, minutes: float, stereo: bool, seed: int = 0) -> Dialogue:
    """A synthetic conversation written block by block (one turn at a time)."""
    rng = np.random.default_rng(seed)
    pool = {
        s: [speech(float(d), SR, v, rng, lv) for d in rng.uniform(1.5, 6.0, 6)]
        for s, v, lv in (("A", MALE, -20.0), ("B", FEMALE, -26.0))
    }
    path = root / f"{name}.wav"
    turns: list[Turn] = []
    pos, who, k = 0.5, "A", 0
    plan: list[tuple[str, float, np.ndarray]] = []
    while pos < minutes * 60:
        sig = pool[who][int(rng.integers(6))]
        plan.append((who, pos, sig))
        end = pos + len(sig) / SR
        lo, hi = (float(v) for v in rng.uniform(0.02, 0.25, 2))
        turns.append(Turn(who, round(max(0.0, pos - lo), 3), round(end + hi, 3), f"t{k}"))
        step = (
            -float(rng.uniform(0.1, 0.25)) if rng.random() < 0.25 else float(rng.uniform(0.2, 0.9))
        )
        pos, who, k = end + step, "B" if who == "A" else "A", k + 1
    total = pos + 1.0
    n = int(total * SR)
    block = 20 * SR
    channels = 2 if stereo else 1
    with sf.SoundFile(path, "w", SR, channels, subtype="PCM_16") as f:
        for b0 in range(0, n, block):
            b1 = min(n, b0 + block)
            own = {s: np.zeros(b1 - b0) for s in "AB"}
            for s, t0, sig in plan:
                i0 = int(t0 * SR)
                if i0 >= b1 or i0 + len(sig) <= b0:
                    continue
                a, b = max(i0, b0), min(i0 + len(sig), b1)
                own[s][a - b0 : b - b0] += sig[a - i0 : b - i0]
            if stereo:
                x = np.stack(
                    [own["A"] + 0.2 * own["B"], own["B"] + 0.2 * own["A"]], axis=1
                ) + np.stack([room_tone((b1 - b0) / SR, SR, -55.0, rng)[: b1 - b0]] * 2, axis=1)
            else:
                x = own["A"] + own["B"] + room_tone((b1 - b0) / SR, SR, -52.0, rng)[: b1 - b0]
            f.write(x.astype(np.float32))
    source: AudioSource = (
        MultichannelSource(str(path), {"A": 0, "B": 1}) if stereo else MixedMonoSource(str(path))
    )
    return Dialogue(
        id=f"bench__{name}", corpus="bench", source_id=name, category=Category.HH,
        language="en", topic="", speakers=(Speaker("A"), Speaker("B")), turns=tuple(turns),
        source=source, duration_s=total,
    )  # fmt: skip


def _timing(d: Dialogue) -> tuple[float, int]:
    cfg = build_config({})
    tracemalloc.start()
    t0 = time.process_time()
    refine_timing(d, cfg.turns)
    cpu = time.process_time() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return cpu, peak


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        summary: dict[str, float] = {}
        for shape, stereo in (("mono", False), ("stereo", True)):
            long = recording(root, f"{shape}_long", args.minutes, stereo)
            short = recording(root, f"{shape}_short", 2.0, stereo)
            cpu, peak_long = _timing(long)
            _, peak_short = _timing(short)
            per_hour = cpu / (long.duration_s / 3600)
            print(
                f"{shape}: timing {cpu:.2f} s CPU for {long.duration_s / 60:.1f} min "
                f"({per_hour:.1f} s per source hour, {long.duration_s / cpu:.0f}x real time); "
                f"peak heap {peak_short / 1e6:.1f} MB (2 min) vs {peak_long / 1e6:.1f} MB "
                f"({args.minutes:.0f} min): ratio {peak_long / peak_short:.2f}"
            )
            summary[f"{shape}_per_hour"] = per_hour
            summary[f"{shape}_peak_ratio"] = peak_long / peak_short
            d = recording(root, f"{shape}_proc", 3.0, stereo, seed=1)
            best = {False: float("inf"), True: float("inf")}
            kept = {}
            for r in range(args.repeat):
                for on in (False, True):
                    # interruptions kept, so both runs render (about) the same windows
                    cfg = build_config(
                        {"turns": {"acoustic_timing": on}, "filters": {"max_interruptions": 10**6}}
                    )
                    t0 = time.process_time()
                    res = process_dialogues([d], cfg, root / f"out_{shape}_{on}_{r}")
                    best[on] = min(best[on], time.process_time() - t0)
                    kept[on] = (len(res.dialogues), sorted(x.reason for x in res.rejections))
            alone, _ = _timing(d)
            added = 100.0 * (best[True] / best[False] - 1.0)
            print(
                f"{shape}: process 3 min: {best[False]:.2f} s without timing, {best[True]:.2f} s "
                f"with (+{added:.1f} %; timing alone {alone:.2f} s); rendered/rejected without "
                f"{kept[False]}, with {kept[True]}"
            )
            summary[f"{shape}_added"] = added
    print(
        f"turn_timing: {summary['mono_per_hour']:.1f} s per source hour (mono); "
        f"process +{summary['mono_added']:.1f} %; "
        f"peak_ratio {max(summary['mono_peak_ratio'], summary['stereo_peak_ratio']):.2f}"
    )


if __name__ == "__main__":
    main()
