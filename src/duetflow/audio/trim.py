"""Levels and the acoustic extent of a stand-alone clip (an utterance, a reference).

:func:`acoustic_extent` is :func:`duetflow.audio.edges.speech_extent` for a clip that holds
one stretch of speech and nothing else to locate it by: the clip itself is the hint, its own
quietest frames the floor (digital silence for clean synthesis).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from duetflow.audio import edges
from duetflow.audio.io import Audio, to_mono

_EPS = 1e-12


def frame_db(samples: Audio, frame_n: int) -> npt.NDArray[np.float64]:
    """Mean-square level (dBFS) of consecutive ``frame_n``-sample frames (the tail is dropped)."""
    count = len(samples) // frame_n
    if count == 0:
        return np.zeros(0, dtype=np.float64)
    x = samples[: count * frame_n].astype(np.float64).reshape(count, frame_n)
    ms = np.einsum("ij,ij->i", x, x) / frame_n
    return np.asarray(10.0 * np.log10(ms + _EPS), dtype=np.float64)


def rms_db(samples: Audio) -> float:
    """RMS level of a whole signal in dBFS (``-inf`` for empty or all-zero)."""
    if samples.size == 0:
        return -math.inf
    # float32 BLAS dot: exact enough for a level in dB, and ~500x faster than a float64 dot
    # (which goes through a multi-threaded path that only adds contention on a busy machine)
    x = np.ascontiguousarray(samples, dtype=np.float32).ravel()
    ms = float(np.dot(x, x)) / x.size
    return 10.0 * math.log10(ms) if ms > 0 else -math.inf


def acoustic_extent(
    samples: Audio, sample_rate: int, floor_db: float | None = None
) -> tuple[int, int] | None:
    """Sample range ``[i0, i1)`` of the speech in a clip; None if nothing is audible.

    ``floor_db``: the level the speech must fall to (the floor it will be heard over, e.g. the
    ambience a PH utterance is laid on); default the clip's own floor, or the absolute floor
    when the clip is digitally clean.
    """
    x = to_mono(samples)
    an = edges.analyse(x, sample_rate)
    if len(an.edge) < 2:
        return None
    floor = edges.floor_of(an) or edges.DIGITAL_FLOOR
    ext = None
    for f in (floor, edges.DIGITAL_FLOOR):  # a clip with no quieter stretch is speech throughout
        ext = edges.speech_extent(
            an,
            f,
            (0.0, float(len(x))),
            bounds=(0.0, float(len(x))),
            onset_floor_db=floor_db,
            offset_floor_db=floor_db,
        )
        if ext is not None or f.digital:
            break
    if ext is None:
        return None
    i0, i1 = int(math.floor(ext.start)), int(math.ceil(ext.end))
    return (i0, i1) if i1 > i0 else None
