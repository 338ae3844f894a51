"""The edge measure's small loops compiled with numba (imported by
:func:`duetflow.audio.kernels.edge_kernels` only where numba is installed and not turned off).

Each gives the numpy/scipy path's bits by construction, not by a tolerance:

* :func:`running_median` is ``scipy.ndimage.median_filter(x, size, mode="nearest")`` of a 1-D
  float64 array (odd ``size``): the median of an odd count of values is one of them (rank
  ``size // 2``), so any exact selection returns the same number. The window is kept sorted
  (the outgoing value removed, the incoming one inserted), which costs ``size`` moves per frame
  where scipy's rank filter costs several times that on a few dozen frames' set-up. A NaN
  makes the order undefined: the kernel says so and the caller asks scipy.
* :func:`quiet_run` walks an envelope from a core frame outward for the first run of quiet
  frames, the comparisons of :func:`duetflow.audio.edges._quiet_run` in the same order.
* :func:`window_sums` sums each envelope window's hop blocks in the order numpy's slice adds
  do (``((p0 + p1) + p2) + p3``, then ``/ 4``).
* :func:`longest_zero_run` counts the longest run of exact zeros (an integer: no rounding).

No fused multiply-add (numba's default). Module-level functions, so numba's on-disk cache
serves every process after the first.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def running_median(x: Any, size: int, out: Any) -> bool:  # pragma: no cover - compiled
    n = x.shape[0]
    if n == 0:
        return True
    for i in range(n):
        if x[i] != x[i]:  # NaN: no order, scipy decides
            return False
    r = size // 2
    win = np.empty(size, np.float64)
    for j in range(size):
        k = min(max(j - r, 0), n - 1)
        win[j] = x[k]
    # insertion sort of the first window
    for j in range(1, size):
        v = win[j]
        i = j - 1
        while i >= 0 and win[i] > v:
            win[i + 1] = win[i]
            i -= 1
        win[i + 1] = v
    out[0] = win[r]
    for t in range(1, n):
        old = x[min(max(t - 1 - r, 0), n - 1)]
        new = x[min(max(t + r, 0), n - 1)]
        if old != new:
            # the outgoing value's slot (any of equal values: they are the same number)
            lo, hi = 0, size - 1
            while lo < hi:
                mid = (lo + hi) // 2
                if win[mid] < old:
                    lo = mid + 1
                else:
                    hi = mid
            p = lo
            if new > old:  # shift the values between up to ``new`` one slot down
                while p + 1 < size and win[p + 1] < new:
                    win[p] = win[p + 1]
                    p += 1
            else:
                while p > 0 and win[p - 1] > new:
                    win[p] = win[p - 1]
                    p -= 1
            win[p] = new
        out[t] = win[r]
    return True


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def quiet_run(
    db: Any, origin: int, n: int, step: int, level: float, m: int
) -> int:  # pragma: no cover
    # values[i] = db[origin + step * i], i < n: the first frame of the first run of at least
    # m values at or under level, or of such a run reaching the end; -1 when there is none
    run = 0
    for i in range(n):
        if db[origin + step * i] <= level:
            run += 1
            if run >= m:
                return i - run + 1
        else:
            run = 0
    return n - run if run else -1


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def window_sums(p: Any, width: int, w: Any) -> int:  # pragma: no cover - compiled
    # w[k] = (((p[k] + p[k+1]) + p[k+2]) + ...) / width; returns how many are > 0
    ok = 0
    for k in range(w.shape[0]):
        s = p[k]
        for j in range(1, width):
            s = s + p[k + j]
        s = s / width
        w[k] = s
        if s > 0:
            ok += 1
    return ok


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def longest_zero_run(x: Any) -> int:  # pragma: no cover - compiled
    # the longest run of samples equal to zero (-0.0 included, as numpy's x == 0)
    best = run = 0
    for i in range(x.shape[0]):
        if x[i] == 0:
            run += 1
            if run > best:
                best = run
        else:
            run = 0
    return best
