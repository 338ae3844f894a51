"""Cost of the issue-29 speech models: CPU seconds per hour of audio, and linearity.

Usage::

    .venv/bin/python bench/quality_models.py [--minutes 1 4] [--repeats 2]

For an HM ``tracks`` session in a reverberant room (eSpeak NG voices, so Silero hears speech)
repeated to each length, it measures, interleaved (A B A B …) so machine load hits every
variant alike: turn finding with WebRTC VAD + the echo model (``segment.vad: webrtc``), the
same with Silero VAD (``segment.vad: silero``), and DNSMOS of the participant's track streamed
in 9.01 s windows. Printed: CPU s per hour of audio per length, and the ratio long/short of
that figure (1.0 = linear in audio).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import soundfile as sf

from duetflow.audio.dnsmos import get_model, score_file
from duetflow.config import SegmentConfig
from duetflow.corpora.studio.segment import TrackSource, detect_turns_in_files
from duetflow.demo.studio import RoomLeak, write_session


def _long_session(src: Path, dst: Path, minutes: float) -> float:
    """``src``'s two tracks repeated to ``minutes`` in ``dst``; returns the audio seconds."""
    dst.mkdir(parents=True, exist_ok=True)
    seconds = 0.0
    for name in ("user.wav", "system.wav"):
        x, sr = sf.read(src / name, dtype="float32")
        reps = max(1, int(round(minutes * 60 * sr / len(x))))
        with sf.SoundFile(dst / name, "w", sr, 1, "PCM_16") as f:
            for _ in range(reps):
                f.write(x)
        if name == "user.wav":
            seconds = reps * len(x) / sr
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, nargs="+", default=[1.0, 4.0])
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    out = Path(tempfile.mkdtemp(prefix="duetflow-bench-quality-"))
    try:
        base = out / "studio"
        write_session(
            base, 1, "room", category="HM", layout="tracks", language="en",
            room=RoomLeak(0.5, -25.0, 20.0), voice="espeak",
        )  # fmt: skip
        get_model()  # load once, outside the timings
        sessions = {m: (out / f"m{m:g}", _long_session(base / "room", out / f"m{m:g}", m))
                    for m in args.minutes}  # fmt: skip
        variants = {
            "webrtc+echo": lambda d: detect_turns_in_files(
                {"user": TrackSource(d / "user.wav"), "system": TrackSource(d / "system.wav")},
                SegmentConfig(vad="webrtc"), echo={"user": "system"},
            ),
            "silero+echo": lambda d: detect_turns_in_files(
                {"user": TrackSource(d / "user.wav"), "system": TrackSource(d / "system.wav")},
                SegmentConfig(vad="silero"), echo={"user": "system"},
            ),
            "dnsmos": lambda d: score_file(d / "user.wav"),
        }  # fmt: skip
        cost: dict[tuple[str, float], list[float]] = {}
        for _ in range(args.repeats):
            for m, (d, seconds) in sessions.items():
                for name, fn in variants.items():
                    t0 = time.process_time()
                    fn(d)
                    cpu = time.process_time() - t0
                    cost.setdefault((name, m), []).append(3600.0 * cpu / seconds)
        print("model  " + "  ".join(f"{m:g}min_cpu_s_per_h" for m in args.minutes) + "  ratio")
        for name in variants:
            per = [float(np.median(cost[(name, m)])) for m in args.minutes]
            print(f"{name}  " + "  ".join(f"{v:.1f}" for v in per) + f"  {per[-1] / per[0]:.2f}")
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
