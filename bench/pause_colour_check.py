"""A second method for the pauses' colour: a Welch spectrum of the pauses, read four ways.

    python bench/pause_colour_check.py STORE  (or STORE/releases/<id>)

Independent of the cue audit's pause cues (Hann frames of 1024 wholly inside each pause;
``pause_tilt_db_oct`` a 1/sqrt(f)-weighted fit over 100 Hz-8 kHz, ``pause_rolloff_hz`` the 85 %
energy frequency): the pauses between the turn rows (30 ms in from each end, at least 60 ms)
are cut out of the written file and joined, and Welch's spectrum (4096 points, across the
joins) is read as

* ``slope``: band powers in octaves centred 125 Hz-2 kHz (inside every language's band), per
  hertz, an unweighted least-squares line over the octave index (dB/oct): the colour in band;
* ``low_db``: the share of the pauses' power under 100 Hz (dB): what sets the 85 % roll-off;
* ``above_db``: the mean level 4.5-7 kHz over the mean level 200 Hz-3.5 kHz (dB): energy above
  a 4 kHz band, where clicks (a step in the room tone) show and the audit's tilt fit reaches;
* ``rolloff``: the 85 % energy frequency of the Welch spectrum (Hz, 3.9 Hz bins at 16 kHz).

Printed: per language, category and corpus the mean and sd, then Cohen's d per category pair.
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


def low_above_rolloff(x: np.ndarray, sr: int) -> tuple[float, float, float]:
    f, p = welch(x, fs=sr, nperseg=min(4096, x.size))
    low = 10 * np.log10(p[f < 100].sum() / p.sum())
    above = 10 * np.log10(p[(f >= 4500) & (f < 7000)].mean() / p[(f >= 200) & (f < 3500)].mean())
    roll = float(f[int(np.searchsorted(np.cumsum(p), 0.85 * p.sum()))])
    return float(low), float(above), roll


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
                     *low_above_rolloff(seg, sr), tone.get("own_tilt_db_oct")))  # fmt: skip
    cols = ["slope", "low_db", "above_db", "rolloff", "own_tilt"]
    df = pd.DataFrame(rows, columns=["language", "category", "corpus", *cols])
    pd.set_option("display.width", 200)
    print(df.groupby(["language", "category", "corpus"])[cols]
          .agg(["mean", "std"]).round(2).to_string())  # fmt: skip
    for lang, g in df.groupby("language"):
        for a, b in itertools.combinations(sorted(g.category.unique()), 2):
            ds = []
            for c in cols[:4]:
                xa, xb = g[g.category == a][c], g[g.category == b][c]
                pooled = np.sqrt((xa.var() + xb.var()) / 2)
                ds.append(f"{c} {(xa.mean() - xb.mean()) / pooled:+.2f}")
            print(f"{lang} {a}-{b}: d " + ", ".join(ds))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
