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
is +0.0 exactly); the FFT between them stays scipy's. Two independent signals are
filtered side by side by :func:`lfilter_pair` and :func:`sosfilt_pair` (the same recursions in
one loop, :mod:`duetflow.audio.lane_kernels`: nearly the cost of one), and the edge measure's
small loops (running median, quiet-run walk, envelope window sums, zero runs, a pause's floor
and its quietest stretch, a turn's core frames, a pause's half medians and quietest 20 ms) are
:func:`edge_kernels` (:mod:`duetflow.audio.edge_kernels`), the mixdown's per-sample passes (the
16-bit written form, the bed under the clips, BS.1770's guarded filter input) are
:func:`sample_kernels` (:mod:`duetflow.audio.sample_kernels`); each has a numpy/scipy path with
the same bits where numba is missing.

One kernel is not scipy's bits: :func:`lfilter_lanes`, the second-order recursion with a float64
state in 16 pieces side by side (each started early enough, from the poles, that the cut moves
no output by more than ``2**-53`` of the peak). The edge measure does not use it unless
:data:`duetflow.audio.edges.HIGHPASS_LANES` is set (measured: no faster in the render).
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
        for dtype in (np.float32, np.float64):
            ek.longest_zero_run(np.zeros(3, dtype))
    except Exception:  # a numba that cannot compile here: the same output without it
        return None
    return ek


@functools.lru_cache(maxsize=1)
def sample_kernels() -> Any | None:
    """The mixdown's per-sample loops (:mod:`duetflow.audio.sample_kernels`: the 16-bit written
    form, BS.1770's guarded filter input), or None (numba missing or turned off): numpy then,
    the same bits."""
    if _compiled() is None:
        return None
    try:
        from duetflow.audio import sample_kernels as sk

        x = np.arange(5, dtype=np.float32)
        sk.written16(x, np.float32(0.5), True, np.empty(5, np.float32))
        for dtype in (np.float32, np.float64):
            sk.guarded(x.astype(dtype), 1, np.ones(2, dtype), np.empty(3))
        sk.top_up(x.copy(), x, x, np.float32(1.0))
    except Exception:  # a numba that cannot compile here: the same output without it
        return None
    return sk


@functools.lru_cache(maxsize=1)
def _lanes() -> Any | None:
    """:mod:`duetflow.audio.lane_kernels`, or None (numba missing or turned off)."""
    if _compiled() is None:
        return None
    try:
        from duetflow.audio import lane_kernels as lk

        for dtype in (np.float32, np.float64):
            one = np.ones(3, dtype=dtype)
            z = np.zeros(2, dtype=dtype)
            lk.df2t_pair(one, one, one, z, np.empty(3, dtype), one, z.copy(), np.empty(3, dtype))
        lk.sections_pair(
            np.ones((1, 6)), np.ones(3), np.zeros((1, 2)), np.ones(3), np.zeros((1, 2))
        )
        lk.df2t_lanes(
            np.ones(3),
            np.ones(3),
            np.ones(lk.LANES + 1, np.float32),
            np.empty(lk.LANES, np.float32),
            1,
            1,
        )
    except Exception:  # a numba that cannot compile here: one signal at a time, the same output
        return None
    return lk


