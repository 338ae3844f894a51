"""What turn detection needs of one studio track, computed block by block (streaming).

:class:`TrackFeatures` keeps a track's 10 ms energy grid and its speech decisions (WebRTC VAD
frames, or Silero's windows thresholded with hysteresis), never the samples, together with the
track's levels as recorded (DC offset, float headroom, clipped samples).
:mod:`duetflow.corpora.studio.segment` attributes crosstalk and finds the turns from the
features of every track of a session.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from duetflow.audio.io import Audio, to_mono
from duetflow.audio.levels import DcTracker, Headroom
from duetflow.audio.silero import WINDOW as SILERO_WINDOW
from duetflow.audio.silero import SileroStream
from duetflow.audio.stream import StreamResampler
from duetflow.audio.vad import webrtcvad
from duetflow.config import SegmentConfig

ANALYSIS_RATE = 16000
"""Tracks are analysed at 16 kHz (a WebRTC VAD rate); turn times do not depend on it."""

HOP_S = 0.010
"""Resolution of the energy grid used for crosstalk attribution and boundary refinement."""

SILERO_ON = 0.5
"""Silero speech probability that starts speech (the model's usual threshold)."""
SILERO_OFF = 0.35
"""Silero speech probability below which speech stops again (hysteresis)."""

_FULL_SCALE = 32767.0 / 32768.0  # a sample here or beyond in an integer file is clipped

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


def _frame_energy_db(x: Audio, hop: int) -> FloatArray:
    n = len(x) // hop
    if n == 0:
        return np.zeros(0, dtype=np.float64)
    frames = x[: n * hop].astype(np.float64).reshape(n, hop)
    ms = np.mean(frames * frames, axis=1)
    out: FloatArray = 10.0 * np.log10(np.maximum(ms, 1e-12))
    return out


class TrackFeatures:
    """What turn detection needs of one track, computed block by block (streaming).

    Fed consecutive mono blocks at :data:`ANALYSIS_RATE`, it keeps only the 10 ms energy grid
    (8 bytes per 10 ms) and the WebRTC VAD decisions (1 byte per VAD frame), never the samples:
    a 2-hour track costs ~6 MB here instead of 0.9 GB of float64 frames. Block boundaries do not
    change the result: partial frames are carried over, and one VAD instance (which adapts to
    the noise as it goes) sees every frame in order.
    """

    def __init__(self, config: SegmentConfig) -> None:
        self._hop = int(round(HOP_S * ANALYSIS_RATE))
        self._vad_n = ANALYSIS_RATE * config.vad_frame_ms // 1000
        self._sub = config.vad_frame_ms // 10  # VAD frames are whole multiples of the grid
        self._vad = webrtcvad.Vad(config.vad_aggressiveness)
        self._silero = SileroStream() if config.vad == "silero" else None
        self._probs: list[npt.NDArray[np.float32]] = []
        self._flushed = False
        self._e_rest = np.zeros(0, dtype=np.float32)
        self._v_rest = np.zeros(0, dtype=np.float32)
        self._energies: list[FloatArray] = []
        self._flags: list[BoolArray] = []
        self.samples = 0
        # levels as recorded: a DC offset is removed before any level decision, a float track
        # over full scale is scaled (not clipped) for the VAD (duetflow.audio.levels)
        self.dc = DcTracker(ANALYSIS_RATE)
        self.headroom = Headroom()
        self.clipped = 0  # samples at integer full scale (a hard-clipped recording)
        self.raw_peak = 0.0  # largest |sample| as recorded (before the DC removal)

    def feed(self, x: Audio) -> None:
        """Add the next block of samples (mono, float32, at :data:`ANALYSIS_RATE`)."""
        if len(x) == 0:
            return
        self.samples += len(x)
        mag = np.abs(x)
        self.clipped += int(np.count_nonzero(mag >= _FULL_SCALE))
        self.raw_peak = max(self.raw_peak, float(mag.max()))
        x = self.dc(x)
        e = np.concatenate((self._e_rest, x)) if len(self._e_rest) else x
        n = len(e) // self._hop
        self._energies.append(_frame_energy_db(e, self._hop))
        self._e_rest = e[n * self._hop :].copy()
        if self._silero is not None:
            self._probs.append(self._silero.feed(x))
            return
        v = np.concatenate((self._v_rest, x)) if len(self._v_rest) else x
        count = len(v) // self._vad_n
        if count:
            pcm = self.headroom.pcm16(v[: count * self._vad_n])
            step = 2 * self._vad_n
            self._flags.append(
                np.fromiter(
                    (
                        self._vad.is_speech(pcm[i * step : (i + 1) * step], ANALYSIS_RATE)
                        for i in range(count)
                    ),
                    dtype=bool,
                    count=count,
                )
            )
        self._v_rest = v[count * self._vad_n :].copy()

    def pad_to(self, length: int, block: int = 1 << 16) -> None:
        """Feed silence up to ``length`` samples (a track that stopped before the others)."""
        while self.samples < length:
            self.feed(np.zeros(min(block, length - self.samples), dtype=np.float32))

    def energies(self) -> FloatArray:
        """Energy (dB) of every whole 10 ms frame fed so far."""
        return np.concatenate(self._energies) if self._energies else np.zeros(0)

    def flags(self) -> BoolArray:
        """WebRTC VAD decision of every whole VAD frame fed so far."""
        return np.concatenate(self._flags) if self._flags else np.zeros(0, dtype=bool)

    def grid_flags(self, n: int) -> BoolArray:
        """The speech decision on the 10 ms grid (``n`` frames; silence past the end).

        WebRTC frames (10/20/30 ms) are repeated onto the grid. Silero's 32 ms windows are
        thresholded with hysteresis (on at :data:`SILERO_ON`, off below :data:`SILERO_OFF`)
        and each 10 ms frame takes the window holding its middle; the last partial window is
        scored padded with silence (call this once everything has been fed).
        """
        out = np.zeros(n, dtype=bool)
        if self._silero is None:
            up = np.repeat(self.flags(), self._sub)[:n]
            out[: len(up)] = up
            return out
        if not self._flushed:
            self._probs.append(self._silero.flush())
            self._flushed = True
        probs = np.concatenate(self._probs) if self._probs else np.zeros(0, dtype=np.float32)
        on = np.zeros(len(probs), dtype=bool)
        state = False
        for k, p in enumerate(probs.tolist()):
            state = p >= SILERO_ON or (state and p >= SILERO_OFF)
            on[k] = state
        mid = (np.arange(n) * self._hop + self._hop // 2) // SILERO_WINDOW
        ok = mid < len(on)
        out[ok] = on[mid[ok]]
        return out


def features_of(samples: Audio, sample_rate: int, config: SegmentConfig) -> TrackFeatures:
    """The features of one whole track held in memory (any rate; channels are averaged)."""
    f = TrackFeatures(config)
    x = to_mono(samples).astype(np.float32, copy=False)
    f.feed(StreamResampler(sample_rate, ANALYSIS_RATE)(x, last=True))
    return f
