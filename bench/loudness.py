"""BS.1770 integrated loudness: ``duetflow.audio.bs1770`` vs pyloudnorm vs the previous version.

One command: ``.venv/bin/python bench/loudness.py`` (``--repeat N`` timed rounds, ``--scale N``
sample corpora scale, ``--samples DIR`` reuses a ``duetflow samples make`` output).

* **cases**: every readable audio file of the sample corpora (``make_samples``, seed 0), each
  channel on its own, resampled (soxr) to each of 8, 11.025, 16, 22.05, 24, 32, 44.1 and 48 kHz;
  plus synthetic signals at each rate: speech-like (``duetflow.demo.voice``), white and pink
  noise, sines (50 Hz, 997 Hz, 0.45 fs), lengths not a whole number of 100 ms hops, short
  (0.40-0.58 s) and sparse (bursts in near-silence, and all under the -70 LUFS gate) signals.
  Cases are built one at a time and dropped after measuring: memory stays at one case.
* **agreement**: ``bs1770.measure`` against pyloudnorm 0.2 (an independent implementation) on
  the whole signal — the module follows pyloudnorm's block count, including the partial
  trailing block it adds when 50 ms or more of a hop is left over (see the module docstring of
  ``duetflow.audio.bs1770``); cases shorter than one block or with no block over the absolute
  gate take the ungated fallback and are compared with the K-weighted mean square through
  pyloudnorm's own ``IIRfilter`` stages.
* **speed**: per case, the three integrated-loudness functions run ``--repeat`` times in
  rotating order (ours, previous, pyloudnorm; previous, pyloudnorm, ours; ...), each timed by
  the process CPU clock, and the best time of each counts; the figures are sums of per-case
  bests over every case with at least one block, by sample rate and by signal length.
  *previous* is ``audio/bs1770.py`` as it was before the vectorised rewrite (commit 1997009),
  kept verbatim below (pyloudnorm's coefficients through two ``lfilter`` calls, float64
  copies, a cumulative sum over the signal); *pyloudnorm* is ``Meter.integrated_loudness``
  on the float64 signal, what ``duetflow.audio.loudness.measure`` called before.

Last line: ``loudness: <x> x pyloudnorm; <y> x previous; max_diff_lu <d>`` (x, y: speed-ups of
ours, d: largest |ours - pyloudnorm| in LU over every case, on the whole signal).
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pyloudnorm
import soundfile as sf
from scipy.signal import lfilter

from duetflow.audio import bs1770
from duetflow.audio.io import resample
from duetflow.demo.voice import FEMALE, MALE, room_tone, speech

RATES = (8000, 11025, 16000, 22050, 24000, 32000, 44100, 48000)


# --- the previous implementation (src/duetflow/audio/bs1770.py at 1997009), for comparison ---


@lru_cache(maxsize=16)
def _meter(sample_rate: int) -> pyloudnorm.Meter:
    return pyloudnorm.Meter(sample_rate)


def _k_weighted_previous(samples: np.ndarray, sample_rate: int) -> np.ndarray:
    x = samples.astype(np.float64)
    for f in _meter(sample_rate)._filters.values():  # high shelf, then high pass
        x = f.passband_gain * lfilter(f.b, f.a, x)
    return np.asarray(x, dtype=np.float64)


def previous_integrated_lufs(samples: np.ndarray, sample_rate: int) -> float:
    y = _k_weighted_previous(samples, sample_rate)
    t_g, frac = 0.4, 1.0 - 0.75
    n_blocks = int(np.round((len(y) / sample_rate - t_g) / (t_g * frac))) + 1
    j = np.arange(n_blocks, dtype=np.float64)
    lo = (t_g * (j * frac) * sample_rate).astype(np.int64)
    hi = (t_g * (j * frac + 1) * sample_rate).astype(np.int64)
    hi = np.minimum(hi, len(y))
    c = np.concatenate(([0.0], np.cumsum(y * y)))
    z = (c[hi] - c[lo]) / (t_g * sample_rate)
    with np.errstate(divide="ignore"):
        lk = -0.691 + 10.0 * np.log10(z)
    gated = z[lk >= -70.0]
    if gated.size == 0:
        return -math.inf
    rel = -0.691 + 10.0 * math.log10(float(np.mean(gated))) - 10.0
    keep = z[(lk > rel) & (lk > -70.0)]
    if keep.size == 0:
        return -math.inf
    return -0.691 + 10.0 * math.log10(float(np.mean(keep)))


# --- references ---------------------------------------------------------------------------


def pyloudnorm_integrated(samples: np.ndarray, sample_rate: int) -> float:
    return float(_meter(sample_rate).integrated_loudness(samples.astype(np.float64)))


def pyloudnorm_ungated(samples: np.ndarray, sample_rate: int) -> float:
    """K-weighted mean square through pyloudnorm's public IIRfilter stages (its K-weighting)."""
    y = samples.astype(np.float64)
    for stage in (
        pyloudnorm.IIRfilter(4.0, 1 / np.sqrt(2), 1500.0, sample_rate, "high_shelf"),
        pyloudnorm.IIRfilter(0.0, 0.5, 38.0, sample_rate, "high_pass"),
    ):
        y = stage.apply_filter(y)
    ms = float(np.mean(y * y))
    return -0.691 + 10 * math.log10(ms) if ms > 0 else -math.inf


