"""How fast can the bundled render section get? Its transforms against issue 30's budgets.

One command: ``.venv/bin/python bench/band_limit_floor.py`` (``--rounds N``, ``--windows N``).

Issue 30's goal 1 asks the render for >= 1,500x real time per core and <= 3x the pcm16 floor's
CPU. The bundled run config's ``render`` section (what ``duetflow demo`` runs) adds a 4 kHz
band-limit (a 235-tap linear-phase FIR, applied by FFT overlap-add to each of the window's
tracks) and the room tone's colour to the code defaults' render. This bench sizes what no
implementation of those two through their Fourier transforms avoids: the transforms.

In one process, on ``bench/render.py``'s corpus (two-channel 45 s windows, 16 kHz), round after
round, interleaved: ours with the code defaults, ours with the bundled section (its low-pass
and colour timed by wrappers around them), the pcm16 floor (``bench/render.py``'s: frames read
as int16, one channel written as FLAC), and, on their own, pocketfft's ``rfft``/``irfft`` of
exactly the blocks the low-pass transformed in those windows (16 rows of 4,096 float32 samples
at a time) and the colour's transforms of exactly the beds it coloured (two power spectra's
frames, the zero-phase gain's pair). Every figure is process CPU per window, the least over
the rounds, the files each path wrote removed as it takes its next window, off the clock
(``bench/render.py``'s harness: fresh pages cost this virtual machine a host fault each).

Printed: the budget each goal leaves a window (the window's rendered seconds / 1,500, and 3x
the floor's CPU), the bundled render as it is, and its **bound**: the bundled render less its
low-pass and colour, plus the low-pass's transforms alone (and, second, the colour's too):
what it would cost if both were nothing but their transforms. Where the bound is over a
budget, no faster low-pass or colour through these transforms meets that goal: the rest of the
render would have to get faster too. Last line: ``band_limit_floor: budget 1500x <b> ms,
3x floor <f> ms; bundled <t> ms; bound <l> ms (low-pass transforms <x> ms, the rest <r> ms),
<a> ms with the colour's transforms (<c> ms); code defaults <d> ms; load <1-minute load
average>``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from scipy import fft as sp_fft

sys.path.insert(0, str(Path(__file__).parent))

import render as bench_render

from duetflow.audio import bandlimit, tone_colour
from duetflow.rendering import roomtone


class _Timed:
    """Process CPU spent inside a function, summed over its calls; the sizes it was given."""

    def __init__(self, module: Any, name: str) -> None:
        self.module, self.name, self.inner = module, name, getattr(module, name)
        self.cpu, self.sizes = 0.0, []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        t0 = time.process_time()
        try:
            return self.inner(*args, **kwargs)
        finally:
            self.cpu += time.process_time() - t0
            if self.name == "lowpass":
                self.sizes.append(np.asarray(args[0]).size)
            elif args[0] is not None and args[1] is not None:  # a bed coloured
                self.sizes.append(args[0].samples.size)

    def install(self, *modules: Any) -> None:
        """Put the wrapper where the renderer looks the function up."""
        for m in (self.module, *modules):
            if getattr(m, self.name, None) is self.inner:
                setattr(m, self.name, self)


def _transforms(sizes: list[int], sr: int, cutoff_hz: float) -> Callable[[], None]:
    """The low-pass's ``rfft``/``irfft`` pairs for tracks of ``sizes`` samples, and nothing
    else (rows of zeros: pocketfft's cost does not depend on the values)."""
    taps = bandlimit._taps(sr, cutoff_hz)
    groups = []
    for n in sizes:
        block = bandlimit._oa_block(n, taps.size)
        blocks = max(1, -(-n // (block - taps.size + 1)))
        rows = bandlimit._OA_ROWS
        groups += [(block, min(rows, blocks - r0)) for r0 in range(0, blocks, rows)]
    bufs = {(b, r): np.zeros((r, b), np.float32) for b, r in set(groups)}

    def run() -> None:
        for block, rows in groups:
            sp_fft.irfft(sp_fft.rfft(bufs[block, rows], axis=-1), block, axis=-1)

    return run


def _colour_transforms(sizes: list[int]) -> Callable[[], None]:
    """The colour's transforms for beds of ``sizes`` samples, and nothing else: the two power
    spectra's ``rfft`` (float64 Hann frames of 1,024 and, on long beds, 4,096 samples, half
    overlap, 256 frames at a time) and the zero-phase gain's float32 ``rfft``/``irfft`` of the
    bed's fast length (:func:`duetflow.audio.tone_colour.to_envelope`)."""
    work: list[tuple[str, int, int]] = []
    for n in sizes:
        m = tone_colour.fast_length(n)
        frames = [tone_colour.FRAME]
        if m >= tone_colour.LONG_FRAME_MIN_FRAMES * tone_colour.LONG_FRAME:
            frames.append(tone_colour.LONG_FRAME)
        for frame in frames:
            count = (m - frame) // (frame // 2) + 1
            work += [("spectrum", frame, min(256, count - c0)) for c0 in range(0, count, 256)]
        work.append(("gain", m, 1))
    bufs = {(k, a, b): np.zeros((b, a)) for k, a, b in set(work) if k == "spectrum"}
    beds = {a: np.zeros(a, np.float32) for k, a, _ in set(work) if k == "gain"}

    def run() -> None:
        for kind, a, b in work:
            if kind == "spectrum":
                np.fft.rfft(bufs[kind, a, b], axis=1)
            else:
                sp_fft.irfft(sp_fft.rfft(beds[a]), n=a)

    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--windows", type=int, default=24)
    args = ap.parse_args()

    from duetflow.rendering import sources

    lowpass = _Timed(bandlimit, "lowpass")
    lowpass.install(sources, roomtone)
    colour = _Timed(roomtone, "colour")
    import duetflow.rendering.mixed as mixed
    import duetflow.rendering.separable as separable

    colour.install(mixed, separable)

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        recs = bench_render._make_recordings(root, 45.0, bench_render.UNIQUE + 1)
        ds = bench_render._dialogues(recs[:-1], args.windows, 45.0)
        warm = bench_render._dialogues(recs[-1:], 1, 45.0, "warm")

        def bundled(d: list[Any], out: Path) -> float:
            os.environ[bench_render.DEFAULT_RENDER_ENV] = "1"
            try:
                return bench_render.run_ours(d, out)
            finally:
                del os.environ[bench_render.DEFAULT_RENDER_ENV]

        paths: dict[str, Callable[[list[Any], Path], float]] = {
            "defaults": bench_render.run_ours,
            "bundled": bundled,
            "floor": bench_render.run_floor_pcm16,
        }
        for name, run in paths.items():  # warm: numba's kernels, codec and plans loaded
            run(warm, root / f"warm-{name}")
        best: dict[str, float] = {}
        rendered: dict[str, float] = {}
        transforms: Callable[[], None] | None = None
        colour_transforms: Callable[[], None] | None = None
        for k in range(args.rounds):
            for name, run in paths.items():
                lowpass.cpu = colour.cpu = 0.0
                lowpass.sizes.clear()
                colour.sizes.clear()
                out = root / f"{name}-{k}"
                timed = bench_render._Timed(ds, out)  # written files removed, off the clock
                t0 = time.process_time()
                seconds = run(timed, out)  # type: ignore[arg-type]  # iterated once
                cpu = time.process_time() - t0 - timed.excluded
                rendered[name] = seconds
                for key, value in ((name, cpu), (f"{name} lowpass", lowpass.cpu)):
                    best[key] = min(best.get(key, value), value)
                if name == "bundled":
                    best["bundled colour"] = min(best.get("bundled colour", colour.cpu), colour.cpu)
                    # the bundled render less its low-pass and colour, in the same run
                    rest = cpu - lowpass.cpu - colour.cpu
                    best["bundled rest"] = min(best.get("bundled rest", rest), rest)
                    if transforms is None:
                        transforms = _transforms(list(lowpass.sizes), bench_render.SR, 4000.0)
                        colour_transforms = _colour_transforms(list(colour.sizes))
            assert transforms is not None and colour_transforms is not None
            for key, fn in (("transforms", transforms), ("colour transforms", colour_transforms)):
                t0 = time.process_time()
                fn()
                cpu = time.process_time() - t0
                best[key] = min(best.get(key, cpu), cpu)

    n = len(ds)
    per = {k: v / n * 1e3 for k, v in best.items()}
    out_s = rendered["bundled"] / n  # rendered seconds per window (the bundled section's)
    budget_rt = out_s / 1500.0 * 1e3
    budget_floor = 3.0 * per["floor"]
    bound = per["bundled rest"] + per["transforms"]
    bound_all = bound + per["colour transforms"]
    print(f"windows {n}, rounds {args.rounds}; rendered {out_s:.2f} s a window (bundled)")
    rows = [
        ("pcm16 floor", per["floor"]),
        ("code defaults", per["defaults"]),
        ("bundled section", per["bundled"]),
        ("  its low-pass (2 tracks)", per["bundled lowpass"]),
        ("  its room tone colour", per["bundled colour"]),
        ("  the rest", per["bundled rest"]),
        ("low-pass transforms alone", per["transforms"]),
        ("colour transforms alone", per["colour transforms"]),
        ("bound: the rest + low-pass's", bound),
        ("bound: ... + the colour's", bound_all),
        ("budget: 1,500x real time", budget_rt),
        ("budget: 3x the pcm16 floor", budget_floor),
    ]
    for label, ms in rows:
        print(f"{label:<32} {ms:7.2f} ms per window")
    print(
        f"band_limit_floor: budget 1500x {budget_rt:.2f} ms, 3x floor {budget_floor:.2f} ms; "
        f"bundled {per['bundled']:.2f} ms; bound {bound:.2f} ms (low-pass transforms "
        f"{per['transforms']:.2f} ms, the rest {per['bundled rest']:.2f} ms), {bound_all:.2f} ms "
        f"with the colour's transforms ({per['colour transforms']:.2f} ms); code defaults "
        f"{per['defaults']:.2f} ms; load {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
