"""Per-sample loops of the mixdown compiled with numba (imported by
:func:`duetflow.audio.kernels.sample_kernels` only where numba is installed and not turned
off), each the numpy path's bits by construction:

* :func:`written16`: :func:`duetflow.rendering.mixdown.as_written` of a float32 signal — the
  gain (one float32 product), the clip to ``[-1, 1 - 2^-15]`` (a NaN passes, as ``np.clip``),
  times ``2^15``, rounded half to even (``np.rint``), times ``2^-15``: one pass, float32 all
  the way, where numpy makes four;
* :func:`top_up`: the assembly's bed under the clips, ``sqrt(max(floor - have, 0)) * tone``
  added to the mix in one pass (numpy: five);
* :func:`pcm16_of_written`: the int16 of :func:`written16`'s output (times ``2^15``, exact
  integers), one branch-free pass where numpy makes a float copy first; False (the caller's
  numpy path then) at a value that is not a 16-bit level (NaN), whose cast numpy leaves to the
  platform;
* :func:`block_peaks`: each block's largest magnitude (``np.abs`` then ``max`` per block; a
  NaN wins, as there), one pass, no array of magnitudes, the magnitudes compared as their bit
  patterns (an integer maximum, which vectorises);
* :func:`rough_peaks`: the largest magnitude, in chosen blocks, of a signal less its smoothing
  (:func:`duetflow.audio.bs1770._rough_peaks`, the true-peak bound's second part), the same
  float32 steps as there, compared as bit patterns;
* :func:`fade_background`: a clip's background power taken off its fades
  (:func:`duetflow.rendering.assembly._place_background`), the samples where its envelope is
  under 1 found and corrected in one walk, no index arrays;
* :func:`pcm16_channels`: the channels of a 16-bit file's frames (read as int16) scaled by
  ``2^-15`` straight into one contiguous float32 array each
  (:func:`duetflow.audio.io.read_channels`), where numpy scales the block, then copies;
* :func:`k_hop_energies`: BS.1770's K-weighted hop energies
  (:func:`duetflow.audio.bs1770.k_weighted_energy`): the guarded filter input made on the
  fly, the two-section cascade in ``sosfilt``'s operation order, sixteen chains side by side,
  vectorised, only the hops' energies stored.

Warmed up (compiled, or loaded from numba's cache) by :func:`warm`.

No fused multiply-add (numba's default). Module-level functions, so numba's on-disk cache
serves every process after the first.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def written16(x: Any, gain: Any, scaled: bool, out: Any) -> None:  # pragma: no cover - compiled
    lo = np.float32(-1.0)
    hi = np.float32(1.0 - 1.0 / 32768.0)
    up = np.float32(32768.0)
    down = np.float32(1.0 / 32768.0)
    for i in range(x.shape[0]):
        v = x[i]
        if scaled:
            v = v * gain
        if v < lo:
            v = lo
        elif v > hi:
            v = hi
        out[i] = np.rint(v * up) * down


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def top_up(out: Any, have: Any, tone: Any, fp: Any) -> None:  # pragma: no cover - compiled
    # duetflow.rendering.assembly.assemble's bed: out += sqrt(max(fp - have, 0)) * tone, each
    # step one float32 operation as numpy's in-place calls make it (a NaN passes the maximum)
    for i in range(out.shape[0]):
        h = fp - have[i]
        if h < 0:
            h = np.float32(0.0)
        out[i] += np.sqrt(h) * tone[i]


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def pcm16_of_written(x: Any, out: Any) -> bool:  # pragma: no cover - compiled
    # duetflow.rendering.render.written_pcm16: (x * 2^15).astype(int16) of 16-bit levels.
    # Branch-free, so the compiler vectorises it (~4x): every sample is cast, clamped first so
    # that the cast is defined, and the range check is folded into one flag; False at any
    # value that is not a 16-bit level (NaN fails both comparisons): the caller then discards
    # ``out`` and takes numpy's path
    up = np.float32(32768.0)
    lo = np.float32(-32768.0)
    hi = np.float32(32767.0)
    ok = True
    for i in range(x.shape[0]):
        v = x[i] * up
        ok &= (v >= lo) & (v <= hi)
        out[i] = np.int16(min(max(v, lo), hi))
    return ok


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def block_peaks(x: Any, block: int, out: Any) -> None:  # pragma: no cover - compiled
    # duetflow.audio.bs1770._block_peaks: the largest magnitude of each block (the last may be
    # short), compared as bit patterns: a float32 with its sign bit cleared orders as its int32
    # bits do, and every NaN's bits lie above +inf's, so a block holding a NaN peaks at a NaN
    # (np.max propagates it; which NaN is not a value). An integer maximum vectorises; a float
    # one under NaN rules does not (~2.6x on a 45 s mix)
    bits = x.view(np.int32)
    top = out.view(np.int32)
    mag = np.int32(0x7FFFFFFF)
    n = bits.shape[0]
    for k in range(top.shape[0]):
        a = k * block
        b = min(n, a + block)
        m = np.int32(0)
        for i in range(a, b):
            m = max(m, bits[i] & mag)
        top[k] = m


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def rough_peaks(x: Any, block: int, which: Any, out: Any) -> None:  # pragma: no cover - compiled
    # duetflow.audio.bs1770._rough_peaks for the blocks ``which``: each one's largest
    # |0.5 x[i] - 0.25 (x[i-1] + x[i+1])| (zeros outside x), float32 steps, the magnitudes
    # compared as bit patterns (an integer maximum vectorises); the two samples of r beyond x
    # (0.25 |x[0]|, 0.25 |x[-1]|) counted in the first and last blocks
    n = x.shape[0]
    h = np.float32(0.5)
    q = np.float32(0.25)
    zero = np.float32(0.0)
    buf = np.empty(block, np.float32)
    bits = buf.view(np.int32)
    top = out.view(np.int32)
    mag = np.int32(0x7FFFFFFF)
    for k in which:
        a = k * block
        b = min(n, a + block)
        for i in range(max(a, 1), min(b, n - 1)):  # the inside, vectorised
            buf[i - a] = h * x[i] - q * (x[i - 1] + x[i + 1])
        if a == 0:  # x[-1] = 0; r[-1] = -0.25 x[0] counted here
            right = x[1] if n > 1 else zero
            buf[0] = max(abs(h * x[0] - q * right), q * abs(x[0]))
        if b == n and n > 1:  # x[n] = 0; r[n] = -0.25 x[n - 1] counted here
            buf[n - 1 - a] = max(abs(h * x[n - 1] - q * x[n - 2]), q * abs(x[n - 1]))
        m = np.int32(0)
        for j in range(b - a):
            m = max(m, bits[j] & mag)
        top[k] = m


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def fade_background(
    have: Any, env: Any, at: int, a: int, b: int, fp: Any, span: int
) -> None:  # pragma: no cover - compiled
    # duetflow.rendering.assembly._place_background after its ``have[a:b] += fp``: at each j of
    # the first and of the last ``span`` samples of env (the two windows in that order, a j in
    # both twice, as there) where env[j] < 1 and at + j lies in [a, b):
    # have[at + j] -= fp * (1 - env[j]^2), float32 steps
    n = env.shape[0]
    m = min(n, span)
    one = np.float32(1.0)
    for w in range(2 if n > m else 1):
        lo = 0 if w == 0 else n - m
        for j in range(max(lo, a - at), min(lo + m, b - at)):
            e = env[j]
            if e < one:
                have[at + j] -= fp * (one - e * e)


def warm() -> None:
    """Run every kernel above once on small inputs (compile, or load from numba's cache)."""
    x = np.arange(5, dtype=np.float32)
    written16(x, np.float32(0.5), True, np.empty(5, np.float32))
    for dtype in (np.float32, np.float64):
        one, none = np.ones(2, dtype), np.zeros(1, np.int64)
        k_hop_energies(np.ones((2, 6)), x.astype(dtype), one, none, none, 0, 1, np.empty(0))
    top_up(x.copy(), x, x, np.float32(1.0))
    pcm16_of_written(x / np.float32(32768.0), np.empty(5, np.int16))
    block_peaks(x, 2, np.empty(3, np.float32))
    rough_peaks(x, 2, np.arange(3), np.empty(3, np.float32))
    fade_background(x.copy(), x / np.float32(5.0), 1, 1, 5, np.float32(1.0), 2)
    pcm16_channels(np.zeros((3, 2), np.int16), np.array([1, 0]), np.empty((2, 3), np.float32))


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def pcm16_channels(data: Any, channels: Any, out: Any) -> None:  # pragma: no cover - compiled
    # duetflow.audio.io._channels_of of a 16-bit file: out[j] = float32(data[:, channels[j]])
    # * 2^-15 (exact: numpy's int16 * float32(2^-15)), each channel written straight into its
    # own row (numpy: the whole block scaled, then each channel copied out). A two-channel
    # file's channels 0 and 1 (their first rows) in one pass over the frames, which the
    # compiler vectorises (a channel index known only at run time it does not); any other
    # row one pass each
    n = data.shape[0]
    k = channels.shape[0]
    scale = np.float32(2.0**-15)
    j0 = -1
    j1 = -1
    if data.shape[1] == 2:
        for j in range(k):
            if channels[j] == 0 and j0 < 0:
                j0 = j
            elif channels[j] == 1 and j1 < 0:
                j1 = j
        if j0 >= 0 and j1 >= 0:
            a = out[j0]
            b = out[j1]
            for i in range(n):
                a[i] = np.float32(data[i, 0]) * scale
                b[i] = np.float32(data[i, 1]) * scale
        else:
            j0 = j1 = -1
    for j in range(k):
        if j in (j0, j1):
            continue
        c = channels[j]
        row = out[j]
        for i in range(n):
            row[i] = np.float32(data[i, c]) * scale


@numba.njit(inline="always")  # type: ignore[misc]
def _k_step(c: Any, xc: float, s: Any, j: int) -> Any:  # pragma: no cover - compiled
    # one step of the K-weighting's two sections (c: b00, b01, b02, a01, a02, b10, b11, b12,
    # a11, a12) on lane j's state s[:, j], in sosfilt's operation order; returns the output
    xm = c[0] * xc + s[0, j]
    s[0, j] = c[1] * xc - c[3] * xm + s[1, j]
    s[1, j] = c[2] * xc - c[4] * xm
    yo = c[5] * xm + s[2, j]
    s[2, j] = c[6] * xm - c[8] * yo + s[3, j]
    s[3, j] = c[7] * xm - c[9] * yo
    return yo


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def k_hop_energies(
    sos: Any, x: Any, guard: Any, bounds: Any, first: Any, per: int, warm: int, hops: Any
) -> float:  # pragma: no cover - compiled
    # BS.1770's K-weighted hop energies of x in chains (duetflow.audio.bs1770._chain_energies,
    # whose numpy path does the same operations): the filter input at sample i is
    # x[i] + guard[i & 1] in x's dtype, widened to float64; the two-section cascade in
    # sosfilt's operation order (_k_step); a hop's energy the float64 sum of its outputs'
    # squares in sample order. Chain j starts from a zero state ``warm`` samples before hop
    # first[j] (chain 0 at sample 0: its warm-up reads zeros, which keep the zero state), then
    # runs ``per`` hops, the chains side by side, vectorised; the last chain then runs on alone
    # through the remaining hops and the tail after the last complete hop, whose energy is
    # returned.
    nc = first.shape[0]
    nh = bounds.shape[0] - 1
    c = (
        sos[0, 0], sos[0, 1], sos[0, 2], sos[0, 4], sos[0, 5],
        sos[1, 0], sos[1, 1], sos[1, 2], sos[1, 4], sos[1, 5],
    )  # fmt: skip
    s = np.zeros((4, nc))
    if nc > 1 and per > 0:
        xr = np.zeros(nc)
        e = np.zeros(nc)
        at = np.empty(nc, np.int64)
        for j in range(nc):
            at[j] = bounds[first[j]] - warm
        for t in range(warm):
            for j in range(nc):
                i = at[j] + t
                xr[j] = np.float64(x[i] + guard[i & 1]) if i >= 0 else 0.0
            for j in range(nc):
                _k_step(c, xr[j], s, j)
        for h in range(per):
            size = bounds[h + 1] - bounds[h]  # the same in every chain: they start on periods
            for j in range(nc):
                at[j] = bounds[first[j] + h]
                e[j] = 0.0
            for t in range(size):
                for j in range(nc):
                    i = at[j] + t
                    xr[j] = np.float64(x[np.uint64(i)] + guard[i & 1])
                for j in range(nc):
                    yo = _k_step(c, xr[j], s, j)
                    e[j] += yo * yo
            for j in range(nc):
                hops[first[j] + h] = e[j]
        done = first[nc - 1] + per
    else:
        done = 0
    # the last chain alone: its remaining hops, then the tail
    last = nc - 1
    tail = 0.0
    for h in range(done, nh + 1):
        b = bounds[h + 1] if h < nh else x.shape[0]
        acc = 0.0
        for i in range(bounds[h], b):
            yo = _k_step(c, np.float64(x[i] + guard[i & 1]), s, last)
            acc += yo * yo
        if h < nh:
            hops[h] = acc
        else:
            tail = acc
    return tail
