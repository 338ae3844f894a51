"""Cost of the issue-29 speech models: CPU seconds per hour of audio, and linearity.

Usage::

    .venv/bin/python bench/quality_models.py [--minutes 1 4] [--repeats 2]

For an HM ``tracks`` session in a reverberant room (eSpeak NG voices, so Silero hears speech)
repeated to each length, it measures, interleaved (A B A B …) so machine load hits every
variant alike: turn finding with WebRTC VAD + the echo model (``segment.vad: webrtc``), the
same with Silero VAD (``segment.vad: silero``), and DNSMOS of the participant's track streamed
in 9.01 s windows. Printed: CPU s per hour of audio per length, and the ratio long/short of
that figure (1.0 = linear in audio).

``--rendered N`` measures DNSMOS where the pipeline runs it (issue 29): the process stage
(``process_dialogues``: timing, selection, render) of N constructed two-speaker eSpeak NG
dialogues (~31 s each) with ``quality.dnsmos`` off and on, interleaved, as CPU s per rendered
hour and the ratio on/off; and, on the same rendered files, what scoring every turn on its own
would cost (one 9.01 s window per turn, the reference's rule for short clips) against the
dialogue + per-speaker scoring the pipeline does.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

from duetflow.audio.dnsmos import WINDOW_S, get_model, score_clip, score_file
from duetflow.audio.io import read_frames, resample
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


TEXTS = [
    "They closed the old bridge for repairs, so the buses take the long way now.",
    "Really? I had no idea, when did that happen?",
    "Last week. Remember to take the shopping list from the kitchen table.",
    "I always forget it, thanks for reminding me about that.",
    "The weather should be better tomorrow, so we could walk to the market.",
    "That sounds good, I would like to buy some fresh bread and cheese.",
    "Let us meet at nine then, near the fountain in the square.",
    "Perfect, see you there, and do not forget your umbrella just in case.",
]


def _dialogues(root: Path, n: int) -> list[Any]:
    """``n`` two-channel HH dialogues of the eight sentences (voices vary per dialogue)."""
    from duetflow.records.dialogue import Category, Dialogue, MultichannelSource, Speaker, Turn
    from duetflow.tts.espeak import speak

    out = []
    for k in range(n):
        wa, ra = speak(TEXTS[0::2], f"en-us+m{1 + k % 4}", 160 + 5 * k, 50)
        wb, rb = speak(TEXTS[1::2], f"en-us+f{1 + k % 4}", 165 + 5 * k, 50)
        clips = []
        for i in range(len(TEXTS)):
            w, r = (wa, ra) if i % 2 == 0 else (wb, rb)
            x = resample(np.asarray(w[i // 2], np.float32), r, 16000)
            clips.append(x / np.max(np.abs(x)) * 0.3)
        total = sum(len(c) for c in clips) / 16000 + 0.6 * len(clips) + 1.0
        tracks = np.zeros((int(total * 16000), 2), np.float32)
        turns, t = [], 0.5
        for i, c in enumerate(clips):
            a = int(t * 16000)
            tracks[a : a + len(c), i % 2] += c
            turns.append(Turn("AB"[i % 2], round(t, 3), round(t + len(c) / 16000, 3), TEXTS[i]))
            t += len(c) / 16000 + 0.6
        tracks += np.random.default_rng(k).normal(0, 1e-3, tracks.shape).astype(np.float32)
        path = root / f"d{k}.wav"
        sf.write(path, tracks, 16000, subtype="PCM_16")
        out.append(
            Dialogue(
                id=f"bench__d{k}", corpus="bench", source_id=f"bench__d{k}",
                category=Category.HH, language="en", topic="t",
                speakers=(Speaker("A"), Speaker("B")), turns=tuple(turns),
                source=MultichannelSource(str(path), {"A": 0, "B": 1}), duration_s=total,
            )
        )  # fmt: skip
    return out


def rendered(n: int, repeats: int) -> None:
    """The process stage with DNSMOS off and on; per-turn scoring of the rendered turns."""
    from duetflow.config import build_config
    from duetflow.pipeline.process import process_dialogues
    from duetflow.records.manifest import DIALOGUES, TURNS, iter_records
    from duetflow.records.rows import RenderedDialogueRow, RenderedTurnRow

    out = Path(tempfile.mkdtemp(prefix="duetflow-bench-dnsmos-"))
    try:
        ds = _dialogues(out, n)
        get_model()
        window = {"min_s": 10, "max_s": 60}
        cfgs = {
            "off": build_config({"window": window}),
            "on": build_config({"window": window, "quality": {"dnsmos": True}}),
        }
        cost: dict[str, list[float]] = {"off": [], "on": [], "per_turn": []}
        audio = 0.0
        for rep in range(repeats):
            for name, cfg in cfgs.items():
                wd = out / f"{name}{rep}"
                t0 = time.process_time()
                res = process_dialogues(ds, cfg, wd)
                cpu = time.process_time() - t0
                audio = res.audio_s
                cost[name].append(3600.0 * cpu / audio)
            wd = out / f"on{rep}"
            rows = list(iter_records(wd / DIALOGUES, RenderedDialogueRow))
            turns = list(iter_records(wd / TURNS, RenderedTurnRow))
            t0 = time.process_time()
            for row in rows:
                x, sr = read_frames(wd / row.audio_path)
                x = x.mean(axis=1) if x.ndim == 2 else x
                for t in turns:
                    if t.dialogue_id == row.dialogue_id:
                        score_clip(x[int(t.start_s * sr) : int(t.end_s * sr)], hop_s=WINDOW_S)
            cost["per_turn"].append(3600.0 * (time.process_time() - t0) / audio)
        med = {k: float(np.median(v)) for k, v in cost.items()}
        print(f"rendered {audio:.1f} s in {n} dialogues, {len(turns)} turns in the last run")
        print("process CPU s per rendered hour: dnsmos off {off:.1f}, on {on:.1f}".format(**med))
        dn = med["on"] - med["off"]
        ratio = med["on"] / med["off"]
        print(f"DNSMOS (dialogue + 2 speakers): {dn:.1f} s/h, on/off ratio {ratio:.2f}")
        print(f"DNSMOS per turn instead: {med['per_turn']:.1f} s/h ({med['per_turn'] / dn:.2f}x)")
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, nargs="+", default=[1.0, 4.0])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--rendered", type=int, default=0, help="dialogues for the process bench")
    args = ap.parse_args()
    if args.rendered:
        rendered(args.rendered, args.repeats)
        return
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
