"""Do the rows' speaker-change gaps agree with a reader re-measuring the written file?

    python bench/gap_agreement.py DIR [DIR ...] [--own-floor] [--worst N]

Every rendered work directory under each DIR (a folder holding ``dialogues.parquet`` and
``turns.parquet``: a demo's ``work``, a ``duetflow process`` or ``synthesize`` output) is read
dialogue by dialogue. Independent of the renderer's confirmation: the written file is read back
(FLAC, 16-bit), analysed whole (:func:`duetflow.audio.edges.change_gaps`, as
``release.workdir_checks.acoustic_failures`` measures it: the rows' ``turn`` spans, the floor the
provenance records, :func:`duetflow.audio.gap_tolerance.floor_in_file_db`), and every change's
gap compared with the gap the rows carry (next turn's start less the floor holder's end).
``--own-floor`` measures against each pause's own floor instead (what tests/tts's ambience test
reads).

Printed per category: changes, the differences' mean, sd, largest, how many exceed the hold
(1 ms), and how many gaps (rows / re-measured) lie outside the configured band.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from duetflow.audio.edges import change_gaps, change_pauses
from duetflow.audio.gap_tolerance import floor_in_file_db
from duetflow.audio.io import read_frames

BAND_MS = (180.0, 230.0)
HOLD_MS = 1.0


@dataclass(frozen=True)
class Agreement:
    """One speaker change: the rows' gap and the whole-file reader's (ms)."""

    dialogue_id: str
    category: str
    change: int
    at_s: float
    row_ms: float
    read_ms: float | None

    @property
    def diff_ms(self) -> float | None:
        return None if self.read_ms is None else self.read_ms - self.row_ms


def workdirs(roots: list[Path]) -> Iterator[Path]:
    for root in roots:
        for p in sorted(root.rglob("dialogues.parquet")):
            if (p.parent / "turns.parquet").exists() and (p.parent / "audio").exists():
                yield p.parent


def agreements(workdir: Path, *, own_floor: bool = False) -> Iterator[Agreement]:
    """Each speaker change of each dialogue of ``workdir``: rows' gap vs whole-file reader."""
    d = pd.read_parquet(workdir / "dialogues.parquet")
    t = pd.read_parquet(workdir / "turns.parquet")
    by = {k: g for k, g in t[t.kind == "turn"].groupby("dialogue_id")}
    for row in d.itertuples():
        own = by.get(row.dialogue_id)
        if own is None:
            continue
        spans = [(str(s.speaker), float(s.start_s), float(s.end_s)) for s in own.itertuples()]
        prov = json.loads(row.provenance)
        floor = None if own_floor else floor_in_file_db(prov)
        x, sr = read_frames(workdir / row.audio_path, mono=True)
        digital = floor is not None and math.isinf(floor)
        got = change_gaps(x, sr, spans, digital=digital, floor_db=None if digital else floor)
        for k, ((_, _, a1), (_, b0, _)), m in zip(
            range(len(got)), change_pauses(spans), got, strict=True
        ):
            yield Agreement(
                row.dialogue_id,
                str(row.category),
                k,
                a1,
                (b0 - a1) * 1000.0,
                None if m is None else m.gap / sr * 1000.0,
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--own-floor", action="store_true")
    ap.add_argument("--worst", type=int, default=8)
    args = ap.parse_args()
    rows: dict[str, list[Agreement]] = defaultdict(list)
    for w in workdirs(args.dirs):
        for a in agreements(w, own_floor=args.own_floor):
            rows[a.category].append(a)
    every = [a for v in rows.values() for a in v]
    print(f"{'cat':4} {'changes':>7} {'mean':>7} {'sd':>6} {'max|d|':>7} {'>1ms':>5} "
          f"{'none':>4} {'rows out':>8} {'read out':>8}")  # fmt: skip
    for cat, v in [*sorted(rows.items()), ("all", every)]:
        d = np.array([a.diff_ms for a in v if a.diff_ms is not None])
        none = sum(a.read_ms is None for a in v)
        rows_out = sum(not BAND_MS[0] <= a.row_ms <= BAND_MS[1] for a in v)
        read_out = sum(
            a.read_ms is not None and not BAND_MS[0] - 1 <= a.read_ms <= BAND_MS[1] + 1 for a in v
        )
        if d.size == 0:
            continue
        print(
            f"{cat:4} {len(v):7d} {d.mean():7.3f} {d.std():6.3f} {np.abs(d).max():7.2f} "
            f"{int(np.sum(np.abs(d) > HOLD_MS)):5d} {none:4d} {rows_out:8d} {read_out:8d}"
        )
    worst = sorted(
        (a for a in every if a.diff_ms is not None), key=lambda a: -abs(a.diff_ms or 0.0)
    )
    for a in worst[: args.worst]:
        print(
            f"  {a.dialogue_id} change {a.change} at {a.at_s:.3f} s: rows {a.row_ms:.2f} ms, "
            f"read {a.read_ms:.2f} ms ({a.diff_ms:+.2f})"
        )


if __name__ == "__main__":
    main()
