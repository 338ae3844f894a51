"""WebRTC VAD over any sample rate, returning speech regions in seconds.

webrtcvad accepts 16-bit mono PCM at 8/16/32/48 kHz in 10/20/30 ms frames; other rates are
resampled to 16 kHz internally. Raw frame decisions are smoothed the usual way: a hangover keeps
speech on briefly after the last voiced frame, pauses shorter than ``min_silence_ms`` are
bridged, and voiced runs shorter than ``min_speech_ms`` are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import webrtcvad

from duetflow.audio.io import Audio, resample, to_mono

VAD_RATES = (8000, 16000, 32000, 48000)

Region = tuple[float, float]


@dataclass(frozen=True)
class VadParams:
    aggressiveness: int = 2
    frame_ms: int = 30
    hangover_ms: int = 150
    min_speech_ms: int = 120
    min_silence_ms: int = 300


def _to_pcm16(samples: Audio) -> bytes:
    return bytes((np.clip(samples, -1.0, 1.0) * 32767.0).astype("<i2").tobytes())


def voiced_frames(
    samples: Audio, sample_rate: int, aggressiveness: int = 2, frame_ms: int = 30
) -> tuple[npt.NDArray[np.bool_], float]:
    """Raw per-frame speech decisions and the frame length in seconds."""
    x = to_mono(samples)
    sr = sample_rate
    if sr not in VAD_RATES:
        x, sr = resample(x, sr, 16000), 16000
    n = sr * frame_ms // 1000
    count = len(x) // n
    vad = webrtcvad.Vad(aggressiveness)
    pcm = _to_pcm16(x[: count * n])
    step = 2 * n
    flags = np.fromiter(
        (vad.is_speech(pcm[i * step : (i + 1) * step], sr) for i in range(count)),
        dtype=bool,
        count=count,
    )
    return flags, frame_ms / 1000.0


def smooth(
    flags: npt.NDArray[np.bool_],
    frame_s: float,
    hangover_ms: int = 150,
    min_speech_ms: int = 120,
    min_silence_ms: int = 300,
) -> list[Region]:
    """Turn frame decisions into regions: hangover, bridge short pauses, drop short blips."""
    regions: list[list[float]] = []
    start = None
    for i, f in enumerate(flags):
        if f and start is None:
            start = i
        elif not f and start is not None:
            regions.append([start * frame_s, i * frame_s])
            start = None
    if start is not None:
        regions.append([start * frame_s, len(flags) * frame_s])
    total = len(flags) * frame_s
    hang = hangover_ms / 1000.0
    for r in regions:
        r[1] = min(total, r[1] + hang)
    merged: list[list[float]] = []
    for r in regions:
        if merged and r[0] - merged[-1][1] < min_silence_ms / 1000.0:
            merged[-1][1] = max(merged[-1][1], r[1])
        else:
            merged.append(r)
    return [(round(a, 6), round(b, 6)) for a, b in merged if b - a >= min_speech_ms / 1000.0]


def detect_speech(
    samples: Audio, sample_rate: int, params: VadParams | None = None
) -> list[Region]:
    """Speech regions ``(start_s, end_s)`` of a signal."""
    p = params or VadParams()
    flags, frame_s = voiced_frames(samples, sample_rate, p.aggressiveness, p.frame_ms)
    return smooth(flags, frame_s, p.hangover_ms, p.min_speech_ms, p.min_silence_ms)
