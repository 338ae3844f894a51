"""Room tone from the rest of a recording, when a window holds too little non-speech.

A window cut at turn boundaries may hold no pause long enough to take the room's background
from (dense talk, or annotations that leave no room), although the recording has plenty: a
lead-in, pauses, the rest of a long session. :func:`recording_tone` reads the recording from its
start, block by block (:data:`BLOCK_S`), until it has :data:`WANT_S` of background or has read
:data:`MAX_READ_S`; each block is judged on its own energy (there are no annotations outside
the window): its frames under the edge level of its own floor, in runs of at least
:data:`~duetflow.audio.roomtone.MIN_PAUSE_S`. A channel's crosstalk from the other speaker is
louder than its floor, so it is never taken. Reading from the start, not from the window, keeps
the result the same whichever window of the recording asks first (byte-identical output
whatever order shards run in).

Results are cached per (file, channel, rate) in the process (the windows of one recording are
rendered one after another in a shard), so a recording is scanned once. The cache is bounded
(:data:`CACHE_SIZE` recordings, each at most ``WANT_S`` of tone).
"""

from __future__ import annotations

import logging
import math
import os
from collections import OrderedDict
from dataclasses import dataclass

from duetflow.audio import edges, roomtone
from duetflow.audio.bandlimit import lowpass
from duetflow.audio.io import Audio, audio_info, read_frames, resample

log = logging.getLogger(__name__)

#: Seconds of background wanted.
WANT_S = 2.0
#: Read at most this much of a recording per scan (s).
MAX_READ_S = 60.0
#: Read in blocks of this length (s).
BLOCK_S = 10.0
#: Recordings remembered per process.
CACHE_SIZE = 8


@dataclass(frozen=True)
class RecordingTone:
    """Background found outside a window: tone samples (at the requested rate) and the floor
    it was judged by (None when the recording showed no floor)."""

    tone: Audio | None
    floor: edges.Floor | None
    read_s: float


def _blocks(duration: float) -> list[tuple[float, float]]:
    """Blocks from the start of the file, at most :data:`MAX_READ_S` of them."""
    out: list[tuple[float, float]] = []
    t = 0.0
    while t < min(duration, MAX_READ_S):
        out.append((t, min(duration, t + BLOCK_S)))
        t += BLOCK_S
    return out


def _block_tone(x: Audio, sr: int) -> tuple[list[Audio], edges.Floor | None]:
    an = edges.analyse(x, sr)
    floor = edges.floor_of(an)
    if floor is None or floor.digital:
        return [], floor
    background = an.edge.db <= floor.edge_db()
    runs = roomtone.pause_runs(an, background, floor)
    return [x[a:b] for a, b in runs], floor


def _scan(path: str, channel: int | None, sr: int, bandwidth_hz: float | None) -> RecordingTone:
    info = audio_info(path)
    pieces: list[Audio] = []
    floors: list[edges.Floor] = []
    got = read = 0.0
    for a, b in _blocks(info.duration_s):
        if got >= WANT_S or read >= MAX_READ_S:
            break
        i0 = int(math.floor(a * info.sample_rate))
        i1 = min(info.frames, int(math.ceil(b * info.sample_rate)))
        if i1 <= i0:
            continue
        data, file_sr = read_frames(path, i0, i1, channel=channel, mono=channel is None)
        x = lowpass(resample(data, file_sr, sr), sr, bandwidth_hz)
        read += (i1 - i0) / info.sample_rate
        found, block_floor = _block_tone(x, sr)
        if block_floor is not None:
            floors.append(block_floor)
        for p in found:
            pieces.append(p)
            got += len(p) / sr
    tone = None
    if pieces:
        fade_n = max(1, int(round(roomtone.XFADE_S * sr)))
        tone = roomtone.xfade_concat(pieces, fade_n)[: int(roomtone.MAX_TONE_S * sr)]
    noisy = [f for f in floors if not f.digital]
    floor: edges.Floor | None
    if noisy:
        floor = sorted(noisy, key=lambda f: f.db)[len(noisy) // 2]
    else:
        floor = edges.DIGITAL_FLOOR if floors else None
    log.debug("%s ch %s: %.1f s read, %.2f s of room tone", path, channel, read, got)
    return RecordingTone(tone, floor, read)


def recording_tone(
    path: str, channel: int | None, sr: int, bandwidth_hz: float | None = None
) -> RecordingTone:
    """Background of the recording ``path`` (one ``channel``, or the mix) at ``sr``, low-passed
    at ``bandwidth_hz`` like the window's track, cached per file, channel, rate and cutoff."""
    st = os.stat(path)
    # a rewritten file is scanned again
    key = (path, channel, sr, bandwidth_hz, st.st_mtime_ns, st.st_size)
    hit = _CACHE.get(key)
    if hit is not None:
        _CACHE.move_to_end(key)
        return hit
    found = _scan(path, channel, sr, bandwidth_hz)
    _CACHE[key] = found
    while len(_CACHE) > CACHE_SIZE:
        _CACHE.popitem(last=False)
    return found


_CACHE: OrderedDict[tuple[str, int | None, int, float | None, int, int], RecordingTone] = (
    OrderedDict()
)
