"""HM sessions recorded in a room: turn finding against constructed truth (issue 29).

Usage::

    .venv/bin/python bench/studio_room.py [--seeds 1 2 3] [--vad webrtc silero] [--echo auto off]

For every room (RT60 0.2/0.4/0.6 s, leak -25/-30 dB, delays 3/12/40 ms) and seed it writes one
HM ``tracks`` session whose participant mic hears the system's loudspeaker through a synthetic
reverberant room (plus breaths and fading word endings, :class:`duetflow.demo.studio.RoomLeak`),
runs the studio adapter on it and reports, per configuration: turn F1 (min and mean over
sessions), the median and p90 boundary error of matched turns, floor-taking interruptions
detected that the truth does not have, transcripts whose text could not be placed, and CPU
seconds per hour of audio.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from duetflow.config import TurnsConfig, build_config
from duetflow.corpora.studio import StudioAdapter
from duetflow.corpora.studio.segment import score_turns
from duetflow.demo.studio import RoomLeak, write_session
from duetflow.records.dialogue import Dialogue, Rejection, Turn
from duetflow.turntaking.overlaps import OverlapClass, classify_overlaps

ROOMS = [
    RoomLeak(rt60_s=rt, leak_db=leak, delay_ms=delay)
    for rt in (0.2, 0.4, 0.6)
    for leak in (-25.0, -30.0)
    for delay in (3.0, 12.0, 40.0)
]


@dataclass
class RoomScore:
    sessions: int
    min_f1: float
    mean_f1: float
    median_err_s: float
    p90_err_s: float
    spurious_interruptions: int
    missed: int
    false: int
    untexted_turns: int
    rejected: dict[str, int]
    cpu_s_per_hour: float


def write_rooms(
    root: Path, seeds: list[int], rooms: list[RoomLeak | None], voice: str = "synth"
) -> dict[str, Any]:
    """Write one transcribed HM tracks session per room and seed; return truth by session id.

    A room of None is the dry leak of the sample sessions (-20 dB, 3 ms).
    """
    truth: dict[str, Any] = {}
    for k, room in enumerate(rooms):
        for seed in seeds:
            sid = f"room{k:02d}_s{seed}"
            truth[sid] = write_session(
                root, seed, sid, category="HM", layout="tracks", language="en",
                transcript="text", room=room, voice=voice,  # type: ignore[arg-type]
            )  # fmt: skip
    return truth


def _interruptions(turns: list[Turn]) -> list[float]:
    cfg = TurnsConfig()
    speech = [t for t in turns if t.kind != "nonspeech"]
    return [e.start for e in classify_overlaps(speech, cfg) if e.klass is OverlapClass.INTERRUPTION]


def score_root(root: Path, truth: dict[str, Any], overrides: dict[str, Any]) -> RoomScore:
    """Run the adapter on ``root`` with config ``overrides`` and score it against ``truth``."""
    cfg = build_config({"workdir": str(root.parent / "work"), **overrides})
    adapter = StudioAdapter(root, {"state_dir": None}, config=cfg)
    t0 = time.process_time()
    items = list(adapter.scan())
    cpu = time.process_time() - t0
    f1s: list[float] = []
    errors: list[float] = []
    spurious = missed = false = untexted = 0
    rejected: dict[str, int] = {}
    audio_s = 0.0
    for item in items:
        if isinstance(item, Rejection):
            rejected[item.reason] = rejected.get(item.reason, 0) + 1
            continue
        assert isinstance(item, Dialogue)
        t = truth[item.source_id]
        ref = [Turn(x["speaker"], x["start"], x["end"], kind=x["kind"]) for x in t["turns"]]
        s = score_turns(ref, item.turns)
        f1s.append(s.f1)
        errors.extend(s.boundary_errors_s)
        missed += s.reference - s.matched
        false += s.detected - s.matched
        true_int = _interruptions(ref)
        for x in _interruptions(list(item.turns)):
            if not any(abs(x - y) < 0.5 for y in true_int):
                spurious += 1
        untexted += sum(1 for d in item.turns if not d.text)
        audio_s += item.duration_s
    return RoomScore(
        sessions=len(f1s),
        min_f1=min(f1s) if f1s else 0.0,
        mean_f1=float(np.mean(f1s)) if f1s else 0.0,
        median_err_s=float(np.median(errors)) if errors else float("inf"),
        p90_err_s=float(np.percentile(errors, 90)) if errors else float("inf"),
        spurious_interruptions=spurious,
        missed=missed,
        false=false,
        untexted_turns=untexted,
        rejected=rejected,
        cpu_s_per_hour=3600.0 * cpu / audio_s if audio_s else float("nan"),
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--vad", nargs="+", default=["webrtc"])
    ap.add_argument("--echo", nargs="+", default=["off", "auto"])
    ap.add_argument("--per-room", action="store_true", help="one line per room")
    ap.add_argument("--voice", choices=["synth", "espeak"], default="synth")
    ap.add_argument("--dry", action="store_true", help="dry -20 dB leaks instead of rooms")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="duetflow-bench-room-"))
    try:
        rooms: list[RoomLeak | None] = [None] * 6 if args.dry else list(ROOMS)
        groups: list[tuple[str, list[RoomLeak | None]]] = (
            [(f"rt{r.rt60_s}_l{r.leak_db:.0f}_d{r.delay_ms:.0f}", [r]) for r in ROOMS]
            if args.per_room
            else [(f"{'dry' if args.dry else 'rooms'}/{args.voice}", rooms)]
        )
        print("rooms  vad  echo  sessions  min_F1  mean_F1  med_err_ms  p90_err_ms  "
              "spurious_int  missed  false  untexted  rejected  cpu_s/h")  # fmt: skip
        for label, group in groups:
            root = out / label.replace(" ", "_").replace("/", "_") / "studio"
            truth = write_rooms(root, args.seeds, group, args.voice)
            for vad in args.vad:
                for echo in args.echo:
                    over = {"segment": {"echo": echo, "vad": vad}}
                    s = score_root(root, truth, over)
                    print(
                        f"{label}  {vad}  {echo}  {s.sessions}  {s.min_f1:.3f}  "
                        f"{s.mean_f1:.3f}  {1000 * s.median_err_s:.1f}  "
                        f"{1000 * s.p90_err_s:.1f}  {s.spurious_interruptions}  {s.missed}  "
                        f"{s.false}  {s.untexted_turns}  {s.rejected}  {s.cpu_s_per_hour:.1f}",
                        flush=True,
                    )
    finally:
        if args.out is None:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
