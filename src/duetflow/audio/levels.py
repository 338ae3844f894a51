"""Signal levels as real recordings have them, made safe for level decisions.

Two things a cheap interface or a float file does that a level decision must not be fooled by:

* **DC offset** — a constant (or slowly drifting) offset adds its square to every frame's
  energy: the noise floor rises to the offset, speech barely stands out of it, and a
  crosstalk rule that compares tracks takes the offset track for the loud one (the other
  speaker's turns vanish as "leakage"). :class:`DcTracker` follows the offset with a one-pole
  low-pass (time constant :data:`DC_TIME_CONSTANT_S`, i.e. a high-pass at ~0.16 Hz, far below
  speech) and subtracts it, block by block with its state carried over, so block boundaries do
  not change the result. The estimate is subtracted only while it is over
  :data:`DC_THRESHOLD` (-54 dBFS): a DC-free recording (mean well under that) passes through
  **bit-identical**, so nothing changes for clean input.
* **Over full scale** — a float track may peak above 1.0. That is a level, not noise: before a
  conversion to 16-bit PCM (what WebRTC VAD reads) :class:`Headroom` scales by the largest
  peak seen so far instead of clipping, which would turn the speech into a square wave. A
  track that never exceeds full scale is converted exactly as before (gain 1).
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import numpy.typing as npt
import soundfile as sf

from duetflow.audio.io import Audio

#: Offsets smaller than this (linear, full scale 1.0; -54 dBFS) are left in the signal.
DC_THRESHOLD = 2e-3
#: How fast the offset estimate follows a drifting offset (seconds).
DC_TIME_CONSTANT_S = 1.0


class DcTracker:
    """Removes a DC offset from consecutive blocks of one track (see the module docstring)."""

    def __init__(self, sample_rate: int) -> None:
        self._alpha = 1.0 / max(1.0, DC_TIME_CONSTANT_S * sample_rate)
        self._init_n = max(1, int(sample_rate))
        self._state: npt.NDArray[np.float64] | None = None
        self.max_offset = 0.0  # largest |offset| followed so far (linear), for reports

    def __call__(self, x: Audio) -> Audio:
        if len(x) == 0:
            return x
        a = self._alpha
        if self._state is None:  # start from the mean of the first second: a constant offset
            # is removed from the first sample on (blocks of a second or more: same result)
            head = x[: self._init_n]
            self._state = np.array([(1.0 - a) * float(np.mean(head, dtype=np.float64))])
        from scipy.signal import lfilter  # lazily: a reused ingest step loads no scipy.signal

        m, self._state = lfilter([a], [1.0, -(1.0 - a)], x.astype(np.float64), zi=self._state)
        big = np.abs(m) > DC_THRESHOLD
        if not big.any():
            return x
        self.max_offset = max(self.max_offset, float(np.max(np.abs(m[big]))))
        out = x.astype(np.float64) - np.where(big, m, 0.0)
        return out.astype(np.float32)


def remove_dc(samples: Audio, sample_rate: int) -> Audio:
    """``samples`` (mono) without a DC offset over :data:`DC_THRESHOLD`; unchanged otherwise."""
    return DcTracker(sample_rate)(samples)


def file_dc_offsets(path: str | Path) -> tuple[float, ...]:
    """The DC offset of each channel of an audio file (its mean), 0.0 where it is under
    :data:`DC_THRESHOLD`: what a reader of stretches of the file subtracts so a level decision
    on any stretch sees the same offset-free samples (a constant per file, so a frame's value
    still depends on its own samples only). One streamed pass, cached per file version; an
    unreadable file gives no offsets (its reader reports the error)."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError:
        return ()
    return _file_dc_offsets(str(p), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=64)
def _file_dc_offsets(path: str, _mtime_ns: int, _size: int) -> tuple[float, ...]:
    try:
        with sf.SoundFile(path) as f:
            total = np.zeros(f.channels, dtype=np.float64)
            n = 0
            for block in f.blocks(blocksize=1 << 16, dtype="float32", always_2d=True):
                total += block.sum(axis=0, dtype=np.float64)
                n += len(block)
    except (OSError, RuntimeError, ValueError, sf.LibsndfileError):
        return ()
    means = total / max(1, n)
    return tuple(float(m) if abs(m) > DC_THRESHOLD and np.isfinite(m) else 0.0 for m in means)


def minus_offset(x: Audio, offset: float) -> Audio:
    """``x - offset`` (float32); ``x`` itself when the offset is 0 (bit-identical)."""
    return x if offset == 0.0 else (x - np.float32(offset)).astype(np.float32, copy=False)


class Headroom:
    """Converts consecutive blocks of one track to 16-bit PCM without clipping a hot track."""

    def __init__(self) -> None:
        self.peak = 1.0  # largest |sample| seen so far, at least full scale

    def pcm16(self, x: Audio) -> bytes:
        if len(x):
            self.peak = max(self.peak, float(np.max(np.abs(x))))
        y = x if self.peak <= 1.0 else x * np.float32(1.0 / self.peak)
        return bytes((np.clip(y, -1.0, 1.0) * 32767.0).astype("<i2").tobytes())


__all__ = [
    "DC_THRESHOLD",
    "DC_TIME_CONSTANT_S",
    "DcTracker",
    "Headroom",
    "file_dc_offsets",
    "minus_offset",
    "remove_dc",
]
