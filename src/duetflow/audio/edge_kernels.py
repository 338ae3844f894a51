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
* :func:`longest_zero_run` counts the longest run of exact zeros (an integer: no rounding);
* :func:`floor_stats` is :func:`duetflow.audio.edges._floor_in` up to its powers: the frames
  used, the quantiles (:func:`kth`: the value of a rank is one number whatever the selection),
  the flicker against the running median at the frames used only (the sorted window slid
  along runs of frames, built anew at a gap), and the dB values whose powers numpy then takes
  (``np.power`` is dispatched per CPU, so it stays numpy's) and sums (``np.add.reduce``);
* :func:`quietest` and :func:`window_min`: the quietest run of frames of a pause (cumsum's
  sequential adds, argmin's first minimum / min's value, a NaN as numpy);
* :func:`core_frames`: a turn's peak (98th percentile of its audible frames), core level and
  first and last core frame (:func:`duetflow.audio.edges.speech_extent`); :func:`median`:
  ``edges._median``'s two order statistics and their mean.
* :func:`hop_powers`: the analysis's one pass (:func:`duetflow.audio.edges._hop_powers`): the
  100 Hz high-pass with a float64 state in the chains of ``edges._chain_plan`` and the mean
  power of each hop block of its output and of its input, float64 sums in sample order. Each
  chain is the very operation sequence of scipy's float64 ``lfilter`` (direct form II
  transposed) from a zero state, whether it runs alone (:func:`_chain_run`, with
  ``kernels.lfilter``'s skip of a fixed point on digital silence), interleaved with three
  others (:func:`_chains4`) or in :data:`LANES` vectorised lanes (:func:`_lanes_run`, while
  no state is subnormal): the same bits as the fallback's scipy ``lfilter`` per chain and its
  column-by-column sums.

No fused multiply-add (numba's default). Module-level functions, so numba's on-disk cache
serves every process after the first.
"""

from __future__ import annotations

import math
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


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def kth(a: Any, n: int, k: int) -> Any:  # pragma: no cover - compiled
    # the value of rank k of a[:n] (no NaN), a[:n] reordered in place and left partitioned
    # at k (none before it larger, none after it smaller): quickselect (Hoare's partition
    # around a median of three); the k-th smallest value is one number whatever the
    # algorithm, so this is numpy's ``np.partition(a[:n], k)[k]``
    lo, hi = 0, n - 1
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < a[lo]:
            a[mid], a[lo] = a[lo], a[mid]
        if a[hi] < a[lo]:
            a[hi], a[lo] = a[lo], a[hi]
        if a[hi] < a[mid]:
            a[hi], a[mid] = a[mid], a[hi]
        pivot = a[mid]
        i, j = lo, hi
        while i <= j:
            while a[i] < pivot:
                i += 1
            while pivot < a[j]:
                j -= 1
            if i <= j:
                a[i], a[j] = a[j], a[i]
                i += 1
                j -= 1
        # a[lo..j] <= pivot <= a[i..hi], and a[j+1..i-1] == pivot
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            return a[k]
    return a[k]


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def _rank(n: int, q: float) -> int:  # pragma: no cover - compiled
    # duetflow.audio.edges.quantiles' rank: the nearest lower one, the same float expression
    k = int(q / 100.0 * (n - 1))
    return min(n - 1, max(0, k))


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def _sorted_window(x: Any, at: int, size: int, win: Any) -> bool:  # pragma: no cover
    # win: the values x[clip(at - size // 2 + j)], j < size, sorted ("nearest" edges); False
    # on a NaN
    n = x.shape[0]
    r = size // 2
    for j in range(size):
        v = x[min(max(at - r + j, 0), n - 1)]
        if v != v:
            return False
        i = j - 1
        while i >= 0 and win[i] > v:
            win[i + 1] = win[i]
            i -= 1
        win[i + 1] = v
    return True


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def _slide(x: Any, at: int, size: int, win: Any) -> bool:  # pragma: no cover - compiled
    # win sorted for position at - 1 becomes win for position at (as running_median moves):
    # the outgoing value's slot and the incoming one's found by counting (no branches to
    # mispredict), the values between moved by one
    n = x.shape[0]
    r = size // 2
    old = x[min(max(at - 1 - r, 0), n - 1)]
    new = x[min(max(at + r, 0), n - 1)]
    if new != new:
        return False
    if old == new:
        return True
    p = 0  # the first slot holding ``old``
    q = 0  # slots below ``new``
    for j in range(size):
        w = win[j]
        p += w < old
        q += w < new
    if new > old:  # ``old`` is among the q: new goes to q - 1, those between move down
        for j in range(p, q - 1):
            win[j] = win[j + 1]
        win[q - 1] = new
    else:  # new goes to q, those between move up
        for j in range(p, q, -1):
            win[j] = win[j - 1]
        win[q] = new
    return True


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def floor_stats(
    lv: Any,
    hv: Any,
    i0: int,
    i1: int,
    m: Any,
    has_m: bool,
    size: int,
    digital_db: float,
    share: float,
    min_frames: int,
    res: Any,
) -> Any:  # pragma: no cover - compiled
    # duetflow.audio.edges._floor_in of frames [i0, i1) (those of m, when has_m), up to the
    # powers: returns (status, values). status 0: too few frames; 1: digital silence; 2: the
    # dB values whose powers make the two trimmed levels, in frame order (the level
    # envelope's res[0] of them, then the edge envelope's res[1]), res[2] the flicker (the
    # 99th percentile of the edge frames less their running median over ``size`` frames),
    # res[3] the edge frames' median; -1: a NaN, numpy decides
    none = np.empty(0, np.float64)
    count = 0
    silent = 0
    for i in range(i0, i1):
        if has_m and not m[i - i0]:
            continue
        count += 1
        if lv[i] < digital_db:
            silent += 1
    if count < min_frames:
        return 0, none
    if silent >= share * count:
        return 1, none
    lu = np.empty(count, np.float64)
    hu = np.empty(count, np.float64)
    dev = np.empty(count, np.float64)
    win = np.empty(size, np.float64)
    r = size // 2
    nu = 0
    at = -2
    for i in range(i0, i1):
        if has_m and not m[i - i0]:
            continue
        a = lv[i]
        if a < digital_db:
            continue
        h = hv[i]
        if a != a or h != h:
            return -1, none
        ok = _slide(hv, i, size, win) if i == at + 1 else _sorted_window(hv, i, size, win)
        if not ok:
            return -1, none
        at = i
        lu[nu] = a
        hu[nu] = h
        dev[nu] = h - win[r]
        nu += 1
    k50, k75, k99 = _rank(nu, 50.0), _rank(nu, 75.0), _rank(nu, 99.0)
    out = np.empty(2 * nu, np.float64)
    scratch = lu.copy()
    q50 = kth(scratch, nu, k50)
    q75 = kth(scratch[k50:], nu - k50, k75 - k50)  # partitioned at k50: the rest above it
    top = q50 + 4.5 * max(q75 - q50, 0.05)
    nl = 0
    for j in range(nu):
        if lu[j] <= top:
            out[nl] = lu[j]
            nl += 1
    scratch[:] = hu
    h50 = kth(scratch, nu, k50)
    h75 = kth(scratch[k50:], nu - k50, k75 - k50)
    top = h50 + 4.5 * max(h75 - h50, 0.05)
    nh = 0
    for j in range(nu):
        if hu[j] <= top:
            out[nl + nh] = hu[j]
            nh += 1
    res[0] = nl
    res[1] = nh
    res[2] = kth(dev, nu, k99)
    res[3] = h50
    return 2, out[: nl + nh]


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def quietest(pw: Any, width: int) -> int:  # pragma: no cover - compiled
    # np.argmin(c[width:] - c[:-width]) of c = [0, cumsum(pw)]: the first of the quietest
    # ``width`` frames in a row (cumsum's sequential adds; argmin's first minimum, or first NaN)
    n = pw.shape[0]
    c = np.empty(n + 1, np.float64)
    c[0] = 0.0
    if n:
        c[1] = pw[0]
    for i in range(1, n):
        c[i + 1] = c[i] + pw[i]
    best = 0
    low = c[width] - c[0]
    if low != low:
        return 0
    for j in range(1, n + 1 - width):
        d = c[j + width] - c[j]
        if d != d:
            return j
        if d < low:
            low = d
            best = j
    return best


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def core_frames(
    inner: Any, base: float, below: float, silent: float, out: Any
) -> int:  # pragma: no cover - compiled
    # duetflow.audio.edges.speech_extent's core frames of a turn's hint: the 98th percentile
    # (edges.quantiles' rank) of the frames above ``silent`` is the peak; the core level is
    # ``base`` or the peak less ``below``, the larger (Python's max: the first unless the
    # second is greater); out = [peak, core level, first core frame, last core frame].
    # Returns 0: no audible frame; 2: none at the core level; 1: found
    n = inner.shape[0]
    buf = np.empty(n, np.float64)
    m = 0
    for i in range(n):
        if inner[i] > silent:
            buf[m] = inner[i]
            m += 1
    if m == 0:
        return 0
    peak = kth(buf, m, _rank(m, 98.0))
    hi = base
    if peak - below > hi:
        hi = peak - below
    first = -1
    last = -1
    for i in range(n):
        if inner[i] >= hi:
            if first < 0:
                first = i
            last = i
    out[0] = peak
    out[1] = hi
    out[2] = first
    out[3] = last
    return 1 if first >= 0 else 2


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def median(v: Any, out: Any) -> bool:  # pragma: no cover - compiled
    # duetflow.audio.edges._median (numpy.median) of a non-empty v: the middle value or the
    # mean of the two middle ones, (a + b) / 2; False on a NaN (numpy decides)
    n = v.shape[0]
    a = np.empty(n, np.float64)
    for i in range(n):
        if v[i] != v[i]:
            return False
        a[i] = v[i]
    lo, hi = (n - 1) // 2, n // 2
    x = kth(a, n, lo)
    y = kth(a, n, hi)
    out[0] = (x + y) / 2
    return True


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def window_min(p: Any, width: int) -> Any:  # pragma: no cover - compiled
    # np.min(c[width:] - c[:-width]) of c = [0, cumsum(p)] (len(p) >= width): cumsum's
    # sequential adds; a NaN difference makes the minimum NaN, as np.min
    n = p.shape[0]
    c = np.empty(n + 1, np.float64)
    c[0] = 0.0
    c[1] = p[0]
    for i in range(1, n):
        c[i + 1] = c[i] + p[i]
    low = c[width] - c[0]
    if low != low:
        return low
    for j in range(1, n + 1 - width):
        d = c[j + width] - c[j]
        if d != d:
            return d
        if d < low:
            low = d
    return low


# --- the high-pass and both envelopes' hop powers in one pass (edges._hop_powers) -----------


@numba.njit(cache=True, nogil=True, inline="always")  # type: ignore[misc]
def _step(c: Any, z0: Any, z1: Any, xn: Any) -> Any:  # pragma: no cover - compiled
    # scipy's second-order direct form II transposed step (kernels.lfilter), float32
    yn = z0 + c[0] * xn
    n0 = z1 + xn * c[1] - yn * c[3]
    n1 = xn * c[2] - yn * c[4]
    return yn, n0, n1


@numba.njit(cache=True, nogil=True, inline="always")  # type: ignore[misc]
def _same_state(n0: Any, n1: Any, z0: Any, z1: Any) -> bool:  # pragma: no cover - compiled
    return (
        n0 == z0
        and n1 == z1
        and math.copysign(1.0, n0) == math.copysign(1.0, z0)
        and math.copysign(1.0, n1) == math.copysign(1.0, z1)
    )


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def _chain_run(c: Any, x: Any, pos: int, size: int, st: Any, j: int) -> Any:  # pragma: no cover
    # ``size`` steps of chain ``j`` (state st[j]) from x[pos]; returns the sums of squares of
    # the outputs and of the inputs (float64, in sample order) and whether the last step left
    # the state as it was. A step that leaves the state unchanged is a fixed point under its
    # input (digital silence holds the float32 state on a subnormal, each step ~20x slower):
    # while the input repeats bit for bit the outputs are the same (kernels.df2t's skip)
    z0, z1 = st[j, 0], st[j, 1]
    se = 0.0
    sl = 0.0
    fixed = False
    k = pos
    end = pos + size
    while k < end:
        xn = x[k]
        yn, n0, n1 = _step(c, z0, z1, xn)
        yd = np.float64(yn)
        xd = np.float64(xn)
        se += yd * yd
        sl += xd * xd
        k += 1
        fixed = _same_state(n0, n1, z0, z1)
        if fixed:
            while k < end and x[k] == xn and math.copysign(1.0, x[k]) == math.copysign(1.0, xn):
                se += yd * yd
                sl += xd * xd
                k += 1
        z0, z1 = n0, n1
    st[j, 0], st[j, 1] = z0, z1
    return se, sl, fixed


_DBL_MIN = 2.2250738585072014e-308  # the smallest normal float64


@numba.njit(cache=True, nogil=True, inline="always")  # type: ignore[misc]
def _subnormal(v: Any) -> bool:  # pragma: no cover - compiled
    return bool(v != 0.0 and abs(v) < _DBL_MIN)


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def _chains4(c: Any, x: Any, pos: Any, off: int, size: int, st: Any, sums: Any) -> bool:
    # pragma: no cover - compiled
    # ``size`` steps of four chains side by side, chain j from x[pos[j] + off]: each the
    # operation sequence of _chain_run on its own state (the chains never mix; their
    # recursions' latencies overlap), without the skip. sums[j] and sums[4 + j]: chain j's sums
    # of squares; returns whether a chain's state is subnormal (its steps ~20x slower: the
    # caller then runs the chains one by one, where the skip applies)
    p0, p1, p2, p3 = pos[0] + off, pos[1] + off, pos[2] + off, pos[3] + off
    u0, v0 = st[0, 0], st[0, 1]
    u1, v1 = st[1, 0], st[1, 1]
    u2, v2 = st[2, 0], st[2, 1]
    u3, v3 = st[3, 0], st[3, 1]
    e0 = e1 = e2 = e3 = 0.0
    l0 = l1 = l2 = l3 = 0.0
    for i in range(size):
        x0, x1, x2, x3 = x[p0 + i], x[p1 + i], x[p2 + i], x[p3 + i]
        y0, u0, v0 = _step(c, u0, v0, x0)
        y1, u1, v1 = _step(c, u1, v1, x1)
        y2, u2, v2 = _step(c, u2, v2, x2)
        y3, u3, v3 = _step(c, u3, v3, x3)
        e0 += y0 * y0
        e1 += y1 * y1
        e2 += y2 * y2
        e3 += y3 * y3
        l0 += np.float64(x0) * np.float64(x0)
        l1 += np.float64(x1) * np.float64(x1)
        l2 += np.float64(x2) * np.float64(x2)
        l3 += np.float64(x3) * np.float64(x3)
    sums[0], sums[1], sums[2], sums[3] = e0, e1, e2, e3
    sums[4], sums[5], sums[6], sums[7] = l0, l1, l2, l3
    st[0, 0], st[0, 1] = u0, v0
    st[1, 0], st[1, 1] = u1, v1
    st[2, 0], st[2, 1] = u2, v2
    st[3, 0], st[3, 1] = u3, v3
    slow = False
    for j in range(4):
        if _subnormal(st[j, 0]) or _subnormal(st[j, 1]):
            slow = True
    return slow


#: Chains :func:`_lanes_run` runs side by side: a compile-time constant, so that LLVM vectorises
#: the loops over them (measured on a 35 s stretch: 32 lanes 2.1x the four scalar chains of
#: :func:`_chains4`, 16 lanes 1.65x, 64 lanes 1.7x, 8 stay scalar)
LANES = 32


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def _lanes_run(
    c: Any, x: Any, pos: Any, off: int, size: int, p: Any, q: Any, sums: Any, xr: Any
) -> bool:  # pragma: no cover - compiled
    # ``size`` steps of LANES chains side by side, lane j from x[pos[j] + off], its state in
    # p[j], q[j]: _chain_run's operations lane by lane (vectorised across the lanes, no skip).
    # sums[j] and sums[LANES + j]: lane j's sums of squares; returns whether a lane's state is
    # subnormal (then the caller runs the lanes one by one, where the skip applies)
    b0, b1, b2, a1, a2 = c[0], c[1], c[2], c[3], c[4]
    e = sums[:LANES]
    lv = sums[LANES:]
    for j in range(LANES):
        e[j] = 0.0
        lv[j] = 0.0
    for t in range(off, off + size):
        for j in range(LANES):  # the lanes' inputs at this step (an unsigned index: no
            xr[j] = x[np.uint64(pos[j] + t)]  # negative-index wraparound per load)
        for j in range(LANES):
            xn = xr[j]
            yn = p[j] + b0 * xn
            n0 = q[j] + xn * b1 - yn * a1
            n1 = xn * b2 - yn * a2
            p[j] = n0
            q[j] = n1
            e[j] += yn * yn
            lv[j] += xn * xn
    slow = False
    for j in range(LANES):
        if _subnormal(p[j]) or _subnormal(q[j]):
            slow = True
    return slow


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def hop_powers(
    c: Any,
    x: Any,
    warm: int,
    hop: int,
    pos: Any,
    pre: Any,
    blocks: Any,
    first: Any,
    st: Any,
    pe: Any,
    pl: Any,
) -> None:  # pragma: no cover - compiled
    # The high-pass (second order, c = b0, b1, b2, a1, a2 normalised, float64) of chains of x,
    # each from a zero state, and the mean power of each hop block of its output (pe) and of
    # its input (pl), each a float64 sum of the samples' squares in sample order, divided by
    # ``hop``. Chain j runs from x[pos[j]]: ``warm`` samples, then ``pre[j] + blocks[j]`` hop
    # blocks, the last ``blocks[j]`` of which are written to pe/pl[first[j]:]. LANES chains run
    # side by side vectorised (_lanes_run), four interleaved (_chains4), while no state is
    # subnormal; any other count, the blocks after a subnormal state (digital silence after
    # ~1.6 s of decay) and the chains' unequal tails one by one (_chain_run, with the skip
    # that a subnormal fixed point needs): the same operations per chain either way.
    nc = pos.shape[0]
    st[:] = 0
    sums = np.zeros(2 * nc, np.float64)
    slow = False  # a chain's state subnormal: the chains one by one (with the skip)
    lanes = nc == LANES
    side = nc == 4
    p = np.zeros(nc, np.float64)
    q = np.zeros(nc, np.float64)
    xr = np.zeros(nc, np.float64)
    if warm > 0:
        if lanes:
            slow = _lanes_run(c, x, pos, 0, warm, p, q, sums, xr)
            st[:, 0] = p
            st[:, 1] = q
        elif side:
            slow = _chains4(c, x, pos, 0, warm, st, sums)
        else:
            for j in range(nc):
                _chain_run(c, x, pos[j], warm, st, j)
    total = pre + blocks
    common = total.min() if lanes or side else 0
    for blk in range(common):
        off = warm + blk * hop
        if slow:
            slow = False
            for j in range(nc):
                sums[j], sums[nc + j], _ = _chain_run(c, x, pos[j] + off, hop, st, j)
                slow = slow or _subnormal(st[j, 0]) or _subnormal(st[j, 1])
            if lanes:
                p[:] = st[:, 0]
                q[:] = st[:, 1]
        elif lanes:
            slow = _lanes_run(c, x, pos, off, hop, p, q, sums, xr)
            st[:, 0] = p
            st[:, 1] = q
        else:
            slow = _chains4(c, x, pos, off, hop, st, sums)
        for j in range(nc):
            if blk >= pre[j]:
                o = first[j] + blk - pre[j]
                pe[o] = sums[j] / hop
                pl[o] = sums[nc + j] / hop
    for j in range(nc):
        for blk in range(common, total[j]):
            se, sl, _ = _chain_run(c, x, pos[j] + warm + blk * hop, hop, st, j)
            if blk >= pre[j]:
                o = first[j] + blk - pre[j]
                pe[o] = se / hop
                pl[o] = sl / hop
