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
  added to the mix in one pass (numpy: five).

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
