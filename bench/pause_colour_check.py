"""A second method for the pauses' colour: octave-band slope of a Welch spectrum.

    python bench/pause_colour_check.py STORE  (or STORE/releases/<id>)

Independent of the cue audit's ``pause_tilt_db_oct`` (Hann frames of 1024, 1/sqrt(f)-weighted
fit over 100 Hz-8 kHz): the pauses between the turn rows (30 ms in from each end, at least
60 ms) are cut out of the written file and joined, Welch's spectrum (4096 points) is summed in
octave bands centred 125 Hz-2 kHz (inside every language's band) and per hertz, and an unweighted
least-squares line is drawn through the band levels over the octave index. Printed: per
language, category and corpus the mean and sd, then Cohen's d per category pair.
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.signal import welch

from duetflow.audio.io import read_frames

CENTRES = 125.0 * 2.0 ** np.arange(5)  # 125 Hz ... 2 kHz


def octave_slope(x: np.ndarray, sr: int) -> float:
    f, p = welch(x, fs=sr, nperseg=min(4096, x.size))
    lv = [10 * np.log10(p[(f >= c / np.sqrt(2)) & (f < c * np.sqrt(2))].sum()) for c in CENTRES]
    per_hz = np.asarray(lv) - 10 * np.log10(CENTRES)
    return float(np.polyfit(np.log2(CENTRES), per_hz, 1)[0])


def pauses(turns: pd.DataFrame, margin: float = 0.03, shortest: float = 0.06) -> list:
    sp = sorted((float(t.start_s), float(t.end_s)) for t in turns.itertuples()
                if t.kind != "nonspeech")  # fmt: skip
    merged: list[list[float]] = []
    for s, e in sp:
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    out = []
    for (_, e0), (s1, _) in itertools.pairwise(merged):
        if (s1 - margin) - (e0 + margin) >= shortest:
            out.append((e0 + margin, s1 - margin))
    return out


def main(root: Path) -> None:
    store = root if (root / "releases").is_dir() else root.parent.parent
    rel = root if (root / "manifests").is_dir() else sorted((root / "releases").glob("rel-*"))[-1]
    dialogues = pd.read_parquet(rel / "manifests" / "dialogues.parquet")
    turns = pd.read_parquet(rel / "manifests" / "turns.parquet")
    rows = []
    for d in dialogues.itertuples():
        path = store / str(d.audio_path)  # content-addressed, under the store root
        x, sr = read_frames(str(path), mono=True)
        x = np.asarray(x, dtype=np.float64)
        spans = pauses(turns[turns.dialogue_id == d.dialogue_id])
        seg = np.concatenate([x[int(s * sr) : int(e * sr)] for s, e in spans])
        prov = json.loads(str(d.provenance))
        tone = prov.get("room_tone") or prov.get("ambience") or {}
        rows.append((str(d.language)[:2], str(d.category), str(d.corpus), octave_slope(seg, sr),
                     tone.get("own_tilt_db_oct")))  # fmt: skip
    df = pd.DataFrame(rows, columns=["language", "category", "corpus", "slope", "own_tilt"])
    print(df.groupby(["language", "category", "corpus"])[["slope", "own_tilt"]]
          .agg(["mean", "std", "count"]).round(2).to_string())  # fmt: skip
    for lang, g in df.groupby("language"):
        for a, b in itertools.combinations(sorted(g.category.unique()), 2):
            xa, xb = g[g.category == a].slope, g[g.category == b].slope
            pooled = np.sqrt((xa.var() + xb.var()) / 2)
            print(f"{lang} {a}-{b}: d {(xa.mean() - xb.mean()) / pooled:+.2f}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
