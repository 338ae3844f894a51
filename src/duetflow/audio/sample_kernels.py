"""Per-sample loops of the mixdown compiled with numba (imported by
:func:`duetflow.audio.kernels.sample_kernels` only where numba is installed and not turned
off), each the numpy path's bits by construction:

* :func:`written16`: :func:`duetflow.rendering.mixdown.as_written` of a float32 signal — the
  gain (one float32 product), the clip to ``[-1, 1 - 2^-15]`` (a NaN passes, as ``np.clip``),
  times ``2^15``, rounded half to even (``np.rint``), times ``2^-15``: one pass, float32 all
  the way, where numpy makes four;
* :func:`guarded`: BS.1770's filter input, a piece of the signal plus the guard tone
  (:data:`duetflow.audio.bs1770.DENORMAL_GUARD`, alternating sign) added in the signal's dtype
  and widened to float64 in one pass, where numpy makes the sum and then its float64 copy;
* :func:`top_up`: the assembly's bed under the clips, ``sqrt(max(floor - have, 0)) * tone``
  added to the mix in one pass (numpy: five);
* :func:`pcm16_of_written`: the int16 of :func:`written16`'s output (times ``2^15``, exact
  integers), one pass where numpy makes a float copy first; False (the caller's numpy path
  then) at a value that is not a 16-bit level (NaN), whose cast numpy leaves to the platform;
* :func:`block_peaks`: each block's largest magnitude (``np.abs`` then ``max`` per block; a
  NaN wins, as there), one pass, no array of magnitudes;
* :func:`fade_background`: a clip's background power taken off its fades
  (:func:`duetflow.rendering.assembly._place_background`), the samples where its envelope is
  under 1 found and corrected in one walk, no index arrays;
* :func:`pcm16_channels`: the channels of a 16-bit file's frames (read as int16) scaled by
  ``2^-15`` straight into one contiguous float32 array each
  (:func:`duetflow.audio.io.read_channels`), where numpy scales the block, then copies;
* :func:`guarded_k_pair`: :func:`guarded` and the K-weighting's two-section cascade of two
  signals side by side (``lane_kernels.sections_pair``'s operations) in one pass, where the
  float64 filter input is otherwise written out and filtered in place.

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
def guarded(x: Any, start: int, guard: Any, out: Any) -> None:  # pragma: no cover - compiled
    # out[k] = x[start + k] + guard[k % 2] in x's dtype, as float64: BS.1770's filter input
    # (duetflow.audio.bs1770._pieces: the piece plus the alternating guard tone) made and
    # widened in one pass
    for k in range(out.shape[0]):
        out[k] = x[start + k] + guard[k & 1]


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
    # duetflow.rendering.render.written_pcm16: (x * 2^15).astype(int16) of 16-bit levels
    up = np.float32(32768.0)
    lo = np.float32(-32768.0)
    hi = np.float32(32767.0)
    for i in range(x.shape[0]):
        v = x[i] * up
        if not (v >= lo and v <= hi):  # also NaN: numpy's cast of it is the platform's
            return False
        out[i] = np.int16(v)
    return True


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def block_peaks(x: Any, block: int, out: Any) -> None:  # pragma: no cover - compiled
    # duetflow.audio.bs1770._block_peaks: the largest magnitude of each block (the last may be
    # short); a NaN stays once met (np.max propagates it)
    n = x.shape[0]
    for k in range(out.shape[0]):
        a = k * block
        b = min(n, a + block)
        m = abs(x[a])
        for i in range(a + 1, b):
            v = abs(x[i])
            if v > m or v != v:
                m = v
        out[k] = m


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
        guarded(x.astype(dtype), 1, np.ones(2, dtype), np.empty(3))
    top_up(x.copy(), x, x, np.float32(1.0))
    pcm16_of_written(x / np.float32(32768.0), np.empty(5, np.int16))
    block_peaks(x, 2, np.empty(3, np.float32))
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


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def guarded_k_pair(
    sos: Any,
    x: Any,
    xo: int,
    y: Any,
    u: Any,
    uo: int,
    v: Any,
    at: int,
    size: int,
    guard: Any,
    zx: Any,
    zu: Any,
) -> None:  # pragma: no cover - compiled
    # duetflow.audio.bs1770._filtered_pair's common part, made and filtered in one pass: for k
    # in [0, size), the filter input x[xo + k] + guard[(at + k) & 1] (summed in x's dtype,
    # widened to float64: :func:`guarded`'s steps) goes through the two-section cascade of
    # duetflow.audio.lane_kernels.sections_pair (its operations in its order, lane x on state
    # zx, lane u on zu, both updated) into y[at + k]; u likewise into v
    b00, b01, b02, a01, a02 = sos[0, 0], sos[0, 1], sos[0, 2], sos[0, 4], sos[0, 5]
    b10, b11, b12, a11, a12 = sos[1, 0], sos[1, 1], sos[1, 2], sos[1, 4], sos[1, 5]
    p00, p01, p10, p11 = zx[0, 0], zx[0, 1], zx[1, 0], zx[1, 1]
    q00, q01, q10, q11 = zu[0, 0], zu[0, 1], zu[1, 0], zu[1, 1]
    for k in range(size):
        g = guard[(at + k) & 1]
        xc = np.float64(x[xo + k] + g)
        uc = np.float64(u[uo + k] + g)
        xm = b00 * xc + p00
        um = b00 * uc + q00
        p00 = b01 * xc - a01 * xm + p01
        q00 = b01 * uc - a01 * um + q01
        p01 = b02 * xc - a02 * xm
        q01 = b02 * uc - a02 * um
        xo_ = b10 * xm + p10
        uo_ = b10 * um + q10
        p10 = b11 * xm - a11 * xo_ + p11
        q10 = b11 * um - a11 * uo_ + q11
        p11 = b12 * xm - a12 * xo_
        q11 = b12 * um - a12 * uo_
        y[at + k] = xo_
        v[at + k] = uo_
    zx[0, 0], zx[0, 1], zx[1, 0], zx[1, 1] = p00, p01, p10, p11
    zu[0, 0], zu[0, 1], zu[1, 0], zu[1, 1] = q00, q01, q10, q11
