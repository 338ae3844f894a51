"""A turn's edge walk compiled with numba in one call (imported by
:func:`duetflow.audio.edges.walk_kernels` only where the edge kernels are, see
:func:`duetflow.audio.kernels.edge_kernels`).

:func:`extent_walk` is :func:`duetflow.audio.edges.speech_extent` from its frame spans to its
edges before the tails' extrapolation (:func:`duetflow.audio.edges._beyond`, a least-squares
fit, stays numpy's): the bounds' and the hint's frames (``Envelope.span``), the blocked frames
read as digital silence (in place, not copied), the core frames (:func:`peak_frames`:
:func:`duetflow.audio.edge_kernels.core_frames`, its 98th percentile selected among the
frames above a pivot), the quiet walks out of them
(:func:`duetflow.audio.edge_kernels.quiet_run`), the crossings (``edges._crossing``) and the
steep edges placed on the hop blocks (``edges._sharpen``). Each is the Python expression's
float operations in the same order (Python's two-argument ``min`` and ``max``: the first
unless the second is smaller / greater; ``math.floor`` / ``math.ceil`` to an integer;
``10 * log10`` of a block's power, the C library's ``log10`` either way). The levels that take
a power (``10 ** x``) come in computed by Python.

:func:`pause_tail` and :func:`quiet_floor` are :func:`duetflow.audio.edges.measure_gap`'s
pause measures (step, dip, zero run; the quietest stretch's floor) in one call each.

No fused multiply-add (numba's default). Module-level functions, so numba's on-disk cache
serves every process after the first.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

from duetflow.audio.edge_kernels import (
    _rank,
    floor_stats,
    kth,
    longest_zero_run,
    quietest,
    window_min,
)

_SILENT_DB = -200.0  # duetflow.audio.edges._SILENT_DB
_HALF = 2.0  # WINDOW_HOPS / 2
_WINDOW_HOPS = 4
_STEEP_DB = 10.0


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def _pmax(a: float, b: float) -> float:  # pragma: no cover - compiled
    # Python's max(a, b)
    return b if b > a else a


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def _pmin(a: float, b: float) -> float:  # pragma: no cover - compiled
    # Python's min(a, b)
    return b if b < a else a


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def _span(a: float, b: float, start: int, hop: int, n: int) -> Any:  # pragma: no cover
    # Envelope.span
    k0 = int(math.ceil((a - start) / hop - _HALF))
    k1 = int(math.ceil((b - start) / hop - _HALF))
    return max(0, k0), min(n, max(0, k1))


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def _db(power: float) -> float:  # pragma: no cover - compiled
    return 10.0 * math.log10(power) if power > 0 else _SILENT_DB


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def sharpen(
    p: Any, start: int, hop: int, edge: float, edge_db: float, guard: float, lo: float,
    ring: float, rising: bool,
) -> float:  # fmt: skip  # pragma: no cover - compiled
    # duetflow.audio.edges._sharpen on blocks p (start, hop: the level envelope's); guard and
    # lo: _power(edge_db + _BLOCK_GUARD_DB) and _power(edge_db)
    n = p.shape[0]
    pos = (edge - start) / hop
    if rising:
        j0, j1 = int(math.floor(pos)) - 1, int(math.floor(pos + _HALF)) + 1
    else:
        j0, j1 = int(math.floor(pos - _HALF - ring)) - 1, int(math.floor(pos)) + 1
    j0, j1 = max(j0, 1), min(j1, n - 2)
    if j1 < j0:
        return edge
    first = -1
    last = -1
    for j in range(j0, j1 + 1):
        if p[j] > guard:
            if first < 0:
                first = j
            last = j
    if first < 0:
        return edge
    if rising:
        j = first
        for _ in range(2):
            if j - 1 >= 1 and p[j - 1] > lo:
                j -= 1
        if p[j - 1] == 0:
            fill = _pmin(1.0, p[j] / p[j + 1]) if p[j + 1] > 0 else 1.0
            return _pmax(start + (j + 1.0 - fill) * hop, edge)
        a, b = _db(p[j - 1]), _db(p[j])
        frac = 0.5 if b == a else _pmin(1.0, _pmax(0.0, (edge_db - a) / (b - a)))
        return _pmax(start + (j - 0.5 + frac) * hop, edge)
    j = last
    for _ in range(2):
        if j + 2 < n and p[j + 1] > lo:
            j += 1
    if p[j + 1] == 0:
        fill = _pmin(1.0, p[j] / p[j - 1]) if p[j - 1] > 0 else 1.0
        return _pmin(start + (j + fill) * hop, edge)
    a, b = _db(p[j]), _db(p[j + 1])
    frac = 0.5 if b == a else _pmin(1.0, _pmax(0.0, (a - edge_db) / (a - b)))
    return _pmin(start + (j + 0.5 + frac) * hop, edge)


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def _at(db: Any, blocked: Any, has_blocked: bool, k: int) -> Any:  # pragma: no cover
    # frame k as speech_extent reads it: a blocked frame is digital silence
    if has_blocked and blocked[k]:
        return _SILENT_DB
    return db[k]


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def _quiet(
    db: Any, blocked: Any, has_blocked: bool, origin: int, n: int, step: int, level: float,
    m: int,
) -> int:  # fmt: skip  # pragma: no cover - compiled
    # duetflow.audio.edge_kernels.quiet_run on the frames as read (_at)
    run = 0
    for i in range(n):
        if _at(db, blocked, has_blocked, origin + step * i) <= level:
            run += 1
            if run >= m:
                return i - run + 1
        else:
            run = 0
    return n - run if run else -1


_SAMPLE = 32  # frames a pivot is drawn from
_SAMPLE_RANK = 24  # the pivot's rank among them (about the 75th percentile)


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def _gather(
    db: Any, blocked: Any, has_blocked: bool, a: int, b: int, pivot: float, high: Any
) -> Any:  # pragma: no cover - compiled
    # the count m of audible frames of [a, b) as read (_at; above _SILENT_DB, a NaN is not)
    # and of those at or above ``pivot``, stored in ``high`` in frame order
    m = 0
    nh = 0
    if has_blocked:
        for k in range(a, b):
            v = db[k]
            if v > _SILENT_DB and not blocked[k]:
                m += 1
                if v >= pivot:
                    high[nh] = v
                    nh += 1
    else:
        for k in range(a, b):
            v = db[k]
            if v > _SILENT_DB:
                m += 1
                if v >= pivot:
                    high[nh] = v
                    nh += 1
    return m, nh


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def peak_frames(
    db: Any, blocked: Any, has_blocked: bool, a: int, b: int, base: float, below: float,
    out: Any,
) -> int:  # fmt: skip  # pragma: no cover - compiled
    # duetflow.audio.edge_kernels.core_frames of frames [a, b) as read (_at): the peak (the
    # value of rank k = int(0.98 * (m - 1)) of the m audible frames, above _SILENT_DB: a NaN
    # is not), the core level, the first and last core frame (relative to a).
    # The peak is edge_kernels.kth of the audible values at or above a pivot (any value: one
    # drawn from a sample of the frames), at rank k less the count under it, or of all of them
    # where the pivot is above it (the value of a rank is one number whatever the selection)
    n = b - a
    pivot = -np.inf
    if n >= 4 * _SAMPLE:
        sample = np.empty(_SAMPLE, np.float64)
        ns = 0
        for j in range(_SAMPLE):
            v = _at(db, blocked, has_blocked, a + (j * n) // _SAMPLE)
            if not v > _SILENT_DB:
                continue
            i = ns - 1
            while i >= 0 and sample[i] > v:
                sample[i + 1] = sample[i]
                i -= 1
            sample[i + 1] = v
            ns += 1
        if ns > _SAMPLE_RANK:
            pivot = sample[_SAMPLE_RANK]
    high = np.empty(n, np.float64)
    m, nh = _gather(db, blocked, has_blocked, a, b, pivot, high)
    if m == 0:
        return 0
    rank = _rank(m, 98.0)
    under = m - nh
    if under > rank:  # the pivot is above the peak: every audible value
        m, nh = _gather(db, blocked, has_blocked, a, b, -np.inf, high)
        under = 0
    peak = kth(high, nh, rank - under)
    hi = base
    if peak - below > hi:
        hi = peak - below
    first = -1
    for k in range(a, b):
        if _at(db, blocked, has_blocked, k) >= hi:
            first = k - a
            break
    if first < 0:
        return 2
    last = first
    for k in range(b - 1, a + first - 1, -1):
        if _at(db, blocked, has_blocked, k) >= hi:
            last = k - a
            break
    out[0] = peak
    out[1] = hi
    out[2] = first
    out[3] = last
    return 1


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def extent_walk(
    env_db: Any, start: int, hop: int, blocked: Any, has_blocked: bool,
    b0: float, b1: float, t0: float, t1: float,
    base: float, below: float, lo_on: float, lo_off: float, m: int,
    p: Any, p_start: int, p_hop: int, ring: float,
    edge_on: float, guard_on: float, low_on: float,
    edge_off: float, guard_off: float, low_off: float,
    out: Any,
) -> int:  # fmt: skip  # pragma: no cover - compiled
    # speech_extent on envelope frames env_db (start, hop) within bounds (b0, b1) for the hint
    # widened by its tolerance (t0, t1); blocked frames (has_blocked) read as _SILENT_DB.
    # Returns 0: no extent (None), 1: out = [peak, core level, start, end, k0, r0, first,
    # last, r1] (start/end after _sharpen, before _beyond; r0 / r1 -1 where the walk found
    # no quiet run and the edge is the bound; frames relative to k0)
    n_env = env_db.shape[0]
    k0, k1 = _span(b0, b1, start, hop, n_env)
    if k1 - k0 < 2:
        return 0
    h0, h1 = _span(t0, t1, start, hop, n_env)
    h0, h1 = max(h0, k0) - k0, min(h1, k1) - k0
    if h1 <= h0:
        return 0
    res = np.empty(4)
    if peak_frames(env_db, blocked, has_blocked, k0 + h0, k0 + h1, base, below, res) != 1:
        return 0
    first, last = h0 + int(res[2]), h0 + int(res[3])
    size = k1 - k0
    # db[i] below is env_db[k0 + i] as read
    q = _quiet(env_db, blocked, has_blocked, k0 + first, first + 1, -1, lo_on, m)
    r0 = -1
    if q >= 0:
        r0 = first - q + 1
        # _crossing(env, db, k0, k0 + r0 - 1, k0 + r0, lo_on)
        a = _at(env_db, blocked, has_blocked, k0 + r0 - 1)
        b = _at(env_db, blocked, has_blocked, k0 + r0)
        frac = 0.5 if b == a else _pmin(1.0, _pmax(0.0, (lo_on - a) / (b - a)))
        below_k = k0 + r0 - 1
        e0 = start + ((below_k + frac * ((k0 + r0) - below_k)) + _HALF) * hop
        if (
            r0 + _WINDOW_HOPS < size
            and _at(env_db, blocked, has_blocked, k0 + r0 + _WINDOW_HOPS) >= lo_on + _STEEP_DB
        ):
            e0 = sharpen(p, p_start, p_hop, e0, edge_on, guard_on, low_on, ring, True)
    else:
        e0 = b0
    q = _quiet(env_db, blocked, has_blocked, k0 + last, size - last, 1, lo_off, m)
    r1 = -1
    if q >= 0:
        r1 = last + q
        # _crossing(env, db, k0, k0 + r1, k0 + r1 - 1, lo_off)
        a = _at(env_db, blocked, has_blocked, k0 + r1)
        b = _at(env_db, blocked, has_blocked, k0 + r1 - 1)
        frac = 0.5 if b == a else _pmin(1.0, _pmax(0.0, (lo_off - a) / (b - a)))
        below_k = k0 + r1
        e1 = start + ((below_k + frac * ((k0 + r1 - 1) - below_k)) + _HALF) * hop
        if (
            r1 - 1 - _WINDOW_HOPS >= 0
            and _at(env_db, blocked, has_blocked, k0 + r1 - 1 - _WINDOW_HOPS) >= lo_off + _STEEP_DB
        ):
            e1 = sharpen(p, p_start, p_hop, e1, edge_off, guard_off, low_off, ring, False)
    else:
        e1 = b1
    out[0] = res[0]
    out[1] = res[1]
    out[2] = e0
    out[3] = e1
    out[4] = k0
    out[5] = r0
    out[6] = first
    out[7] = last
    out[8] = r1
    return 1


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def _half_median(v: Any, a: int, b: int) -> Any:  # pragma: no cover - compiled
    # duetflow.audio.edge_kernels.median of v[a:b] (non-empty): the two middle order
    # statistics' mean; NaN where a NaN is among them (the caller leaves it to numpy)
    n = b - a
    buf = np.empty(n, np.float64)
    for i in range(n):
        if v[a + i] != v[a + i]:
            return np.nan
        buf[i] = v[a + i]
    x = kth(buf, n, (n - 1) // 2)
    y = kth(buf, n, n // 2)
    return (x + y) / 2


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def pause_tail(
    level_db: Any, blocks: Any, start: int, hop: int, edge_hop: int, offset: float,
    onset: float, levels: bool, min_frames: int, width: int, x: Any, z0: int, z1: int,
    out: Any,
) -> int:  # fmt: skip  # pragma: no cover - compiled
    # duetflow.audio.edges.measure_gap after its edges (``levels``: the floor is not
    # digital, the pause's levels are read; else only its zeros): the pause's level frames
    # (level.span(offset + 2 hops, onset - 2 hops)); where there are 2 * min_frames of them,
    # out[0] = the step (median of the second half less the first's), and where the blocks
    # between the edges (2 in from each) hold ``width``, out[1] = their least windowed sum /
    # width (edge_kernels.window_min); out[2] = the longest run of zeros of x[z0:z1]
    # (z0 >= 0). Returns a bit set: 1 step measured, 2 low measured; -1: a NaN in a median
    # (numpy decides)
    n = level_db.shape[0]
    q0, q1 = _span(offset + 2 * edge_hop, onset - 2 * edge_hop, start, hop, n)
    size = q1 - q0 if q1 > q0 else 0
    got = 0
    if levels and size >= 2 * min_frames:
        half = size // 2
        m2 = _half_median(level_db, q0 + half, q1)
        m1 = _half_median(level_db, q0, q0 + half)
        if m2 != m2 or m1 != m1:
            return -1
        out[0] = m2 - m1
        got |= 1
        j0 = int(math.ceil((offset - start) / hop)) + 2
        j1 = int((onset - start) / hop) - 2
        if j1 - j0 >= width:
            out[1] = window_min(blocks[j0:j1], width) / width
            got |= 2
    z1 = min(z1, x.shape[0])
    out[2] = longest_zero_run(x[z0:z1]) if z1 > z0 else 0
    return got


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def quiet_floor(
    pw: Any, width: int, k0: int, lv: Any, hv: Any, size: int, digital_db: float,
    share: float, min_frames: int, res: Any,
) -> Any:  # fmt: skip  # pragma: no cover - compiled
    # duetflow.audio.edges._quietest of frames [k0, k0 + len(pw)) (len(pw) > width; pw: their
    # powers): the quietest ``width`` frames in a row (edge_kernels.quietest) at k = res[4],
    # and edge_kernels.floor_stats of [k, k + width) clipped to the envelope (_floor_in)
    k = k0 + quietest(pw, width)
    res[4] = k
    n = hv.shape[0]
    i0 = max(0, k)
    i1 = min(n, k + width)
    return floor_stats(
        lv, hv, i0, i1, np.zeros(0, np.bool_), False, size, digital_db, share, min_frames, res
    )


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def crosstalk(
    mine: Any, theirs: Any, alone: Any, n: int, loud_db: float, margin_db: float,
    min_solo: int, blocked: Any,
) -> int:  # fmt: skip  # pragma: no cover - compiled
    # duetflow.acoustics.source_acoustics.mark_crosstalk for one track over frames [0, n):
    # loud = theirs >= loud_db; solo = alone & loud; fewer than min_solo: 0 (nothing set);
    # the leak the median of mine - theirs over solo (numpy.median: the two middle order
    # statistics' mean), blocked[k] = loud and mine <= theirs + leak + margin_db for k < n
    # (the rest left as they are); 1; -1: a NaN among the differences (numpy decides)
    diff = np.empty(n, np.float64)
    m = 0
    for k in range(n):
        if alone[k] and theirs[k] >= loud_db:
            d = mine[k] - theirs[k]
            if d != d:
                return -1
            diff[m] = d
            m += 1
    if m < min_solo:
        return 0
    x = kth(diff, m, (m - 1) // 2)
    y = kth(diff, m, m // 2)
    leak = (x + y) / 2
    for k in range(n):
        t = theirs[k]
        blocked[k] = t >= loud_db and mine[k] <= t + leak + margin_db
    return 1
