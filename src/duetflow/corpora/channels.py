"""Which channel of a two-channel recording carries which speaker, decided from energy.

Corpora that record one speaker per channel rarely document which is which, and some copies
are mixed down or carry heavy crosstalk: :func:`decide_channels` measures it per dialogue
instead of assuming it. Adapters may import these names from :mod:`duetflow.corpora.adapter` as
well.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from duetflow.audio.io import AudioInfo, read_frames


@dataclass(frozen=True)
class ChannelDecision:
    """Which channel carries which speaker, decided from energy, or None (mixed)."""

    channels: dict[str, int] | None
    score_db: float  # how clearly the channels separate the speakers (0 = not at all)
    energy_db: dict[str, list[float]]  # speaker -> per-channel mean energy (dBFS)


def decide_channels(
    path: Path,
    info: AudioInfo,
    turns_by_speaker: Mapping[str, Sequence[tuple[float, float]]],
    *,
    min_separation_db: float = 6.0,
    max_seconds_per_speaker: float = 60.0,
) -> ChannelDecision:
    """Map two speakers to two channels by their energy during their own annotated turns.

    Speaker ``s`` belongs to the channel where its turns are loudest relative to the other
    channel. The mapping is accepted only when both speakers agree (distinct channels) and the
    separation (mean of both speakers' channel energy differences) is at least
    ``min_separation_db``; otherwise the file is treated as mixed and ``channels`` is None.
    Only turn audio is read (seeking), at most ``max_seconds_per_speaker`` per speaker.
    """
    speakers = list(turns_by_speaker)
    energy: dict[str, list[float]] = {}
    for spk in speakers:
        acc = np.zeros(info.channels, dtype=np.float64)
        n = 0
        budget = max_seconds_per_speaker
        for start, end in turns_by_speaker[spk]:
            if budget <= 0:
                break
            end = min(end, start + budget)
            a = int(start * info.sample_rate)
            b = min(int(end * info.sample_rate), info.frames)
            if b <= a:
                continue
            data, _ = read_frames(path, a, b)
            data2 = data.reshape(len(data), -1).astype(np.float64)
            acc += np.sum(data2**2, axis=0)
            n += data2.shape[0]
            budget -= end - start
        mean = acc / max(n, 1)
        energy[spk] = [10 * math.log10(v) if v > 0 else -200.0 for v in mean]
    if len(speakers) != 2 or info.channels != 2:
        return ChannelDecision(None, 0.0, energy)
    s1, s2 = speakers
    d1 = energy[s1][0] - energy[s1][1]  # >0: s1 louder on channel 0
    d2 = energy[s2][1] - energy[s2][0]  # >0: s2 louder on channel 1
    if d1 > 0 and d2 > 0:
        mapping, score = {s1: 0, s2: 1}, (d1 + d2) / 2
    elif d1 < 0 and d2 < 0:
        mapping, score = {s1: 1, s2: 0}, -(d1 + d2) / 2
    else:
        return ChannelDecision(None, 0.0, energy)
    if score < min_separation_db:
        return ChannelDecision(None, score, energy)
    return ChannelDecision(mapping, score, energy)
