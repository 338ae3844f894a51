"""WebRTC VAD over any sample rate, returning speech regions in seconds.

webrtcvad accepts 16-bit mono PCM at 8/16/32/48 kHz in 10/20/30 ms frames; other rates are
resampled to 16 kHz internally. Raw frame decisions are smoothed the usual way: a hangover keeps
speech on briefly after the last voiced frame, pauses shorter than ``min_silence_ms`` are
bridged, and voiced runs shorter than ``min_speech_ms`` are dropped.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import sys
import types
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from duetflow.audio.io import Audio, resample, to_mono
from duetflow.audio.levels import Headroom, remove_dc


def _import_webrtcvad() -> Any:
    """Import webrtcvad, which needs ``pkg_resources`` only to read its own version.

    setuptools >= 81 no longer ships ``pkg_resources``; rather than pin setuptools for everyone
    we lend the module a one-function stand-in for the duration of the import and remove it.
    """
    try:
        return importlib.import_module("webrtcvad")
    except ModuleNotFoundError as e:
        if e.name != "pkg_resources":
            raise
    shim = types.ModuleType("pkg_resources")

    def get_distribution(name: str) -> Any:
        try:
            version = importlib.metadata.version("webrtcvad-wheels")
        except importlib.metadata.PackageNotFoundError:
            version = importlib.metadata.version(name)
        return types.SimpleNamespace(version=version)

    shim.get_distribution = get_distribution  # type: ignore[attr-defined]
    sys.modules["pkg_resources"] = shim
    try:
        return importlib.import_module("webrtcvad")
    finally:
        del sys.modules["pkg_resources"]


webrtcvad = _import_webrtcvad()

VAD_RATES = (8000, 16000, 32000, 48000)

Region = tuple[float, float]


@dataclass(frozen=True)
class VadParams:
    aggressiveness: int = 2
    frame_ms: int = 30
    hangover_ms: int = 150
    min_speech_ms: int = 120
    min_silence_ms: int = 300
    refine: bool = True  # snap region edges to the signal's energy envelope (10 ms resolution)


def voiced_frames(
    samples: Audio, sample_rate: int, aggressiveness: int = 2, frame_ms: int = 30
) -> tuple[npt.NDArray[np.bool_], float]:
    """Raw per-frame speech decisions and the frame length in seconds."""
    x = remove_dc(to_mono(samples), sample_rate)  # levels as recorded: duetflow.audio.levels
    sr = sample_rate
    if sr not in VAD_RATES:
        x, sr = resample(x, sr, 16000), 16000
    n = sr * frame_ms // 1000
    count = len(x) // n
    vad = webrtcvad.Vad(aggressiveness)
    pcm = Headroom().pcm16(x[: count * n])  # over full scale: scaled, never clipped
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


def frame_energy_db(
    samples: Audio, sample_rate: int, hop_s: float = 0.01
) -> npt.NDArray[np.float64]:
    """Mean-square energy in dB of consecutive ``hop_s`` frames."""
    x = remove_dc(to_mono(samples), sample_rate).astype(np.float64)
    n = max(1, int(round(sample_rate * hop_s)))
    count = len(x) // n
    if count == 0:
        return np.zeros(0)
    ms = np.mean(x[: count * n].reshape(count, n) ** 2, axis=1)
    return np.asarray(10 * np.log10(ms + 1e-12), dtype=np.float64)


def refine_edges(
    regions: list[Region], samples: Audio, sample_rate: int, slack_s: float = 0.15
) -> list[Region]:
    """Snap VAD region edges to where the energy envelope crosses a level between floor and speech.

    WebRTC VAD decides on 10–30 ms frames and keeps its own hangover, so its edges run late by up
    to ~100 ms. Within ``slack_s`` of each edge we take the first/last 10 ms frame whose energy is
    above ``floor + max(6 dB, 25% of (speech level − floor))``. A region with no frame above that
    level is dropped (a VAD false alarm on noise).
    """
    hop = 0.01
    e = frame_energy_db(samples, sample_rate, hop)
    if len(e) == 0 or not regions:
        return regions
    floor = float(np.percentile(e, 10))
    out: list[Region] = []
    for a, b in regions:
        ia, ib = int(a / hop), min(len(e), int(np.ceil(b / hop)))
        if ib <= ia:
            continue
        level = float(np.median(e[ia:ib]))
        thr = floor + max(6.0, 0.25 * (level - floor))
        lo = max(0, int((a - 0.03) / hop))
        hi = min(len(e), int(np.ceil((b + 0.03) / hop)))
        head = np.nonzero(e[lo : min(hi, ia + int(slack_s / hop))] > thr)[0]
        tail = np.nonzero(e[max(lo, ib - int(slack_s / hop)) : hi] > thr)[0]
        if not np.any(e[ia:ib] > thr):
            continue  # no frame stands out of the noise floor: not speech after all
        if len(head) == 0 or len(tail) == 0:
            out.append((a, b))
            continue
        na = (lo + int(head[0])) * hop
        nb = (max(lo, ib - int(slack_s / hop)) + int(tail[-1]) + 1) * hop
        out.append((round(na, 6), round(nb, 6)) if nb > na else (a, b))
    return out


def detect_speech(
    samples: Audio, sample_rate: int, params: VadParams | None = None
) -> list[Region]:
    """Speech regions ``(start_s, end_s)`` of a signal."""
    p = params or VadParams()
    flags, frame_s = voiced_frames(samples, sample_rate, p.aggressiveness, p.frame_ms)
    regions = smooth(flags, frame_s, p.hangover_ms, p.min_speech_ms, p.min_silence_ms)
    return refine_edges(regions, samples, sample_rate) if p.refine else regions