def measured_interval(n_samples: int, sample_rate: int) -> int:
    """Samples pyloudnorm measures: the whole signal when it holds one 400 ms block, else 0."""
    return n_samples if n_samples >= 0.4 * sample_rate else 0


# --- cases --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    rate: int
    samples: np.ndarray


def synthetic(rate: int) -> Iterator[Case]:
    rng = np.random.default_rng(rate)

    t = np.arange(int(7.37 * rate)) / rate
    yield Case("speech 12.34 s", rate, speech(12.34, rate, FEMALE, rng, -24.0))
    talk = np.concatenate(
        [speech(3.1, rate, MALE, rng, -20.0), speech(2.2, rate, FEMALE, rng, -38.0)]
    )
    yield Case("speech, loud + quiet", rate, talk)
    yield Case(
        "white noise 9.05 s",
        rate,
        (0.05 * rng.standard_normal(int(9.05 * rate))).astype(np.float32),
    )
    yield Case("pink noise 6.66 s", rate, room_tone(6.66, rate, -30.0, rng))
    for f in (50.0, 997.0, 0.45 * rate):
        yield Case(
            f"sine {f:.0f} Hz 7.37 s", rate, (0.5 * np.sin(2 * np.pi * f * t)).astype(np.float32)
        )
    for secs in (0.4, 0.45, 0.47, 0.58):
        yield Case(f"short {secs} s", rate, speech(secs, rate, MALE, rng, -22.0))
    yield Case("short 0.25 s (ungated)", rate, speech(0.25, rate, MALE, rng, -22.0))
    sparse = room_tone(20.0, rate, -95.0, rng)
    for k in range(4):
        burst = speech(0.3, rate, FEMALE, rng, -25.0)
        at0 = int((2 + 4.5 * k) * rate)
        sparse[at0 : at0 + len(burst)] += burst
    yield Case("sparse bursts 20 s", rate, sparse)
    yield Case("all under -70 LUFS (ungated)", rate, room_tone(5.0, rate, -85.0, rng))


def corpus_cases(root: Path) -> tuple[list[Path], int]:
    files, unreadable = [], 0
    for path in sorted(p for p in root.rglob("*") if p.suffix.lower() in (".wav", ".flac")):
        try:
            sf.info(str(path))
        except (sf.LibsndfileError, RuntimeError):
            unreadable += 1
            continue
        files.append(path)
    return files, unreadable


def from_file(path: Path, root: Path) -> Iterator[Case]:
    try:
        data, sr = sf.read(str(path), dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError):
        return
    for ch in range(data.shape[1]):
        x = np.ascontiguousarray(data[:, ch])
        for rate in RATES:
            yield Case(f"{path.relative_to(root)}[{ch}]", rate, resample(x, sr, rate, quality="HQ"))


# --- the run ------------------------------------------------------------------------------


Measurer = Callable[[np.ndarray, int], float]
IMPLS: dict[str, Measurer] = {
    "ours": bs1770.integrated_lufs,
    "previous": previous_integrated_lufs,
    "pyloudnorm": pyloudnorm_integrated,
}


@dataclass
class Tally:
    cases: int = 0
    timed: int = 0
    timed_audio_s: float = 0.0
    audio_s: float = 0.0
    max_diff: float = 0.0
    max_diff_case: str = ""
    ungated: int = 0
    max_diff_ungated: float = 0.0


LENGTHS = ((2.0, "< 2 s"), (5.0, "2-5 s"), (20.0, "5-20 s"), (math.inf, ">= 20 s"))


def length_bucket(seconds: float) -> str:
    return next(name for top, name in LENGTHS if seconds < top)


