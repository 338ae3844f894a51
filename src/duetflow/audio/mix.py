"""Mixing primitives for rendering: envelopes, placement, smooth gain curves, click checks.

Every cut in a rendered dialogue is a join between a turn and room tone (or another turn); a
hard edge there is an audible click. Clips are therefore laid with a raised-cosine envelope and
the room-tone bed is ducked by the same envelope, so the sum crossfades; gain changes inside a
mixed recording ramp linearly over the fade length.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from duetflow.audio import kernels
from duetflow.audio.io import Audio


def fade_envelope(n: int, fade_n: int) -> Audio:
    """``n`` samples of 1.0 with raised-cosine ramps of ``fade_n`` samples at both ends."""
    env = np.ones(n, dtype=np.float32)
    f = min(fade_n, n // 2)
    if f > 0:
        ramp = _ramp(f)
        env[:f] = ramp
        env[n - f :] = ramp[::-1]
    return env


def faded(samples: Audio, fade_n: int, gain: np.float32) -> tuple[Audio, Audio]:
    """``samples * (env * gain)`` and ``env``, :func:`fade_envelope` of their length: the same
    products (where the envelope is 1, ``env * gain`` is ``gain``), the whole scaled in one
    pass and only the ramps through the envelope."""
    n = len(samples)
    env = fade_envelope(n, fade_n)
    data: Audio = samples * gain
    f = min(fade_n, n // 2)
    if f > 0:
        data[:f] = samples[:f] * (env[:f] * gain)
        data[n - f :] = samples[n - f :] * (env[n - f :] * gain)
    return data, env


@lru_cache(maxsize=16)
def _ramp(f: int) -> Audio:
    """The raised-cosine ramp of ``f`` samples (one per fade length: a render's clips share
    one), read-only."""
    ramp = (0.5 - 0.5 * np.cos(np.pi * (np.arange(f, dtype=np.float64) + 0.5) / f)).astype(
        np.float32
    )
    ramp.flags.writeable = False
    return ramp


def any_sample(samples: npt.NDArray[np.floating]) -> bool:
    """``np.any(samples)``: whether any sample is not zero (a NaN counts, as there). The first
    few thousand are looked at first: audio that sounds at all mostly sounds there, and then
    the whole signal need not be scanned (``np.any`` of a float array is a slow reduction)."""
    x = np.asarray(samples).ravel()
    return bool(np.any(x[:_HEAD])) or bool(np.any(x[_HEAD:]))


_HEAD = 4096


def place(dst: Audio, src: Audio, at: int, env: Audio | None = None) -> None:
    """Add ``src`` (times ``env``) into ``dst`` starting at sample ``at``; edges are clipped."""
    a, b = max(0, at), min(len(dst), at + len(src))
    if b <= a:
        return
    s = src[a - at : b - at]
    if env is not None:
        s = s * env[a - at : b - at]
    dst[a:b] += s


def gain_curve(
    n: int, regions: Sequence[tuple[int, int, float]], default: float, ramp_n: int
) -> Audio:
    """Per-sample linear gain: ``default`` outside ``regions`` (``start, stop, gain``).

    Steps between values become linear ramps of ``ramp_n`` samples (a moving average), so a
    change of gain inside running audio does not click.
    """
    g = np.full(n, default, dtype=np.float64)
    for a, b, v in regions:
        g[max(0, a) : min(n, b)] = v
    return smooth_steps(g, ramp_n)


def smooth_steps(values: npt.NDArray[np.float64], ramp_n: int) -> Audio:
    """Moving average over ``ramp_n`` samples: every step becomes a linear ramp."""
    n = len(values)
    g = values.astype(np.float64, copy=False)
    if ramp_n > 1 and n > 0:
        pad = np.concatenate((np.full(ramp_n // 2, g[0]), g, np.full(ramp_n - ramp_n // 2, g[-1])))
        c = np.concatenate(([0.0], np.cumsum(pad)))
        g = (c[ramp_n : ramp_n + n] - c[:n]) / ramp_n
    return g.astype(np.float32)


def max_jump(samples: Audio) -> float:
    """Largest absolute sample-to-sample difference (a click detector)."""
    if len(samples) < 2:
        return 0.0
    return float(np.max(np.abs(np.diff(samples.astype(np.float64), axis=0))))


def db(value: float) -> float:
    """Linear amplitude to dB (``-inf`` for 0)."""
    return 20.0 * math.log10(value) if value > 0 else -math.inf


def compiled_kernels() -> Any | None:
    """:func:`duetflow.audio.kernels.sample_kernels` with every one of its kernels warmed up
    (:func:`duetflow.audio.sample_kernels.warm`: the block peaks, the int16 of the written
    form and the fades' background, which that check does not run), or None (numba missing,
    turned off, or unable to compile here): numpy then, the same bits."""
    sk = kernels.sample_kernels()
    return sk if sk is not None and _warm(sk) else None


@lru_cache(maxsize=1)
def _warm(sk: Any) -> bool:
    try:
        sk.warm()
    except Exception:  # a numba that cannot compile these: the same output without them
        return False
    return True
