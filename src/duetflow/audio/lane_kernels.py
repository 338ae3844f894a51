"""Two IIR recursions run side by side in one compiled loop (imported by
:func:`duetflow.audio.kernels.lfilter_pair` and :func:`duetflow.audio.kernels.sosfilt_pair`
only where numba is installed and not turned off).

A recursion is bound by its own latency (each output waits for the one before), so one signal
filtered alone leaves the processor's units idle; two *independent* signals interleaved in one
loop fill them, at nearly the cost of one. Each lane is the very operation sequence of the
single-signal kernel (:mod:`duetflow.audio.kernels`: scipy's direct form II transposed, and
``_sosfilt``'s cascade of sections), on its own state: the lanes never mix, so each output has
the bits it has filtered alone. The loops stop where the shorter signal ends (and the
high-pass where either lane's state reaches a fixed point, which the single kernel skips); the
caller finishes each lane with the single kernel from the state reached.
"""

from __future__ import annotations

import math
from typing import Any

import numba


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def df2t_pair(
    b: Any, a: Any, x: Any, zx: Any, y: Any, u: Any, zu: Any, v: Any
) -> int:  # pragma: no cover
    # second order: y = lfilter(b, a, x) and v = lfilter(b, a, u) from states zx, zu (updated);
    # returns the samples done
    b0, b1, b2 = b[0], b[1], b[2]
    a1, a2 = a[1], a[2]
    p0, p1 = zx[0], zx[1]
    q0, q1 = zu[0], zu[1]
    size = min(x.shape[0], u.shape[0])
    k = 0
    while k < size:
        xn = x[k]
        un = u[k]
        yn = p0 + b0 * xn
        vn = q0 + b0 * un
        n0 = p1 + xn * b1 - yn * a1
        m0 = q1 + un * b1 - vn * a1
        n1 = xn * b2 - yn * a2
        m1 = un * b2 - vn * a2
        y[k] = yn
        v[k] = vn
        k += 1
        fixed = (
            n0 == p0
            and n1 == p1
            and math.copysign(1.0, n0) == math.copysign(1.0, p0)
            and math.copysign(1.0, n1) == math.copysign(1.0, p1)
        ) or (
            m0 == q0
            and m1 == q1
            and math.copysign(1.0, m0) == math.copysign(1.0, q0)
            and math.copysign(1.0, m1) == math.copysign(1.0, q1)
        )
        p0, p1 = n0, n1
        q0, q1 = m0, m1
        if fixed:  # the single kernel skips what follows (digital silence)
            break
    zx[0], zx[1] = p0, p1
    zu[0], zu[1] = q0, q1
    return k


@numba.njit(cache=True, nogil=True)  # type: ignore[misc]
def sections_pair(sos: Any, x: Any, zi: Any, u: Any, zu: Any) -> int:  # pragma: no cover
    # x and u filtered in place through the cascade, states zi and zu updated; returns the
    # samples done (the shorter length)
    n_sections = sos.shape[0]
    size = min(x.shape[0], u.shape[0])
    if n_sections == 2:  # K-weighting: the states in registers, the same operations
        b00, b01, b02, a01, a02 = sos[0, 0], sos[0, 1], sos[0, 2], sos[0, 4], sos[0, 5]
        b10, b11, b12, a11, a12 = sos[1, 0], sos[1, 1], sos[1, 2], sos[1, 4], sos[1, 5]
        p00, p01, p10, p11 = zi[0, 0], zi[0, 1], zi[1, 0], zi[1, 1]
        q00, q01, q10, q11 = zu[0, 0], zu[0, 1], zu[1, 0], zu[1, 1]
        for k in range(size):
            xc = x[k]
            uc = u[k]
            xm = b00 * xc + p00
            um = b00 * uc + q00
            p00 = b01 * xc - a01 * xm + p01
            q00 = b01 * uc - a01 * um + q01
            p01 = b02 * xc - a02 * xm
            q01 = b02 * uc - a02 * um
            xo = b10 * xm + p10
            uo = b10 * um + q10
            p10 = b11 * xm - a11 * xo + p11
            q10 = b11 * um - a11 * uo + q11
            p11 = b12 * xm - a12 * xo
            q11 = b12 * um - a12 * uo
            x[k] = xo
            u[k] = uo
        zi[0, 0], zi[0, 1], zi[1, 0], zi[1, 1] = p00, p01, p10, p11
        zu[0, 0], zu[0, 1], zu[1, 0], zu[1, 1] = q00, q01, q10, q11
        return int(size)
    for k in range(size):
        x_cur = x[k]
        u_cur = u[k]
        for s in range(n_sections):
            x_new = sos[s, 0] * x_cur + zi[s, 0]
            u_new = sos[s, 0] * u_cur + zu[s, 0]
            zi[s, 0] = sos[s, 1] * x_cur - sos[s, 4] * x_new + zi[s, 1]
            zu[s, 0] = sos[s, 1] * u_cur - sos[s, 4] * u_new + zu[s, 1]
            zi[s, 1] = sos[s, 2] * x_cur - sos[s, 5] * x_new
            zu[s, 1] = sos[s, 2] * u_cur - sos[s, 5] * u_new
            x_cur = x_new
            u_cur = u_new
        x[k] = x_cur
        u[k] = u_cur
    return int(size)
