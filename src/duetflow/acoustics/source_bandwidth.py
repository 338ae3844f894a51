"""A source recording's effective bandwidth, measured once per recording.

The provenance of the band-limit (docs/equalisation.md) records the source's effective bandwidth:
the frequency below which 99 % of its spectral energy lies
(:func:`duetflow.audio.bandlimit.energy_bandwidth_hz`). That is a property of the recording, not
of the window cut from it, so it is measured once per recording on a bounded, deterministic
span: the first :data:`SPAN_S` seconds of each of the dialogue's tracks (a channel of a file, a
file, or the mixed recording), read at the output rate before any low-pass, the tracks joined in
the dialogue's speaker order. Every window of one recording then records the same figure,
whichever window asks first and whichever shard or process renders it.

Results are cached per (tracks, rate) in the process, like the room tone of
:mod:`duetflow.acoustics.tone_sources` (the windows of one recording are rendered one after
another in a shard); a rewritten file is measured again. The cache is bounded
(:data:`CACHE_SIZE` entries, a float each).
"""

from __future__ import annotations

import math
import os
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from duetflow.audio.bandlimit import energy_bandwidth_hz
from duetflow.audio.io import Audio, audio_info, read_frames, resample

__all__ = ["CACHE_SIZE", "SPAN_S", "BandwidthRecord", "recording_bandwidth_hz"]

#: Seconds read from the start of each track of a recording.
SPAN_S = 30.0
#: Recordings remembered per process.
CACHE_SIZE = 64

#: one track of a recording: (file, channel; None for the file's channels averaged)
Recording = tuple[str, int | None]


@dataclass(frozen=True)
class BandwidthRecord:
    """Provenance of the band-limit: the source's effective bandwidth (Hz, None for silence or
    a source under 256 samples) and the low-pass cutoff applied (None: not limited)."""

    source_hz: float | None
    limit_hz: float | None

    def as_provenance(self) -> dict[str, float | None]:
        """The ``provenance.bandwidth`` mapping: ``{source_hz, limit_hz}``, the source rounded
        to 0.1 Hz."""
        return {
            "source_hz": None if self.source_hz is None else round(self.source_hz, 1),
            "limit_hz": self.limit_hz,
        }


def _span(path: str, channel: int | None, sr: int) -> Audio:
    """The first :data:`SPAN_S` seconds of one track, at ``sr``."""
    info = audio_info(path)
    stop = min(info.frames, int(math.ceil(SPAN_S * info.sample_rate)))
    if stop <= 0:
        return np.zeros(0, dtype=np.float32)
    data, file_sr = read_frames(path, 0, stop, channel=channel, mono=channel is None)
    return resample(data, file_sr, sr)


def recording_bandwidth_hz(recordings: Sequence[Recording], sr: int) -> float | None:
    """Effective bandwidth (Hz) of the recording made of ``recordings`` (its tracks, in the
    dialogue's speaker order), measured on the first :data:`SPAN_S` seconds of each at ``sr``,
    joined; cached per tracks and rate."""
    tracks = tuple(dict.fromkeys(recordings))  # a track shared by two speakers counts once
    stamps = []
    for path, channel in tracks:
        st = os.stat(path)
        stamps.append((path, channel, st.st_mtime_ns, st.st_size))
    key = (tuple(stamps), int(sr))
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    parts = [_span(path, channel, sr) for path, channel in tracks]
    x = np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
    hz = energy_bandwidth_hz(x, sr)
    _CACHE[key] = hz
    while len(_CACHE) > CACHE_SIZE:
        _CACHE.popitem(last=False)
    return hz


_CACHE: OrderedDict[tuple[tuple[tuple[str, int | None, int, int], ...], int], float | None] = (
    OrderedDict()
)
