"""FLAC bytes against CPU per compression level, on rendered dialogues.

    python bench/encoding.py [--rendered DIR] [--repeat 5]

``DIR`` is a rendered work directory (``duetflow process`` output); without it the sample
corpora (scale 1, seed 0: DailyTalk, IEMOCAP, MagicData-RAMC) are generated, ingested and
rendered into a temporary folder first. Every file's 16-bit samples are encoded again with
``soundfile.write`` at levels 0-8 (the int16 path the renderer uses) and once at level 5 from
float32 (the path before), rotating the order ``--repeat`` times; the best process-CPU time of
each counts. Last line: ``encoding: level <l> <x> x realtime, <r> of PCM; float path <y> x``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import soundfile as sf

from duetflow.audio.io import FLAC_COMPRESSION_LEVEL

DUETFLOW = str(Path(sys.executable).with_name("duetflow"))
LEVELS = (0, 1, 2, 3, 4, 5, 6, 8)


def _render(root: Path) -> Path:
    from duetflow.demo import make_samples

    samples = root / "samples"
    make_samples(samples, seed=0, scale=1, include=["dailytalk", "iemocap", "magicdata_ramc"])
    intakes = []
    for corpus, folder in (
        ("dailytalk", "dailytalk"),
        ("iemocap", "IEMOCAP_full_release"),
        ("magicdata_ramc", "MagicData-RAMC"),
    ):
        out = root / f"in_{corpus}"
        subprocess.run(
            [DUETFLOW, "ingest", "--corpus", corpus, "--root", str(samples / folder),
             "--workdir", str(out)],
            check=True, capture_output=True,
        )  # fmt: skip
        intakes += ["--intake", str(out)]
    rendered = root / "rendered"
    subprocess.run(
        [DUETFLOW, "process", *intakes, "--workdir", str(rendered), "--no-progress"],
        check=True,
        capture_output=True,
    )
    return rendered


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rendered", type=Path)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="duetflow-bench-enc-") as tmp:
        rendered = args.rendered or _render(Path(tmp))
        files = sorted((rendered / "audio").glob("*.flac"))
        data = [sf.read(f, dtype="int16")[0] for f in files]
        sr = sf.info(str(files[0])).samplerate
        dur = sum(len(d) for d in data) / sr
        pcm_bytes = sum(d.size for d in data) * 2
        out = os.path.join(tmp, "x.flac")
        paths: list[int | str] = [*LEVELS, "float"]
        best: dict[int | str, tuple[float, int]] = {}
        for rep in range(args.repeat):
            for p in paths[rep % len(paths) :] + paths[: rep % len(paths)]:
                level = FLAC_COMPRESSION_LEVEL if p == "float" else int(p)
                t0, size = time.process_time(), 0
                for d in data:
                    x = d.astype(np.float32) / np.float32(32768) if p == "float" else d
                    sf.write(out, x, sr, "PCM_16", format="FLAC", compression_level=level / 8)
                    size += os.path.getsize(out)
                cpu = time.process_time() - t0
                if p not in best or cpu < best[p][0]:
                    best[p] = (cpu, size)
    print(f"{len(files)} files, {dur:.1f} s of audio at {sr} Hz")
    print(f"{'level':<22}{'CPU ms/audio min':>18}{'x realtime':>12}{'bytes':>12}{'of PCM':>8}")
    for p, (cpu, size) in best.items():
        name = f"{FLAC_COMPRESSION_LEVEL}, from float32" if p == "float" else str(p)
        print(
            f"{name:<22}{cpu / dur * 60000:>18.1f}{dur / cpu:>12.0f}{size:>12}"
            f"{size / pcm_bytes:>8.3f}"
        )
    ours, flt = best[FLAC_COMPRESSION_LEVEL], best["float"]
    print(
        f"encoding: level {FLAC_COMPRESSION_LEVEL} {dur / ours[0]:.0f} x realtime, "
        f"{ours[1] / pcm_bytes:.3f} of PCM; float path {dur / flt[0]:.0f} x"
    )


if __name__ == "__main__":
    main()