def lfilter_pair(
    b: npt.ArrayLike, a: npt.ArrayLike, x: FloatArray, u: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """``(lfilter(b, a, x), lfilter(b, a, u))`` bit for bit, the two second-order recursions
    run side by side (:mod:`duetflow.audio.lane_kernels`: nearly the cost of one); anything
    else, or without numba, one after the other."""
    kernels, lanes = _compiled(), _lanes()
    xa, ua = np.asarray(x), np.asarray(u)
    bb = np.atleast_1d(np.asarray(b))
    aa = np.atleast_1d(np.asarray(a))
    dtype = np.result_type(bb, aa, xa)
    if (
        kernels is None
        or lanes is None
        or xa.ndim != 1
        or ua.ndim != 1
        or np.result_type(bb, aa, ua) != dtype
        or dtype not in (np.float32, np.float64)
        or bb.shape != (3,)
        or aa.shape != (3,)
        or aa[0] == 0
    ):
        return lfilter(b, a, x), lfilter(b, a, u)
    bn = bb.astype(dtype)
    an = aa.astype(dtype)
    a0 = an[0]
    bn /= a0  # as lfilter: normalised once, in the signal's dtype
    an /= a0
    xs = np.ascontiguousarray(xa, dtype=dtype)
    us = np.ascontiguousarray(ua, dtype=dtype)
    y, v = np.empty_like(xs), np.empty_like(us)
    zx, zu = np.zeros(2, dtype=dtype), np.zeros(2, dtype=dtype)
    common = min(len(xs), len(us))
    done = int(lanes.df2t_pair(bn, an, xs, zx, y, us, zu, v))
    # the rest of each (the longer one's tail, or both after a fixed point) alone, from the
    # state reached: the same steps a single run takes there
    if done < len(xs):
        kernels[0](bn, an, xs[done:], zx, y[done:])
    if done < len(us):
        kernels[0](bn, an, us[done:], zu, v[done:])
    assert done <= common
    return y, v


def sosfilt_pair_inplace(
    sos: FloatArray, y: FloatArray, zy: FloatArray, v: FloatArray, zv: FloatArray
) -> bool:
    """:func:`sosfilt_pair` of float64 C-contiguous ``y`` and ``v`` in place, the float64
    states ``zy`` and ``zv`` updated (no copies: the caller made the arrays); False, with
    nothing done, where the compiled kernels are missing or an argument is not of that form."""
    kernels, lanes = _compiled(), _lanes()
    ok = (
        kernels is not None
        and lanes is not None
        and all(
            a.dtype == np.float64 and a.flags.c_contiguous and a.flags.writeable
            for a in (y, zy, v, zv)
        )
        and y.ndim == 1
        and v.ndim == 1
        and sos.dtype == np.float64
        and sos.ndim == 2
        and sos.shape[1] == 6
        and bool(np.all(sos[:, 3] == 1))
        and zy.shape == (sos.shape[0], 2)
        and zv.shape == (sos.shape[0], 2)
    )
    if not ok:
        return False
    assert kernels is not None and lanes is not None
    sc = np.ascontiguousarray(sos)
    done = int(lanes.sections_pair(sc, y, zy, v, zv))
    if done < len(y):
        kernels[1](sc, y[done:], zy)
    if done < len(v):
        kernels[1](sc, v[done:], zv)
    return True


def sosfilt_pair(
    sos: FloatArray, x: FloatArray, zx: FloatArray, u: FloatArray, zu: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """``sosfilt(sos, x, zi=zx)`` and ``sosfilt(sos, u, zi=zu)`` bit for bit (outputs, final
    states), the two cascades run side by side where numba is (float64, 1-D), else one after
    the other."""
    kernels, lanes = _compiled(), _lanes()
    s = np.asarray(sos)
    xa, ua = np.asarray(x), np.asarray(u)
    ok = (
        kernels is not None
        and lanes is not None
        and xa.ndim == 1
        and ua.ndim == 1
        and np.result_type(s, xa, np.asarray(zx)) == np.float64
        and np.result_type(s, ua, np.asarray(zu)) == np.float64
        and s.ndim == 2
        and s.shape[1] == 6
        and bool(np.all(s[:, 3] == 1))
        and np.shape(zx) == (s.shape[0], 2)
        and np.shape(zu) == (s.shape[0], 2)
    )
    if not ok:
        y, zy = sosfilt(sos, x, zx)
        v, zv = sosfilt(sos, u, zu)
        return y, zy, v, zv
    assert kernels is not None and lanes is not None
    y = np.array(xa, dtype=np.float64, order="C")  # filtered in place, as scipy does
    v = np.array(ua, dtype=np.float64, order="C")
    sx = np.array(zx, dtype=np.float64, order="C")
    su = np.array(zu, dtype=np.float64, order="C")
    sc = np.ascontiguousarray(s, dtype=np.float64)
    done = int(lanes.sections_pair(sc, y, sx, v, su))
    if done < len(y):
        kernels[1](sc, y[done:], sx)
    if done < len(v):
        kernels[1](sc, v[done:], su)
    return y, sx, v, su


#: Lanes a long second-order recursion is split into by :func:`lfilter_lanes` (the compiled
#: kernel's vector width: :data:`duetflow.audio.lane_kernels.LANES`)
LANES = 16


@functools.lru_cache(maxsize=16)
def lane_warmup(b: tuple[float, ...], a: tuple[float, ...]) -> int:
    """Samples a lane of :func:`lfilter_lanes` starts before its first output (second order,
    ``a[0] == 1``): the smallest ``W`` such that a state missed ``W`` or more samples earlier moves
    no later output by more than ``2**-53`` of the signal's peak (float64 resolution).

    From the poles, not a guess: in direct form II transposed the state follows
    ``z' = A z + B x``, ``y = z[0] + b0 x`` with ``A = [[-a1, 1], [-a2, 0]]``,
    ``B = [b1 - a1 b0, b2 - a2 b0]``; every state the input can drive is bounded by
    ``|z_i| <= S_i max|x|`` (``S_i = sum_k |(A^k B)_i|``), and a state error ``d`` at one sample
    shows ``n`` samples later as ``e1 A^n d``, at most ``||e1 A^n||_1 max_i S_i max|x|``. ``W``
    is one past the last ``n`` where that bound exceeds ``2**-53`` (it decays as the poles'
    radius to the ``n``: 100 Hz at 16 kHz, radius 0.9726, gives ~1,400 samples, 88 ms)."""
    b0, b1, b2 = (float(v) for v in b)
    a1, a2 = float(a[1]), float(a[2])
    radius = float(np.max(np.abs(np.roots([1.0, a1, a2]))))
    if not radius < 1.0:
        raise ValueError(f"unstable recursion (pole radius {radius})")
    mat = np.array([[-a1, 1.0], [-a2, 0.0]])
    # the state gains S_i: the sum of the state's impulse response, until its terms vanish
    v = np.array([b1 - a1 * b0, b2 - a2 * b0])
    gain = np.zeros(2)
    limit = int(math.ceil(200.0 / -math.log(radius))) + 64  # radius**limit < 1e-86
    for _ in range(limit):
        gain += np.abs(v)
        v = mat @ v
    scale = float(np.max(gain))
    row = np.array([1.0, 0.0])
    last = 0
    for n in range(limit):
        if float(np.sum(np.abs(row))) * scale > 2.0**-53:
            last = n
        row = row @ mat
    return last + 1


#: Signals shorter than this many warm-ups are filtered in one piece (measured: 16 lanes cost
#: ~8x one step each, so they pay from ~1.4 warm-ups per lane: ~21,000 samples at 16 kHz)
_LANES_FROM = 2 * LANES


def _lane_piece(n: int) -> int:
    """The length of each of :data:`LANES` pieces a signal of ``n`` samples is cut into."""
    return max(1, -(-n // LANES))


def lane_bounds(n: int, warm: int) -> list[tuple[int, int, int]]:
    """``(warm_start, start, stop)`` of the pieces :func:`lfilter_lanes` cuts ``[0, n)`` into:
    :data:`LANES` pieces of equal length (the last ones shorter or empty), each filtered from a
    zero state from ``warm`` samples before its start (the first from the signal's start); a
    signal shorter than :data:`_LANES_FROM` warm-ups is one piece (the lanes' warm-ups would
    cost more than they save)."""
    if n < _LANES_FROM * warm:
        return [(0, 0, n)]
    piece = _lane_piece(n)
    cuts = [min(n, j * piece) for j in range(LANES + 1)]
    return [(max(0, cuts[j] - warm), cuts[j], cuts[j + 1]) for j in range(LANES)]


def lfilter_lanes(
    b: npt.ArrayLike, a: npt.ArrayLike, signals: list[FloatArray]
) -> list[npt.NDArray[np.float32]]:
    """Each signal filtered by the second-order ``b``, ``a`` with a **float64 state**, output
    in float32: not scipy's float32 ``lfilter`` bit for bit (that one rounds its state to
    float32 each step), but within float32 rounding of the exact filter, and faster.

    Each signal is cut into :data:`LANES` pieces of equal length (:func:`lane_bounds`: a long
    recursion is bound by its latency; side by side the pieces fill the vector units); a piece
    starts from a zero state :func:`lane_warmup` samples early (the first at the signal's
    start, as scipy), so its outputs differ from one unbroken float64 recursion by less than
    ``2**-53`` of the signal's peak before the float32 rounding. Each piece is exactly scipy's
    float64 ``lfilter`` of ``x[warm_start:stop]`` (float32 ``b``, ``a`` and ``x`` widened),
    rounded to float32: the compiled lanes (:func:`duetflow.audio.lane_kernels.df2t_lanes`)
    where numba is, else scipy itself piece by piece, the same bits either way (one step
    differs: a float64 state below ``1e-280`` is set to zero, which moves no float32 output)."""
    bb = np.asarray(np.atleast_1d(np.asarray(b)), dtype=np.float64)
    aa = np.asarray(np.atleast_1d(np.asarray(a)), dtype=np.float64)
    if bb.shape != (3,) or aa.shape != (3,) or aa[0] != 1.0:
        raise ValueError("lfilter_lanes takes a second-order b, a with a[0] == 1")
    xs = [np.ascontiguousarray(np.asarray(x), dtype=np.float32) for x in signals]
    for x in xs:
        if x.ndim != 1:
            raise ValueError(f"lfilter_lanes takes 1-D signals, got shape {x.shape}")
    warm = lane_warmup(tuple(bb.tolist()), tuple(aa.tolist()))
    lanes = _lanes()
    outs: list[npt.NDArray[np.float32]] = []
    for x in xs:
        n = len(x)
        if lanes is None:
            from scipy.signal import lfilter as scipy_lfilter

            y = np.empty(n, dtype=np.float32)
            for w, s, e in lane_bounds(n, warm):
                if e > s:
                    y[s:e] = scipy_lfilter(bb, aa, x[w:e].astype(np.float64))[s - w :]
            outs.append(y)
            continue
        if lanes.LANES != LANES:
            raise RuntimeError("duetflow.audio.lane_kernels.LANES differs from kernels.LANES")
        if n < _LANES_FROM * warm:  # one piece: scipy's float64 recursion, compiled
            kernels = _compiled()
            assert kernels is not None
            y64 = np.empty(n, dtype=np.float64)
            kernels[0](bb, aa, x.astype(np.float64), np.zeros(2), y64)
            outs.append(y64.astype(np.float32))
            continue
        piece = _lane_piece(n)
        xp = np.zeros(LANES * piece + warm, dtype=np.float32)
        xp[warm : warm + n] = x
        yp = np.empty(LANES * piece, dtype=np.float32)
        lanes.df2t_lanes(bb, aa, xp, yp, piece, warm)
        outs.append(yp[:n])
    return outs
