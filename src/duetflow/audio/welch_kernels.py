"""The Welch periodogram's loops compiled with numba (imported by
:func:`duetflow.audio.kernels.welch_kernels` only where numba is installed and not turned off).

Each is numpy's own arithmetic in its own order, so :func:`duetflow.audio.bandlimit.welch_density`
gives ``scipy.signal.welch``'s bits either way: a segment's mean is numpy's pairwise sum
(``np.add.reduce`` on float64: 8 partial sums up to 128 values, halves split on a multiple of 8
above) divided by its length; the segment less it, times the window; the power ``re*re + im*im``;
the mean over segments the same pairwise sum. No fused multiply-add (numba's default).
A segment of digital silence (every sample +-0.0) is not transformed: its mean is +-0.0, the
segment less it and windowed +-0.0, every bin of its transform +-0.0 and its power
``re*re + im*im`` +0.0 exactly, which its column holds from the start (:func:`live` finds them).
Module-level functions, so numba's on-disk cache serves every process after the first.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def leaf(a: Any, lo: int, n: int) -> Any:  # pragma: no cover - compiled
    # numpy's pairwise_sum for float64 on at most 128 values
    # (numpy/_core/src/umath/loops_utils.h.src): 8 partial sums, then the rest in order
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[lo + i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    m = n - (n % 8)
    while i < m:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def pairwise(a: Any, lo: int, n: int) -> Any:  # pragma: no cover - compiled
    # numpy's pairwise sum: above 128 values, the halves (split on a multiple of 8) summed
    # apart and added. Walked with an explicit stack (numba caches no recursive function):
    # the same tree of additions, so the same bits (a + b == b + a exactly)
    if n <= 128:
        return leaf(a, lo, n)
    f_lo = np.empty(128, np.int64)
    f_n = np.empty(128, np.int64)
    f_join = np.empty(128, np.bool_)
    vals = np.empty(128, np.float64)
    f_lo[0], f_n[0], f_join[0] = lo, n, False
    top, vt = 1, 0
    while top > 0:
        top -= 1
        at, m, join = f_lo[top], f_n[top], f_join[top]
        if join:
            vals[vt - 2] = vals[vt - 2] + vals[vt - 1]
            vt -= 1
        elif m <= 128:
            vals[vt] = leaf(a, at, m)
            vt += 1
        else:
            n2 = m // 2
            n2 -= n2 % 8
            f_lo[top], f_n[top], f_join[top] = at, m, True
            f_lo[top + 1], f_n[top + 1], f_join[top + 1] = at + n2, m - n2, False
            f_lo[top + 2], f_n[top + 2], f_join[top + 2] = at, n2, False
            top += 3
    return vals[0]


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def live(x: Any, hop: int, m: int, out: Any) -> int:  # pragma: no cover - compiled
    # out[i]: whether segment i (samples i*hop .. i*hop+m) holds a sample other than +-0.0
    # (NaN counts as one); returns how many do. Each segment is read from its start until a
    # sample that is not zero: silent stretches are read once per segment over them, speech
    # stops at once
    count = 0
    for i in range(out.shape[0]):
        lo = i * hop
        hit = False
        for k in range(lo, lo + m):
            if x[k] != 0.0:
                hit = True
                break
        out[i] = hit
        count += hit
    return count


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def segments(x: Any, win: Any, hop: int, rows: Any, out: Any) -> None:  # pragma: no cover
    # out[r]: segment rows[r] less its mean, times the window
    m = win.shape[0]
    for r in range(out.shape[0]):
        lo = rows[r] * hop
        mean = (0.0 + pairwise(x, lo, m)) / m
        for k in range(m):
            out[r, k] = (x[lo + k] - mean) * win[k]


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def power(spec: Any, p: Any, cols: Any) -> None:  # pragma: no cover - compiled
    # p[f, cols[r]] = |spec[r, f]|**2 as re*re + im*im; columns not named are left as they are
    nf = spec.shape[1]
    for f0 in range(0, nf, 16):  # tiles: short contiguous reads and writes, cache-sized
        f1 = min(nf, f0 + 16)
        for r in range(spec.shape[0]):
            c = cols[r]
            for f in range(f0, f1):
                re = spec[r, f].real
                im = spec[r, f].imag
                p[f, c] = re * re + im * im


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def row_means(p: Any, double_from: int, double_to: int, out: Any) -> None:  # pragma: no cover
    n = p.shape[1]
    for f in range(p.shape[0]):
        if double_from <= f < double_to:
            for k in range(n):
                p[f, k] *= 2.0
        out[f] = (0.0 + pairwise(p[f], 0, n)) / n
