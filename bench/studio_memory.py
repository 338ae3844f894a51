"""Peak memory of studio ingest against session length: streamed vs whole-track turn detection.

Usage::

    .venv/bin/python bench/studio_memory.py [--minutes 120] [--rate 48000]
        [--baseline-minutes 15] [--out DIR]

Builds one HH ``tracks`` session (two mics hearing each other, 16-bit WAV at ``--rate``) of
``--minutes`` by repeating a generated ~1-minute dialogue, written block by block so the bench
itself stays small. Then, each in a fresh child process whose peak RSS (process tree, sampled
every 20 ms) and CPU time are recorded:

* ``ingest``: ``duetflow ingest --corpus studio`` on the full session (streamed detection);
* at ``--baseline-minutes`` (a length the whole-track path can afford on a shared machine),
  the same command, and the *whole-track* path this replaced — both tracks read whole, resampled
  to 16 kHz and passed to the in-memory ``detect_turns`` — side by side, so the ratio is
  measured within one run.

Prints one row per run and a last line with the headline figures.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import psutil
import soundfile as sf
import yaml

from duetflow.audio.io import read_frames, resample
from duetflow.demo.studio import write_session

_WHOLE_TRACK = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from duetflow.audio.io import read_frames, resample, to_mono
    from duetflow.corpora.studio.segment import ANALYSIS_RATE, detect_turns
    folder = Path(sys.argv[1])
    tracks = {}
    for name in sys.argv[2:]:
        x, sr = read_frames(folder / name, mono=True)
        tracks[name] = resample(to_mono(x), sr, ANALYSIS_RATE)
    print(len(detect_turns(tracks, ANALYSIS_RATE).turns))
    """
)


def build_session(folder: Path, minutes: float, rate: int, seed: int = 7) -> list[str]:
    """A ``minutes`` long HH tracks session at ``rate``; returns its two track file names."""
    base = folder.parent / f".{folder.name}-seed"
    write_session(base, seed, "unit", category="HH", layout="tracks", language="en")
    unit = base / "unit"
    meta = yaml.safe_load((unit / "session.yaml").read_text("utf-8"))
    names = [sp["file"] for sp in meta["speakers"]]
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        x, sr = read_frames(unit / name, mono=True)
        y = resample(x, sr, rate)
        reps = int(np.ceil(minutes * 60 * rate / len(y)))
        with sf.SoundFile(folder / name, "w", rate, 1, "PCM_16") as f:
            for _ in range(reps):
                f.write(y)
    meta["session_id"] = folder.name
    (folder / "session.yaml").write_text(yaml.safe_dump(meta), "utf-8")
    shutil.rmtree(base)
    return names


def measure(cmd: list[str]) -> tuple[float, float, float, str]:
    """(peak RSS MB of the process tree, wall s, CPU s, stdout) of a child process."""
    t0 = time.perf_counter()
    proc = psutil.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0
    cpu: dict[int, float] = {}
    while proc.poll() is None:
        try:
            procs = [proc, *proc.children(recursive=True)]
            rss = 0
            for p in procs:
                with p.oneshot():
                    rss += p.memory_info().rss
                    t = p.cpu_times()
                    cpu[p.pid] = t.user + t.system
            peak = max(peak, rss)
        except psutil.Error:
            pass
        time.sleep(0.02)
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[:3]} failed:\n{err[-3000:]}")
    return peak / 1e6, wall, sum(cpu.values()), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=120.0)
    ap.add_argument("--rate", type=int, default=48000)
    ap.add_argument("--baseline-minutes", type=float, default=15.0)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    tmp = args.out or Path(tempfile.mkdtemp(prefix="duetflow-bench-studio-mem-"))
    exe = str(Path(sys.executable).parent / "duetflow")
    rows = []
    try:
        for minutes in sorted({args.baseline_minutes, args.minutes}):
            root = tmp / f"m{minutes:g}"
            names = build_session(root / f"long{minutes:g}", minutes, args.rate)
            audio_h = minutes / 60
            out = tmp / f"work{minutes:g}"
            cmd = [exe, "ingest", "--corpus", "studio", "--root", str(root), "--out", str(out)]
            rss, wall, cpu, text = measure(cmd)
            assert "kept 1" in text, text
            rows.append(("ingest (streamed)", minutes, rss, wall, cpu, audio_h))
            if minutes == args.baseline_minutes:
                folder = root / f"long{minutes:g}"
                cmd = [sys.executable, "-c", _WHOLE_TRACK, str(folder), *names]
                rss, wall, cpu, _ = measure(cmd)
                rows.append(("whole-track detect_turns", minutes, rss, wall, cpu, audio_h))
            shutil.rmtree(root)
    finally:
        if args.out is None:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"session: 2 x 16-bit mono WAV at {args.rate} Hz")
    print("path                        minutes  peak_rss_mb  wall_s  cpu_s  x_realtime_per_cpu_s")
    for name, minutes, rss, wall, cpu, audio_h in rows:
        print(
            f"{name:<26} {minutes:8.0f} {rss:12.0f} {wall:7.1f} {cpu:6.1f} "
            f"{audio_h * 3600 / max(cpu, 1e-9):21.0f}"
        )
    full = next(r for r in rows if r[0].startswith("ingest") and r[1] == args.minutes)
    base_s = next(r for r in rows if r[0].startswith("ingest") and r[1] == args.baseline_minutes)
    base_w = next(r for r in rows if r[0].startswith("whole"))
    print(
        f"studio_memory: {args.minutes:g} min ingest peak_rss_mb {full[2]:.0f}; at "
        f"{args.baseline_minutes:g} min streamed {base_s[2]:.0f} vs whole-track {base_w[2]:.0f} "
        f"({base_w[2] / base_s[2]:.1f}x)"
    )


if __name__ == "__main__":
    main()
