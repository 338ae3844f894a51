"""A second method for seven cues of the audit, to show the audit measures what it says.

    python bench/cue_check.py SOURCE [--cues CUES_PARQUET] [--per-category N]

SOURCE is what ``duetflow audit`` reads (a release folder, a store root, work directories).
The audit's values (``cues.parquet`` from ``duetflow audit SOURCE --out DIR``, or measured
here when not given) are compared per dialogue with independent estimates:

* **speech bandwidth** without an FFT: the cut-off of a Butterworth high-pass (order 10),
  found by bisection, above which 1 % of the speech turns' energy lies (each turn filtered on
  its own, no joins; the first :data:`SPEECH_S` seconds of speech of each dialogue);
* **lead-in and tail** without the turn rows: the first and last 10 ms frame of the mix more
  than 15 dB above the file's quiet level (its 10th-percentile frame), from the audio alone.

* **band edge** without an FFT: band-pass filters stepped by 25 Hz (see
  :func:`band_edge_by_filters`);
* **SNR** as the pipeline sets it with another meter and another floor: pyloudnorm's BS.1770
  loudness of the speech over the median 20 ms frame power of the pauses;
* **true-peak margin** with another oversampler: the configured ceiling (the render section's
  default, -1 dBTP) less the peak of the whole file upsampled 4x by a polyphase FIR
  (``scipy.signal.resample_poly``; the audit uses soxr around the loudest blocks), capped as
  the audit caps it;
* **speaking rate** with the speech time read from the audio: spoken characters over the
  10 ms frames inside the turn rows that lie more than 15 dB over the file's quiet level
  (voiced time: the pauses inside a turn left out, so it reads higher than the audit's rate,
  which counts the turns' whole extents; a pair's d is what compares).

Printed: per cue the Pearson r and the median |difference| over dialogues, the mean ± sd per
language and category by both methods, then Cohen's d per language and category pair by both
methods. docs/fairness.md quotes the figures.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from scipy import signal

from duetflow.audio.io import read_frames
from duetflow.config.release import CueThresholds
from duetflow.fairness.compare import cohens_d
from duetflow.fairness.cues import (
    BANDWIDTH_SHARE,
    CEILING_REACH_DB,
    DEFAULT_LEVELS,
    DialogueCues,
    TurnSpan,
    measure_file,
    speech_spans,
)
from duetflow.fairness.table import read_cues
from duetflow.report.rows import dialogues_with_turns
from duetflow.report.sources import open_inputs
from duetflow.tts.speaking_rate import spoken_characters

FRAME_S = 0.01
#: Seconds of speech per dialogue the filter method reads (it filters them ~12 times).
SPEECH_S = 12.0
ONSET_DB = 15.0
#: Seconds of the file the band-edge filters read; how far under the in-band level the edge is.
EDGE_S = 20.0
EDGE_DB = 45.0


def band_edge_by_filters(x: np.ndarray, sr: int) -> float:
    """Highest band-pass centre whose power lies within EDGE_DB of the 2-3 kHz level."""
    y = x[: int(EDGE_S * sr)].astype(np.float64)
    centres = np.arange(2000.0, 0.49 * sr - 60, 25.0)
    power = []
    for c in centres:
        sos = signal.butter(4, (c - 50, c + 50), btype="bandpass", fs=sr, output="sos")
        z = signal.sosfilt(sos, y)[int(0.05 * sr) :]
        power.append(10 * np.log10(np.mean(z**2) + 1e-30))
    level = np.array(power)
    ref = float(np.median(level[centres <= 3000]))
    above = np.flatnonzero(level >= ref - EDGE_DB)
    return float(centres[above[-1]])


def snr_by_meter(x: np.ndarray, sr: int, turns: list[TurnSpan]) -> float:
    """pyloudnorm loudness of the speech turns over the median 20 ms frame power in pauses."""
    import pyloudnorm

    spans = speech_spans(turns)
    speech = np.concatenate([x[round(s * sr) : round(e * sr)] for s, e in spans])
    lufs = pyloudnorm.Meter(sr).integrated_loudness(speech.astype(np.float64))
    hop = int(0.02 * sr)
    frames = []
    for (_, e0), (s1, _) in itertools.pairwise(spans):
        seg = x[round(e0 * sr) : round(s1 * sr)].astype(np.float64)
        n = seg.size // hop
        if n:
            frames.append(np.mean(seg[: n * hop].reshape(n, hop) ** 2, axis=1))
    if not frames:
        return math.nan
    return float(lufs - 10 * np.log10(np.median(np.concatenate(frames)) + 1e-30))


def _highpass_share(segments: list[np.ndarray], sr: int, f: float) -> float:
    sos = signal.butter(10, f, btype="highpass", fs=sr, output="sos")
    above = total = 0.0
    for seg in segments:
        if seg.size < 200:
            continue
        cut = seg[min(seg.size // 4, int(0.01 * sr)) :]
        total += float(np.dot(cut, cut))
        y = signal.sosfilt(sos, seg)[min(seg.size // 4, int(0.01 * sr)) :]  # skip the onset
        above += float(np.dot(y, y))
    return above / total if total > 0 else math.nan


def bandwidth_by_filters(x: np.ndarray, sr: int, turns: list[TurnSpan]) -> float:
    """Cut-off above which (1 - BANDWIDTH_SHARE) of the speech energy lies, by bisection."""
    segs, held = [], 0.0
    for s, e in speech_spans(turns):
        if held >= SPEECH_S:
            break
        e = min(e, s + SPEECH_S - held)
        segs.append(x[round(s * sr) : round(e * sr)].astype(np.float64))
        held += e - s
    lo, hi = 50.0, sr / 2 * 0.98
    target = 1.0 - BANDWIDTH_SHARE
    for _ in range(12):
        mid = math.sqrt(lo * hi)
        if _highpass_share(segs, sr, mid) > target:
            lo = mid
        else:
            hi = mid
    return math.sqrt(lo * hi)


def edges_by_level(x: np.ndarray, sr: int) -> tuple[float, float]:
    """(lead-in, tail) in seconds from the audio alone: frames 15 dB over the quiet level."""
    hop = int(FRAME_S * sr)
    n = x.size // hop
    frames = x[: n * hop].reshape(n, hop).astype(np.float64)
    level = 10 * np.log10(np.mean(frames**2, axis=1) + 1e-20)
    loud = np.flatnonzero(level > np.percentile(level, 10) + ONSET_DB)
    if not loud.size:
        return math.nan, math.nan
    return loud[0] * FRAME_S, x.size / sr - (loud[-1] + 1) * FRAME_S


def ceiling_margin_by_polyphase(x: np.ndarray, sr: int) -> float:
    """The default ceiling less the file's 4x-oversampled peak (polyphase FIR), capped."""
    up = signal.resample_poly(x.astype(np.float64), 4, 1)
    peak = max(float(np.max(np.abs(up))), float(np.max(np.abs(x))))
    if peak <= 0:
        return math.nan
    return min(CEILING_REACH_DB, DEFAULT_LEVELS.ceiling_dbtp - 20 * math.log10(peak))


