"""Select-stage cost on RAMC-sized dialogues: windows + filters + statistics per source hour.

One command: ``.venv/bin/python bench/select_stage.py`` (``--minutes 30 --dialogues 4``).

Each source dialogue is a seeded synthetic conversation of ``--minutes`` minutes (turns 0.5–8 s,
FTOs −0.4..1.0 s, a backchannel after one turn in five), the shape of a MagicData-RAMC recording.
For every window policy it reports CPU seconds per source hour and the peak Python heap
(tracemalloc) while streaming the dialogues one by one into ``CorpusStats``; the heap must not
grow with ``--dialogues``. Last line: ``select: <x> s per source hour (greedy); peak_mb <m>``.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from collections.abc import Iterator

from duetflow.config import build_config
from duetflow.records.dialogue import (
    Category,
    Dialogue,
    MixedMonoSource,
    Speaker,
    Turn,
    dialogue_id,
)
from duetflow.seeding import rng_for
from duetflow.turntaking.selection import select
from duetflow.turntaking.stats import CorpusStats


def synthetic(index: int, minutes: float) -> Dialogue:
    rng = rng_for(0, "bench-select", index)
    turns: list[Turn] = []
    t, cur = 0.5, "A"
    while t < minutes * 60:
        d = float(rng.uniform(0.5, 8.0))
        turns.append(Turn(cur, round(t, 3), round(t + d, 3), "words"))
        other = "B" if cur == "A" else "A"
        if rng.random() < 0.2 and d > 2.0:
            b = t + d * float(rng.uniform(0.2, 0.6))
            turns.append(Turn(other, round(b, 3), round(b + float(rng.uniform(0.2, 0.7)), 3)))
        t += d + float(rng.uniform(-0.4, 1.0))
        cur = other
    turns.sort(key=lambda x: (x.start, x.end))
    return Dialogue(
        id=dialogue_id("bench", f"d{index}"),
        corpus="bench",
        source_id=f"d{index}",
        category=Category.HH,
        language="zh",
        topic="",
        speakers=(Speaker("A"), Speaker("B")),
        turns=tuple(turns),
        source=MixedMonoSource(path=f"d{index}.wav"),
        duration_s=max(x.end for x in turns),
    )


def stream(n: int, minutes: float) -> Iterator[Dialogue]:
    for i in range(n):
        yield synthetic(i, minutes)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--dialogues", type=int, default=4)
    args = ap.parse_args()
    first = 0.0
    peak_first = 0.0
    for policy in ("greedy", "non_overlapping", "max_count"):
        cfg = build_config({"window": {"policy": policy}})
        stats = CorpusStats()
        tracemalloc.start()
        cpu = 0.0
        hours = 0.0
        for d in stream(args.dialogues, args.minutes):
            t0 = time.process_time()
            sel = select(d, cfg)
            cpu += time.process_time() - t0
            hours += d.duration_s / 3600
            stats.add(sel.stats)
            stats.add_rejections(sel.rejected)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        total = stats.to_dict()["total"]
        per_hour = cpu / hours
        print(
            f"{policy:16s} {per_hour:6.2f} s/source-hour  windows {total['windows']:4d}  "
            f"kept {total['kept']:4d}  peak_mb {peak / 2**20:6.1f}  "
            f"rejected {total['rejected_by_reason']}"
        )
        if policy == "greedy":
            first, peak_first = per_hour, peak / 2**20
    print(f"select: {first:.2f} s per source hour (greedy); peak_mb {peak_first:.1f}")


if __name__ == "__main__":
    main()
