"""Reading a dialogue's tracks for acoustic timing: a few seconds at a time, in chunks of turns.

:func:`chunks` groups turns (or mono blocks) so each group spans at most :data:`CHUNK_S`; a
:data:`Reader` returns the audio of ``[a, b)`` seconds of every track a source holds
(:func:`multichannel_reader`, :func:`per_speaker_reader`, :func:`mixed_reader`) as a
:class:`Span`. Only the frames asked for are read, so memory stays flat however long the
recording is. Used by :mod:`duetflow.acoustics.timing`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from duetflow.audio.io import Audio, audio_info, read_frames, resample
from duetflow.audio.levels import file_dc_offsets, minus_offset
from duetflow.errors import InputError
from duetflow.records.dialogue import MixedMonoSource, MultichannelSource, PerSpeakerSource

__all__ = [
    "CHUNK_S",
    "CONTEXT_S",
    "Reader",
    "Span",
    "chunks",
    "file_range",
    "mixed_reader",
    "multichannel_reader",
    "per_speaker_reader",
]

#: Turns analysed together: a chunk spans at most this much of the timeline (s; a single longer
#: turn is a chunk of its own).
CHUNK_S = 30.0
#: Audio read around a chunk's turns (s): an edge may lie outside a loose annotation, and the
#: floor is measured around the speech.
CONTEXT_S = 0.5


def chunks(spans: Sequence[tuple[float, float]]) -> list[list[int]]:
    """Indices of ``spans`` (in time order) grouped so each group spans at most
    :data:`CHUNK_S` (a longer span alone)."""
    order = sorted(range(len(spans)), key=lambda i: (spans[i][0], i))
    out: list[list[int]] = []
    lo = hi = 0.0
    for i in order:
        a, b = spans[i]
        if out and max(hi, b) - lo <= CHUNK_S:
            out[-1].append(i)
            hi = max(hi, b)
            continue
        out.append([i])
        lo, hi = a, b
    return out


@dataclass(frozen=True)
class Span:
    """Audio of ``[t0, t0 + len/sr)`` seconds of one or more tracks."""

    tracks: dict[str, Audio]
    sr: int
    t0: float

    def at(self, t: float) -> float:
        """Frame position (fractional) of timeline second ``t`` in the span."""
        return (t - self.t0) * self.sr


#: ``read(a, b)``: the audio of ``[a, b)`` seconds (clipped to the recording) of every track.
Reader = Callable[[float, float], Span]


def file_range(path: str, a: float, b: float) -> tuple[int, int, int]:
    """``(start, stop, sample_rate)``: the frames of ``[a, b)`` seconds of ``path``, clipped to
    the file."""
    info = audio_info(path)
    start = max(0, int(math.floor(a * info.sample_rate)))
    stop = min(info.frames, int(math.ceil(b * info.sample_rate)))
    return start, max(start, stop), info.sample_rate


def _offset(path: str, channel: int | None) -> float:
    """The DC offset to subtract from a channel of ``path`` (None: the channels' mean)."""
    offsets = file_dc_offsets(path)
    if not offsets:
        return 0.0
    if channel is None:
        return float(np.mean(offsets)) if any(offsets) else 0.0
    return offsets[channel] if 0 <= channel < len(offsets) else 0.0


def multichannel_reader(src: MultichannelSource, ids: Sequence[str]) -> Reader:
    """Each speaker's channel of one file; a channel the file lacks is an ``InputError``."""

    offsets = file_dc_offsets(src.path)  # a DC offset never reaches a level decision

    def read(a: float, b: float) -> Span:
        start, stop, sr = file_range(src.path, a, b)
        data, sr = read_frames(src.path, start, stop)
        data2 = data.reshape(len(data), -1)
        out = {}
        for s in ids:
            ch = src.channels[s]
            if not 0 <= ch < data2.shape[1]:
                raise InputError(
                    src.path, f"speaker {s} on channel {ch}, file has {data2.shape[1]}",
                    reason="bad_channels",
                )  # fmt: skip
            off = offsets[ch] if ch < len(offsets) else 0.0
            out[s] = minus_offset(np.ascontiguousarray(data2[:, ch]), off)
        return Span(out, sr, start / sr)

    return read


def per_speaker_reader(src: PerSpeakerSource, ids: Sequence[str]) -> Reader:
    """Each speaker's file over the same seconds; files at different rates (a 16 kHz mic, a
    24 kHz system line-out) are brought to the highest, so their frames line up for crosstalk."""
    rate = max(audio_info(src.paths[s]).sample_rate for s in ids)
    offset = {s: _offset(src.paths[s], src.channels.get(s)) for s in ids}

    def read(a: float, b: float) -> Span:
        out: dict[str, Audio] = {}
        for s in ids:
            start, stop, sr = file_range(src.paths[s], a, b)
            x, sr = read_frames(src.paths[s], start, stop, channel=src.channels.get(s), mono=True)
            out[s] = resample(minus_offset(x, offset[s]), sr, rate)
        n = min(len(x) for x in out.values())
        t0 = math.floor(a * rate) / rate
        return Span({s: x[:n] for s, x in out.items()}, rate, t0)

    return read


def mixed_reader(src: MixedMonoSource) -> Reader:
    """The one mono mix (a channel of the file, or its downmix) as track ``"mix"``."""

    offset = _offset(src.path, src.channel)

    def read(a: float, b: float) -> Span:
        start, stop, sr = file_range(src.path, a, b)
        x, sr = read_frames(src.path, start, stop, channel=src.channel, mono=src.channel is None)
        return Span({"mix": minus_offset(x, offset)}, sr, start / sr)

    return read