def rate_by_level(x: np.ndarray, sr: int, turns: list[TurnSpan]) -> float:
    """Spoken characters per second of voiced time inside the turns (frames 15 dB over the
    file's quiet level)."""
    hop = int(FRAME_S * sr)
    n = x.size // hop
    level = 10 * np.log10(np.mean(x[: n * hop].reshape(n, hop).astype(np.float64) ** 2, 1) + 1e-20)
    loud = level > np.percentile(level, 10) + ONSET_DB
    inside = np.zeros(n, dtype=bool)
    for s, e in speech_spans(turns):
        inside[int(s / FRAME_S) : int(math.ceil(e / FRAME_S))] = True
    secs = float(np.sum(loud & inside)) * FRAME_S
    chars = sum(spoken_characters(t.text) for t in turns if t.kind != "nonspeech")
    return chars / secs if secs > 0 and chars > 0 else math.nan


def _finite(values: list[float]) -> np.ndarray:
    """The values a cue has (NaN: the dialogue cannot have it, left out as the audit does)."""
    a = np.asarray(values, dtype=np.float64)
    return a[np.isfinite(a)]


def _items(source: str) -> Iterator[tuple[Any, Any, Path]]:
    with open_inputs([source]) as inputs:
        for inp in inputs:
            for row, turns in dialogues_with_turns(inp):
                yield row, turns, inp.audio(row)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("source")
    ap.add_argument("--cues", type=Path, default=None, help="cues.parquet of duetflow audit")
    ap.add_argument(
        "--per-category",
        type=int,
        default=0,
        help="re-measure at most this many dialogues per language and category (in the "
        "source's order; 0: all); at least 8 keeps every pair judged",
    )
    args = ap.parse_args(argv)
    taken: dict[tuple[str, str], int] = {}
    audit: dict[str, DialogueCues] = (
        {r.dialogue_id: r for r in read_cues(args.cues)} if args.cues else {}
    )
    ours: dict[str, tuple[float, ...]] = {}
    for row, turns, path in _items(args.source):
        group = (str(row.language), str(row.category))
        if args.per_category and taken.get(group, 0) >= args.per_category:
            continue
        taken[group] = taken.get(group, 0) + 1
        if row.dialogue_id not in audit:
            audit[row.dialogue_id] = measure_file(row, turns, path)
        x, sr = read_frames(path, mono=True)
        spans = [TurnSpan.of(t) for t in turns]
        lead, tail = edges_by_level(x, sr)
        ours[row.dialogue_id] = (
            bandwidth_by_filters(x, sr, spans),
            lead,
            tail,
            band_edge_by_filters(x, sr),
            snr_by_meter(x, sr, spans),
            ceiling_margin_by_polyphase(x, sr),
            rate_by_level(x, sr, spans),
        )
        if len(ours) % 20 == 0:
            print(f"{len(ours)} dialogues re-measured", file=sys.stderr, flush=True)
    ids = sorted(ours)
    names = (
        "bandwidth_speech_hz",
        "lead_in_s",
        "tail_s",
        "band_edge_hz",
        "snr_db",
        "ceiling_margin_db",
        "speech_rate_cps",
    )
    print(f"{len(ids)} dialogues\n")
    print("| cue | Pearson r | median abs diff | audit mean | second method mean |")
    print("| --- | --- | --- | --- | --- |")
    for j, cue in enumerate(names):
        a = np.array([audit[i].value(cue) for i in ids])
        b = np.array([ours[i][j] for i in ids])
        ok = np.isfinite(a) & np.isfinite(b)
        r = float(np.corrcoef(a[ok], b[ok])[0, 1])
        print(
            f"| {cue} | {r:.3f} | {np.median(np.abs(a[ok] - b[ok])):.4g} |"
            f" {a[ok].mean():.4g} | {b[ok].mean():.4g} |"
        )
    groups: dict[tuple[str, str], list[str]] = {}
    for i in ids:
        groups.setdefault((audit[i].language, audit[i].category), []).append(i)
    print("\nMean ± sd per language and category, audit / second method:\n")
    print("| language | category | n | " + " | ".join(names) + " |")
    print("| --- | --- | --- | " + " | ".join("---" for _ in names) + " |")
    for (lang, cat), members in sorted(groups.items()):
        cells = []
        for j, cue in enumerate(names):
            a = np.array([audit[i].value(cue) for i in members])
            b = np.array([ours[i][j] for i in members])
            a, b = a[np.isfinite(a)], b[np.isfinite(b)]
            fa = f"{a.mean():.4g} ± {a.std(ddof=1) if a.size > 1 else 0:.2g}" if a.size else "—"
            fb = f"{b.mean():.4g} ± {b.std(ddof=1) if b.size > 1 else 0:.2g}" if b.size else "—"
            cells.append(f"{fa} / {fb}")
        print(f"| {lang} | {cat} | {len(members)} | " + " | ".join(cells) + " |")
    min_n = CueThresholds().min_per_side
    print("\nCohen's d per pair, audit / second method:\n")
    print("| language | pair | " + " | ".join(names) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in names) + " |")
    for lang in sorted({g[0] for g in groups}):
        cats = sorted(c for lg, c in groups if lg == lang)
        for ia, ca in enumerate(cats):
            for cb in cats[ia + 1 :]:
                sa, sb = groups[(lang, ca)], groups[(lang, cb)]
                if min(len(sa), len(sb)) < min_n:
                    continue
                cells = []
                for j, cue in enumerate(names):
                    d1 = cohens_d(
                        _finite([audit[i].value(cue) for i in sa]),
                        _finite([audit[i].value(cue) for i in sb]),
                    )
                    d2 = cohens_d(
                        _finite([ours[i][j] for i in sa]), _finite([ours[i][j] for i in sb])
                    )
                    cells.append(f"{d1:+.2f} / {d2:+.2f}")
                print(f"| {lang} | {ca}-{cb} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
