"""The compiled IIR kernels (:mod:`duetflow.audio.kernels`) against scipy, on the same signals.
One command: ``.venv/bin/python bench/kernels.py`` (``--repeat N``). The edge measure's 100 Hz
high-pass (float32, ``lfilter``) and BS.1770's K-weighting (float64, ``sosfilt``) at 16 kHz, on a 45
s window and on 1 s stretches (the local measurements around each speaker change), scipy and kernel
interleaved call by call, timed by the process's CPU clock; each pair's outputs are compared bit for
bit on the way; and the high-pass on a window that falls silent (digital zeros). Then the second
round's flicker's running median on a pause-long stretch (100 envelope frames) against
``scipy.ndimage.median_filter``, bit for bit. Then the fourth round's: the Welch periodogram of a
clip-per-turn track (half digital silence) with its silent segments skipped against the same kernels
on every segment. Then the fifth round's (not the same bits, so the largest difference is printed,
relative to the output's peak): the band-limit's low-pass of a 45 s track (float32 transforms on
4,096-sample blocks) against its former exact path (scipy's float64 overlap-add blocks of 2,200),
and (the seventeenth round's) a room tone bed's colour on its fast length (a 70,480-sample bed,
2^4·5·881, shaped on its first 70,400 = 2^8·5^2·11) against numpy's ``rfft``/``irfft`` of the whole
bed (not the same samples: the shaped beds' tilts are printed). The eighth round's fused analysis
(``edges._hop_powers``: the high-pass with a float64 state in four chains side by side and both
envelopes' hop powers summed in float64, in one pass) against the float32 ``lfilter`` and the two
``einsum`` hop powers it replaced, on a 35 s window (not the same bits: the largest relative
difference of a hop power is printed). The thirteenth round's: two speakers' K-weighted hop energies
(18 s and 14 s of speech) in chains side by side (``bs1770.k_weighted_energies``) against one
unbroken recursion each (the compiled ``sosfilt``) and its hops' sums (not the same bits: the
largest difference, relative to the loudest hop's energy, is printed). Last line: ``kernels:
highpass <r>x (45 s) <r>x (1 s); highpass on silence <s>x; k-weighting <r>x (45 s) <r>x (1 s);
k-weighting chains <k>x (off <d>); median <m>x; welch half silent <w>x; hop powers <h>x (fused, off
<d>); identical True; lowpass <l>x (off <d> of peak); bed colour <c>x (tilt off <t> dB/oct); load
<1-minute load average>``.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.fft as sp_fft
from scipy.ndimage import median_filter
from scipy.signal import butter, lfilter, sosfilt

from duetflow.audio import bs1770, edges, kernels, tone_colour
from duetflow.audio.bandlimit import _taps, _welch_plan, lowpass, welch_density
from duetflow.audio.bs1770 import k_weighting_sos

SR = 16_000


def _clip_per_turn(rng: np.random.Generator, n: int) -> np.ndarray:
    """Clips of noise between stretches of digital silence (a clip-per-turn track)."""
    x = np.zeros(n)
    t = 0
    while t < n:
        d = int(rng.uniform(1.5, 4.0) * SR)
        x[t : t + d] = rng.normal(0, 0.1, min(d, n - t))
        t += d + int(rng.uniform(1.5, 4.0) * SR)
    return x


def _welch_every_segment(x: np.ndarray, nperseg: int = 2048) -> np.ndarray:
    """``welch_density``'s compiled path before the silent segments were skipped: every
    segment windowed, transformed and squared."""
    k = kernels.welch_kernels()
    assert k is not None
    _, segments, into_columns, row_means = k
    f, win = _welch_plan(SR, nperseg)
    hop = nperseg - nperseg // 2
    count = (x.size - nperseg // 2) // hop
    power = np.empty((f.size, count))
    block = np.empty((64, nperseg))
    for a in range(0, count, 64):
        rows = np.arange(a, min(count, a + 64))
        seg = block[: rows.size]
        segments(x, win, hop, rows, seg)
        into_columns(sp_fft.rfft(seg, n=nperseg, axis=-1), power, rows)
    mean = np.empty(f.size)
    row_means(power, 1, f.size - 1, mean)
    return mean


def _lowpass_scipy_blocks(x: np.ndarray, h: np.ndarray) -> np.ndarray:
    """``lowpass``'s former path: ``np.float32(scipy.signal.oaconvolve(np.float64(x), h,
    mode="same"))``'s bits, scipy's float64 blocks (``_calc_oa_lens``: 2,200 at 16 kHz) in
    groups of 8 rows, without scipy's copies."""
    from scipy.signal._signaltools import _calc_oa_lens

    s1, s2 = x.size, h.size
    block, overlap, step, _ = _calc_oa_lens(s1, s2)
    n = -(-(s1 + 1) // step)
    if (block - overlap) * n < s1 + s2 - 1:
        n += 1
    taps = sp_fft.rfft(h.reshape(1, s2), block, axis=-1)
    out = np.empty((n, step), dtype=np.float32)
    rows = np.zeros((8, block))
    tail = None
    whole = s1 // step
    for r0 in range(0, n, 8):
        r1 = min(n, r0 + 8)
        buf = rows[: r1 - r0]
        full = max(0, min(r1, whole) - r0)
        if full:
            buf[:full, :step] = x[r0 * step : (r0 + full) * step].reshape(full, step)
        for r in range(r0 + full, r1):
            rest = x[r * step : (r + 1) * step]
            buf[r - r0, : rest.size] = rest
            buf[r - r0, rest.size : step] = 0.0
        y = sp_fft.irfft(sp_fft.rfft(buf, axis=-1) * taps, block, axis=-1)
        y[1:, :overlap] += y[:-1, step:]
        if tail is not None:
            y[0, :overlap] += tail
        tail = y[-1, step:].copy()
        out[r0:r1] = y[:, :step]
    c = (s2 - 1) // 2
    return out.reshape(-1)[c : c + s1].copy()


def _interleaved(fns: tuple[Callable[[], object], ...], reps: int) -> list[float]:
    """CPU seconds of each of ``fns`` over ``reps`` rounds, run in turn within each round (so a
    burst of load from other jobs falls on all of them alike)."""
    cpu = [0.0] * len(fns)
    for _ in range(reps):
        for k, f in enumerate(fns):
            t0 = time.process_time()
            f()
            cpu[k] += time.process_time() - t0
    return cpu


def _compared(
    r: dict[tuple[str, int], float],
    key: str,
    fns: tuple[Callable[[], object], Callable[[], object]],
    reps: int,
    line: Callable[[list[float], float], str],
) -> None:
    """Time the path before and the path now interleaved (:func:`_interleaved`), print
    ``line(ms per call of each, before / now)`` and keep the ratio in ``r[key, 0]``."""
    cpu = _interleaved(fns, reps)
    ratio = cpu[0] / cpu[1]
    print(line([c / reps * 1e3 for c in cpu], ratio))
    r[key, 0] = ratio


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--repeat", type=int, default=20, help="45 s calls per path (1 s: 20x)")
    args = ap.parse_args()
    if not kernels.compiled_available():
        print("kernels: numba missing (extra 'fast'): the kernels are scipy itself")
        return
    b, a = (np.asarray(v, np.float32) for v in butter(2, 100.0, "highpass", fs=SR))
    sos = k_weighting_sos(SR)
    rng = np.random.default_rng(0)
    same = True
    ratios = []
    # digital silence after a second of noise: scipy's float32 high-pass is held on a subnormal
    # there (each step ~20x a normal one); the kernel skips the fixed point's steps
    quiet = np.zeros(SR * 45, np.float32)
    quiet[:SR] = rng.standard_normal(SR) * 0.1
    same &= bool(np.array_equal(lfilter(b, a, quiet), kernels.lfilter(b, a, quiet)))
    cpu = [0.0, 0.0]
    for _ in range(max(1, args.repeat // 4)):
        for k, f in enumerate((lfilter, kernels.lfilter)):
            t0 = time.process_time()
            f(b, a, quiet)
            cpu[k] += time.process_time() - t0
    silence = cpu[0] / cpu[1]
    print(f"highpass on 1 s of noise + 44 s of digital silence: {silence:.1f}x")
    for seconds, reps in ((45, args.repeat), (1, 20 * args.repeat)):
        x = (rng.standard_normal(SR * seconds) * 0.1).astype(np.float32)
        x64 = x.astype(np.float64)
        pairs = {
            "highpass": (
                lambda x=x: lfilter(b, a, x),
                lambda x=x: kernels.lfilter(b, a, x),
            ),
            "k-weighting": (
                lambda x64=x64: sosfilt(sos, x64),
                lambda x64=x64: kernels.sosfilt(sos, x64),
            ),
        }
        for name, (ref, fast) in pairs.items():
            same &= bool(np.array_equal(ref(), fast()))
            cpu = _interleaved((ref, fast), reps)
            per = [c / reps * 1e3 for c in cpu]
            print(
                f"{name:<12} {seconds:>3} s: scipy {per[0]:.3f} ms, kernel {per[1]:.3f} ms, "
                f"{cpu[0] / cpu[1]:.2f}x"
            )
            ratios.append((name, seconds, cpu[0] / cpu[1]))
    r = {(n, s): v for n, s, v in ratios}
    # issue 30, second round: the running median
    env = rng.normal(-55.0, 4.0, 100)
    env[40:60] += 30.0  # a pause's stretch: floor, a tail, floor
    rounds = {
        "median": (
            lambda: median_filter(env, size=21, mode="nearest"),
            lambda: edges.running_median(env),
            400 * args.repeat,
        ),
    }
    for name, (ref, fast, reps) in rounds.items():
        want, got = ref(), fast()
        if name == "median":
            want, got = (want,), (got,)
        same &= all(np.array_equal(w, g) for w, g in zip(want, got, strict=True))
        cpu = _interleaved((ref, fast), reps)
        per = [c / reps * 1e3 for c in cpu]
        print(f"{name:<16} before {per[0]:.3f} ms, kernel {per[1]:.3f} ms, {cpu[0] / cpu[1]:.2f}x")
        r[name, 0] = cpu[0] / cpu[1]
    # issue 30, fourth round: the Welch periodogram over a clip-per-turn track (half digital
    # silence) with its silent segments skipped, against the same kernels on every segment
    half = _clip_per_turn(rng, SR * 60)
    same &= bool(np.array_equal(_welch_every_segment(half), welch_density(half, SR, 2048)[1]))
    cpu = _interleaved(
        (lambda: _welch_every_segment(half), lambda: welch_density(half, SR, 2048)), args.repeat
    )
    per = [c / args.repeat * 1e3 for c in cpu]
    print(
        f"welch, half silent: before {per[0]:.3f} ms, skip {per[1]:.3f} ms, {cpu[0] / cpu[1]:.2f}x"
    )
    r["welch", 0] = cpu[0] / cpu[1]
    # issue 30, eighth round: the analysis's high-pass and both envelopes' hop powers in one
    # pass (float64 recursion in four chains side by side, float64 sums: not the same bits as
    # the float32 lfilter + float32 einsum it replaced; the largest difference of a hop
    # block's power is printed, relative)
    x35 = (rng.standard_normal(SR * 35) * 0.1).astype(np.float32)
    hop = edges.hop_samples(SR)
    count = len(x35) // hop

    def _before() -> tuple[np.ndarray, np.ndarray]:
        y = kernels.lfilter(b, a, x35)[: count * hop].reshape(count, hop)
        u = x35[: count * hop].reshape(count, hop)
        pe = np.einsum("ij,ij->i", y, y).astype(np.float64) / hop
        return pe, np.einsum("ij,ij->i", u, u).astype(np.float64) / hop

    def _fused() -> tuple[np.ndarray, np.ndarray]:
        return edges._hop_powers(x35, 0, count, hop, SR)

    deviation = max(
        float(np.max(np.abs(w - g) / w)) for w, g in zip(_before(), _fused(), strict=True)
    )
    _compared(
        r,
        "hop powers",
        (_before, _fused),
        args.repeat,
        lambda per, x: f"hop powers (35 s) before {per[0]:.3f} ms, fused {per[1]:.3f} ms, {x:.2f}x",
    )
    _mixdown_round(rng, args.repeat)
    # issue 30, fifth round: the low-pass's float32 transforms on power-of-two blocks, against
    # the path it replaced
    track = (rng.standard_normal(SR * 45) * 0.1).astype(np.float32)
    taps = _taps(SR, 4000.0)
    want, got = _lowpass_scipy_blocks(track, taps), lowpass(track, SR, 4000.0)
    off = {"lowpass": float(np.max(np.abs(got - want)) / np.max(np.abs(want)))}
    _compared(
        r,
        "lowpass",
        (lambda: _lowpass_scipy_blocks(track, taps), lambda: lowpass(track, SR, 4000.0)),
        args.repeat,
        lambda per, x: (
            f"{'lowpass':<16} before {per[0]:.3f} ms, now {per[1]:.3f} ms, {x:.2f}x, "
            f"off {off['lowpass']:.1e} of the peak"
        ),
    )
    # issue 30, seventeenth round: a bed's colour on its fast length (70,480 = 2^4·5·881 ->
    # 70,400 = 2^8·5^2·11) against numpy's transforms of the whole bed; not the same samples:
    # the shaped beds' tilts (the cue audit's instrument) are compared
    bed = _room_bed(rng, 70_480)
    fast = tone_colour.fast_length(bed.size)

    def whole_bed() -> Any:
        keep = tone_colour.fast_length
        tone_colour.fast_length = lambda n: n  # type: ignore[assignment]
        try:
            return tone_colour.to_envelope(bed, SR, -3.9, hi_hz=3750.0)[0]
        finally:
            tone_colour.fast_length = keep  # type: ignore[assignment]

    def fast_bed() -> Any:
        return tone_colour.to_envelope(bed, SR, -3.9, hi_hz=3750.0)[0]

    tilts = [tone_colour.tilt_db_oct(b(), SR, 3750.0) for b in (whole_bed, fast_bed)]
    off["bed colour"] = abs(tilts[1] - tilts[0])
    _compared(
        r,
        "bed colour",
        (whole_bed, fast_bed),
        args.repeat,
        lambda per, x: (
            f"{'bed colour':<16} whole {per[0]:.3f} ms, fast length ({bed.size - fast} samples "
            f"cut) {per[1]:.3f} ms, {x:.2f}x, tilts {tilts[0]:.3f} / {tilts[1]:.3f} dB/oct"
        ),
    )
    # issue 30, thirteenth round: two speakers' K-weighted hop energies in chains side by side
    # (bs1770.k_weighted_energies) against each one unbroken recursion (the compiled sosfilt)
    # and its hops' sums; not the same bits: the largest difference of a hop's energy, relative
    # to the loudest hop's, is printed
    s1, s2 = (rng.standard_normal((2, SR * 18)) * 0.05).astype(np.float32)
    s2 = s2[: SR * 14]

    def unbroken() -> list[Any]:
        out = []
        for s in (s1, s2):
            g = np.empty(len(s), np.float32)
            g[0::2], g[1::2] = bs1770.DENORMAL_GUARD, -bs1770.DENORMAL_GUARD
            y = np.asarray(kernels.sosfilt(sos, (s + g).astype(np.float64)))
            m = len(s) // (SR // 10) * (SR // 10)
            out.append(np.einsum("ij,ij->i", *(y[:m].reshape(-1, SR // 10),) * 2))
        return out

    def chained() -> list[Any]:
        return [e.hops for e in bs1770.k_weighted_energies([s1, s2], SR)]

    want, got = unbroken(), chained()
    k_off = max(float(np.max(np.abs(g - w)) / np.max(w)) for g, w in zip(got, want, strict=True))
    _compared(
        r,
        "k-weighting chains",
        (unbroken, chained),
        args.repeat,
        lambda per, x: (
            f"k-weighting, two speakers (18 s, 14 s): unbroken {per[0]:.3f} ms, chains "
            f"{per[1]:.3f} ms, {x:.2f}x, off {k_off:.1e} of the loudest hop"
        ),
    )
    print(
        f"kernels: highpass {r['highpass', 45]:.2f}x (45 s) {r['highpass', 1]:.2f}x (1 s); "
        f"highpass on silence {silence:.1f}x; "
        f"k-weighting {r['k-weighting', 45]:.2f}x (45 s) {r['k-weighting', 1]:.2f}x (1 s); "
        f"k-weighting chains {r['k-weighting chains', 0]:.2f}x (off {k_off:.1e}); "
        f"median {r['median', 0]:.2f}x; "
        f"welch half silent {r['welch', 0]:.2f}x; "
        f"hop powers {r['hop powers', 0]:.2f}x (fused, off {deviation:.1e}); "
        f"identical {same}; lowpass {r['lowpass', 0]:.2f}x (off {off['lowpass']:.1e} of peak); "
        f"bed colour {r['bed colour', 0]:.2f}x (tilt off {off['bed colour']:.3f} dB/oct); "
        f"load {os.getloadavg()[0]:.1f}"
    )


def _room_bed(rng: np.random.Generator, n: int) -> Any:
    """``n`` samples of room-like noise: white noise tilted ~-4 dB/octave, -50 dBFS, float32."""
    white = rng.standard_normal(n + SR)
    pink = np.asarray(
        lfilter(
            [0.049922035, -0.095993537, 0.050612699, -0.004408786],
            [1, -2.494956002, 2.017265875, -0.522189400],
            white,
        )
    )[SR:]
    return (pink / np.std(pink) * 10 ** (-50 / 20)).astype(np.float32)


def _mixdown_round(rng: np.random.Generator, repeat: int) -> None:
    """Issue 30, the code-defaults render's round: the numpy-call-heavy steps of the floors,
    extents and the written form, each compiled path against the numpy path it replaced
    (``kernels.edge_kernels`` / ``kernels.sample_kernels`` turned off), bit for bit on the way;
    one line: ``mixdown round: floor track <r>x; floor pause <r>x; extent <r>x; written
    <r>x; k-weighting <r>x; identical <bool>``."""
    from duetflow.rendering.mixdown import as_written

    t = np.arange(SR * 45) / SR
    speech = (0.3 * np.sin(2 * np.pi * 220 * t) * ((t % 3.0) < 1.8)).astype(np.float32)
    x = speech + (rng.standard_normal(t.size) * 10 ** (-58 / 20)).astype(np.float32)
    an = edges.analyse(x, SR)
    n = len(an.edge)
    mask = np.zeros(n, dtype=bool)
    for k0 in range(0, n, 1200):  # the background between turns: ~40 % of a track
        mask[k0 + 760 : k0 + 1180] = True
    k_pause = int(2.0 * SR / an.edge.hop)  # a pause of 1.2 s: its quietest 40 ms, its floor
    u = (rng.standard_normal(SR * 20) * 0.05).astype(np.float32)
    steps = {
        "floor track": (lambda: edges.estimate_floor(edges.Analysis(an.edge, an.level), mask), 20),
        "floor pause": (lambda: edges._quietest(an, k_pause, k_pause + 440, 16), 400),
        "extent": (
            lambda: edges.speech_extent(an, edges.Floor(-58.0, -60.0, 3.0), (0.1 * SR, 1.7 * SR)),
            400,
        ),
        "written": (lambda: as_written(x, -0.7), 20),
        "k-weighting": (lambda: bs1770.k_weighted_energies([u, u[: SR * 17]], SR), 10),
    }
    switch = {
        "floor track": "edge_kernels",
        "floor pause": "edge_kernels",
        "extent": "edge_kernels",
        "written": "sample_kernels",
        "k-weighting": "sample_kernels",
    }
    same = True
    line = []
    for name, (f, reps) in steps.items():
        on = getattr(kernels, switch[name])

        def off() -> None:
            return None

        def result(f: Any = f) -> object:
            out = f()
            if isinstance(out, np.ndarray):
                return out.tobytes()
            if isinstance(out, list):
                return [(e.hops.tobytes(), e.total) for e in out]
            return repr(out)

        got = result()
        setattr(kernels, switch[name], off)
        want = result()
        setattr(kernels, switch[name], on)
        same &= got == want
        cpu = [0.0, 0.0]
        for _ in range(reps * repeat):
            for k in (0, 1):
                setattr(kernels, switch[name], off if k == 0 else on)
                t0 = time.process_time()
                f()
                cpu[k] += time.process_time() - t0
        setattr(kernels, switch[name], on)
        per = [c / (reps * repeat) * 1e3 for c in cpu]
        print(f"{name:<16} numpy {per[0]:.3f} ms, compiled {per[1]:.3f} ms, {cpu[0] / cpu[1]:.2f}x")
        line.append(f"{name} {cpu[0] / cpu[1]:.2f}x")
    print("mixdown round: " + "; ".join(line) + f"; identical {same}")


if __name__ == "__main__":
    main()