def run_case(case: Case, repeat: int, tally: Tally, cpu: dict[object, dict[str, float]]) -> None:
    x, rate = case.samples, case.rate
    tally.cases += 1
    tally.audio_s += len(x) / rate
    got = bs1770.measure(x, rate)
    end = measured_interval(len(x), rate)
    ref = pyloudnorm_integrated(x[:end], rate) if end else -math.inf
    if math.isfinite(ref):
        assert got.method == "integrated", (case.name, got)
        diff = abs(got.lufs - ref)
    else:
        assert got.method != "integrated", (case.name, got)
        tally.ungated += 1
        ungated = max(pyloudnorm_ungated(x, rate), bs1770.SILENCE_LUFS)
        diff = abs(got.lufs - ungated)
        tally.max_diff_ungated = max(tally.max_diff_ungated, diff)
    if diff > tally.max_diff:
        tally.max_diff, tally.max_diff_case = diff, f"{case.name} @ {rate} Hz"
    if not end:
        return
    best = dict.fromkeys(IMPLS, math.inf)
    values: dict[str, float] = {}
    names = list(IMPLS)
    for r in range(repeat):
        for name in names[r % 3 :] + names[: r % 3]:
            t0 = time.process_time()
            values[name] = IMPLS[name](x, rate)
            best[name] = min(best[name], time.process_time() - t0)
    for name, t in best.items():
        cpu[rate][name] += t
        cpu[length_bucket(len(x) / rate)][name] += t
    tally.timed += 1
    tally.timed_audio_s += len(x) / rate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3, help="timed rounds per case (best counts)")
    ap.add_argument("--scale", type=int, default=1, help="sample corpora scale")
    ap.add_argument("--samples", type=Path, default=None, help="existing make_samples output")
    args = ap.parse_args()

    tally = Tally()
    cpu: dict[object, dict[str, float]] = defaultdict(lambda: dict.fromkeys(IMPLS, 0.0))
    with tempfile.TemporaryDirectory(prefix="bench-loudness-") as tmp:
        root = args.samples
        if root is None:
            from duetflow.demo import make_samples

            root = Path(tmp) / "samples"
            make_samples(root, seed=0, scale=args.scale)
        files, unreadable = corpus_cases(root)
        for rate in RATES:
            for case in synthetic(rate):
                run_case(case, args.repeat, tally, cpu)
        n_synthetic = tally.cases
        for path in files:
            for case in from_file(path, root):
                run_case(case, args.repeat, tally, cpu)

    print(
        f"cases: {tally.cases} ({n_synthetic} synthetic, {tally.cases - n_synthetic} from "
        f"{len(files)} sample files x {len(RATES)} rates; {unreadable} unreadable files skipped); "
        f"{tally.audio_s / 3600:.2f} h of audio; {tally.ungated} take the ungated fallback"
    )
    print(
        f"agreement with pyloudnorm on the whole signal: max |diff| "
        f"{tally.max_diff:.2e} LU ({tally.max_diff_case}); ungated fallback max |diff| "
        f"{tally.max_diff_ungated:.2e} LU"
    )
    print(
        f"CPU seconds, sum of per-case best of {args.repeat} ({tally.timed} cases with a block), "
        "by rate and by length:"
    )
    head = ("case", "ours", "previous", "pyloudnorm", "x previous", "x pyloudnorm")
    print(" ".join(f"{h:>{w}}" for h, w in zip(head, (8, 8, 9, 11, 11, 13), strict=True)))

    def row(label: str, c: dict[str, float]) -> str:
        return (
            f"{label:>8} {c['ours']:8.3f} {c['previous']:9.3f} {c['pyloudnorm']:11.3f} "
            f"{c['previous'] / c['ours']:11.2f} {c['pyloudnorm'] / c['ours']:13.2f}"
        )

    for rate in RATES:
        print(row(str(rate), cpu[rate]))
    for _, bucket in LENGTHS:
        if cpu[bucket]["ours"] > 0:
            print(row(bucket, cpu[bucket]))
    total = {name: sum(cpu[rate][name] for rate in RATES) for name in IMPLS}
    print(row("all", total) + f"   ({tally.timed_audio_s / total['ours']:.0f} x real time, ours)")
    print(
        f"loudness: {total['pyloudnorm'] / total['ours']:.2f} x pyloudnorm; "
        f"{total['previous'] / total['ours']:.2f} x previous; max_diff_lu {tally.max_diff:.2e}"
    )


if __name__ == "__main__":
    main()
