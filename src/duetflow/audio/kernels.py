"""Exact compiled IIR kernels: the same bits as ``scipy.signal.lfilter`` / ``sosfilt``, faster.

The 100 Hz high-pass of the edge measure (:mod:`duetflow.audio.edges`) and the K-weighting of
BS.1770 (:mod:`duetflow.audio.bs1770`) are recursions: each output sample depends on the one
before, so neither vectorises and numpy cannot speed them up without changing the order of
operations (and so the results' last bits, which the calibrated measures and the byte-identical
renders depend on). Compiled, the *same* recursion in the *same* operation order gives the same
bits without scipy's per-call overhead and its generic inner loops:

* :func:`lfilter` is scipy's direct form II transposed (``_linear_filter``): coefficients
  divided by ``a[0]`` once, in the signal's dtype; ``y = z0 + b0*x``;
  ``z_i = (z_{i+1} + x*b_{i+1}) - y*a_{i+1}``; ``z_last = x*b_last - y*a_last``;
* :func:`sosfilt` is scipy's cascade of sections (``_sosfilt``): per section
  ``y = b0*x + z0``; ``z0 = (b1*x - a1*y) + z1``; ``z1 = b2*x - a2*y``.

No fused multiply-add, no reassociation (numba's default, ``fastmath`` off), float32 stays
float32: the tests compare every bit with scipy on random, constructed and edge-case signals.
One step is skipped, not changed: when a second-order step leaves the state exactly as it was
(a fixed point — on digital silence the float32 high-pass's rounding holds it on a subnormal
forever, where each step costs ~20x a normal one), the following samples with the same input
bits are given the same output without computing it, which is what computing it would give.

The compiled kernels need the optional ``numba`` (extra ``fast``). Without it, or with
``DUETFLOW_KERNELS=scipy`` in the environment, both functions call scipy: the same output.
numba is imported (and the kernels compiled, or loaded from numba's on-disk cache) on the first
call, never at import, so commands that filter nothing do not pay for it.

The Welch periodogram of :func:`duetflow.audio.bandlimit.welch_density` has four loops
compiled too (:func:`welch_kernels`, in :mod:`duetflow.audio.welch_kernels`), each numpy's own
arithmetic in its own order, and segments of digital silence are not transformed (their power
is +0.0 exactly); the FFT between them stays scipy's. The edge measure's
small loops (running median, quiet-run walk, envelope window sums, zero runs, a pause's floor
and its quietest stretch, a turn's core frames, a pause's half medians and quietest 20 ms) are
:func:`edge_kernels` (:mod:`duetflow.audio.edge_kernels`), the mixdown's per-sample passes (the
16-bit written form, the bed under the clips, BS.1770's K-weighted hop energies) are
:func:`sample_kernels` (:mod:`duetflow.audio.sample_kernels`); each has a numpy/scipy path with
the same bits where numba is missing.

The edge measure's analysis does not call :func:`lfilter` itself: its high-pass and both
envelopes' hop powers are one pass (:func:`duetflow.audio.edge_kernels.hop_powers`: a float64
recursion in chains side by side, 32 vectorised lanes on a long stretch; not the float32 bits,
see :func:`duetflow.audio.edges.analyse`).
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable
from typing import Any, overload

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.floating]

#: Environment variable: ``scipy`` forces the scipy path (same output, for comparisons).
KERNELS_ENV = "DUETFLOW_KERNELS"


@functools.lru_cache(maxsize=1)
def _compiled() -> tuple[Callable[..., Any], Callable[..., Any]] | None:
    """The numba kernels, or None where numba is missing or turned off."""
    if os.environ.get(KERNELS_ENV, "").strip().lower() == "scipy":
        return None
    try:
        import numba
    except Exception:  # ImportError, or a numba that fails to load against this numpy
        return None

    @numba.njit(cache=True, nogil=True)  # type: ignore[misc]
    def df2t(b: Any, a: Any, x: Any, z: Any, y: Any) -> None:  # pragma: no cover - compiled
        n = b.shape[0]
        if n == 1:
            for k in range(x.shape[0]):
                y[k] = x[k] * b[0]
            return
        if n == 3:  # second order (the high-pass): the state in registers
            b0, b1, b2 = b[0], b[1], b[2]
            a1, a2 = a[1], a[2]
            z0, z1 = z[0], z[1]
            k = 0
            size = x.shape[0]
            while k < size:
                xn = x[k]
                yn = z0 + b0 * xn
                n0 = z1 + xn * b1 - yn * a1
                n1 = xn * b2 - yn * a2
                y[k] = yn
                k += 1
                if (
                    n0 == z0
                    and n1 == z1
                    and math.copysign(1.0, n0) == math.copysign(1.0, z0)
                    and math.copysign(1.0, n1) == math.copysign(1.0, z1)
                ):
                    # a fixed point under this input (on digital silence the rounding leaves
                    # the state stuck on a subnormal, each step ~20x slower): while the input
                    # repeats bit for bit, every step computes the same output and state
                    while (
                        k < size
                        and x[k] == xn
                        and math.copysign(1.0, x[k]) == math.copysign(1.0, xn)
                    ):
                        y[k] = yn
                        k += 1
                z0, z1 = n0, n1
            z[0], z[1] = z0, z1
            return
        for k in range(x.shape[0]):
            xn = x[k]
            yn = z[0] + b[0] * xn
            for i in range(n - 2):
                z[i] = z[i + 1] + xn * b[i + 1] - yn * a[i + 1]
            z[n - 2] = xn * b[n - 1] - yn * a[n - 1]
            y[k] = yn

    @numba.njit(cache=True, nogil=True)  # type: ignore[misc]
    def sections(sos: Any, x: Any, zi: Any) -> None:  # pragma: no cover - compiled
        n_sections = sos.shape[0]
        if n_sections == 2:  # K-weighting: the states in registers, the same operations
            b00, b01, b02, a01, a02 = sos[0, 0], sos[0, 1], sos[0, 2], sos[0, 4], sos[0, 5]
            b10, b11, b12, a11, a12 = sos[1, 0], sos[1, 1], sos[1, 2], sos[1, 4], sos[1, 5]
            p00, p01, p10, p11 = zi[0, 0], zi[0, 1], zi[1, 0], zi[1, 1]
            for k in range(x.shape[0]):
                xc = x[k]
                xm = b00 * xc + p00
                p00 = b01 * xc - a01 * xm + p01
                p01 = b02 * xc - a02 * xm
                xo = b10 * xm + p10
                p10 = b11 * xm - a11 * xo + p11
                p11 = b12 * xm - a12 * xo
                x[k] = xo
            zi[0, 0], zi[0, 1], zi[1, 0], zi[1, 1] = p00, p01, p10, p11
            return
        for k in range(x.shape[0]):
            x_cur = x[k]
            for s in range(n_sections):
                x_new = sos[s, 0] * x_cur + zi[s, 0]
                zi[s, 0] = sos[s, 1] * x_cur - sos[s, 4] * x_new + zi[s, 1]
                zi[s, 1] = sos[s, 2] * x_cur - sos[s, 5] * x_new
                x_cur = x_new
            x[k] = x_cur

    try:  # compile (or load from numba's cache) the signatures the measures use, once
        for dtype in (np.float32, np.float64):
            one = np.ones(3, dtype=dtype)
            df2t(one, one, one, np.zeros(2, dtype=dtype), np.empty(3, dtype=dtype))
        sections(np.ones((1, 6)), np.ones(3), np.zeros((1, 2)))
    except Exception:  # a numba that cannot compile here: scipy, the same output
        return None
    return df2t, sections


def compiled_available() -> bool:
    """Whether the compiled kernels are in use (numba importable and not turned off)."""
    return _compiled() is not None


def lfilter(b: npt.ArrayLike, a: npt.ArrayLike, x: FloatArray) -> FloatArray:
    """``scipy.signal.lfilter(b, a, x)`` for a 1-D float32 or float64 ``x`` (zero initial state),
    bit for bit; other inputs go to scipy."""
    kernels = _compiled()
    xa = np.asarray(x)
    bb = np.atleast_1d(np.asarray(b))
    aa = np.atleast_1d(np.asarray(a))
    dtype = np.result_type(bb, aa, xa)
    if (
        kernels is None
        or xa.ndim != 1
        or dtype not in (np.float32, np.float64)
        or bb.ndim != 1
        or aa.ndim != 1
        or len(aa) < 2  # scipy's FIR path (a convolution), another operation order
        or len(bb) == 0
        or aa[0] == 0
    ):
        from scipy.signal import lfilter as scipy_lfilter

        out: FloatArray = scipy_lfilter(b, a, x)
        return out
    n = max(len(bb), len(aa))
    bn = np.zeros(n, dtype=dtype)
    an = np.zeros(n, dtype=dtype)
    bn[: len(bb)] = bb
    an[: len(aa)] = aa
    a0 = an[0]
    bn /= a0  # scipy normalises once, in the signal's dtype
    an /= a0
    xs = np.ascontiguousarray(xa, dtype=dtype)
    y = np.empty_like(xs)
    kernels[0](bn, an, xs, np.zeros(max(n - 1, 1), dtype=dtype), y)
    return y


@overload
def sosfilt(sos: FloatArray, x: FloatArray, zi: None = None) -> FloatArray: ...


@overload
def sosfilt(sos: FloatArray, x: FloatArray, zi: FloatArray) -> tuple[FloatArray, FloatArray]: ...


def sosfilt(
    sos: FloatArray, x: FloatArray, zi: FloatArray | None = None
) -> FloatArray | tuple[FloatArray, FloatArray]:
    """``scipy.signal.sosfilt(sos, x[, zi])`` for a 1-D ``x``, bit for bit: the output (and the
    final state when ``zi`` is given) in the result dtype of ``sos``, ``x`` (and ``zi``)."""
    kernels = _compiled()
    xa = np.asarray(x)
    s = np.asarray(sos)
    inputs = [s, xa] if zi is None else [s, xa, np.asarray(zi)]
    dtype = np.result_type(*inputs)
    if (
        kernels is None
        or xa.ndim != 1
        or dtype not in (np.float32, np.float64)
        or s.ndim != 2
        or s.shape[1] != 6
        or not np.all(s[:, 3] == 1)
    ):
        from scipy.signal import sosfilt as scipy_sosfilt

        if zi is None:
            out: FloatArray = scipy_sosfilt(sos, x)
            return out
        y, zf = scipy_sosfilt(sos, x, zi=zi)
        return y, zf
    y = np.array(xa, dtype=dtype, order="C")  # filtered in place, as scipy does
    state = (
        np.zeros((s.shape[0], 2), dtype=dtype)
        if zi is None
        else np.array(np.asarray(zi), dtype=dtype, order="C")
    )
    if zi is not None and state.shape != (s.shape[0], 2):
        raise ValueError(f"zi must have shape {(s.shape[0], 2)}, got {state.shape}")
    kernels[1](np.ascontiguousarray(s, dtype=dtype), y, state)
    if zi is None:
        return y
    return y, state


@functools.lru_cache(maxsize=1)
def welch_kernels() -> (
    tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any], Callable[..., Any]] | None
):
    """(segments holding sound, windowed segments, power into columns, mean of rows) compiled,
    or None (numba missing or turned off): see the module docstring;
    :func:`duetflow.audio.bandlimit.welch_density` uses numpy then, with the same bits. The
    kernels are module-level functions of :mod:`duetflow.audio.welch_kernels` (numba caches
    those on disk; closures that call one another it compiled anew in every process)."""
    if _compiled() is None:
        return None
    try:
        from duetflow.audio import welch_kernels as wk

        x = np.ones(8)
        seg = np.empty((1, 4))
        rows = np.zeros(1, dtype=np.int64)
        wk.live(x, 2, 4, np.empty(3, dtype=np.bool_))
        wk.segments(x, np.ones(4), 2, rows, seg)
        p = np.empty((3, 1))
        wk.power(np.ones((1, 3), dtype=np.complex128), p, rows)
        wk.row_means(p, 1, 2, np.empty(3))
    except Exception:  # a numba that cannot compile here: numpy, the same output
        return None
    return wk.live, wk.segments, wk.power, wk.row_means


@functools.lru_cache(maxsize=1)
def edge_kernels() -> Any | None:
    """The edge measure's compiled loops (:mod:`duetflow.audio.edge_kernels`: the flicker's
    running median, the quiet-run walk, the envelope windows' sums, the longest run of digital
    zeros), or None (numba missing or
    turned off): :mod:`duetflow.audio.edges` uses scipy / numpy / Python then, with the same
    bits."""
    if _compiled() is None:
        return None
    try:
        from duetflow.audio import edge_kernels as ek

        x = np.arange(5, dtype=np.float64)
        ek.running_median(x, 3, np.empty(5))
        ek.quiet_run(x, 4, 5, -1, 2.0, 2)
        ek.window_sums(x, 4, np.empty(2))
        ek.floor_stats(x, x, 0, 5, np.ones(5, bool), True, 3, -90.0, 0.2, 4, np.empty(4))
        ek.quietest(x, 2)
        ek.core_frames(x, 1.0, 25.0, -200.0, np.empty(4))
        ek.median(x, np.empty(1))
        ek.window_min(x, 2)
        at = np.zeros(1, dtype=np.int64)
        ek.hop_powers(
            np.ones(5), np.ones(8, np.float32), 1, 1, at, at, at + 1, at,
            np.zeros((1, 2)), np.empty(4), np.empty(4),
        )  # fmt: skip
    except Exception:  # a numba that cannot compile here: the same output without it
        return None
    return ek


@functools.lru_cache(maxsize=1)
def sample_kernels() -> Any | None:
    """The mixdown's per-sample loops (:mod:`duetflow.audio.sample_kernels`: the 16-bit written
    form, BS.1770's K-weighted hop energies), or None (numba missing or turned off): numpy then,
    the same bits."""
    if _compiled() is None:
        return None
    try:
        from duetflow.audio import sample_kernels as sk

        x = np.arange(5, dtype=np.float32)
        sk.written16(x, np.float32(0.5), True, np.empty(5, np.float32))
        sk.top_up(x.copy(), x, x, np.float32(1.0))
    except Exception:  # a numba that cannot compile here: the same output without it
        return None
    return sk
