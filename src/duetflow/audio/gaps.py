"""Speaker-change gaps as a voice activity detector hears them on the rendered audio.

A planned gap is laid between *acoustic extents* (energy above the noise floor), but what a
listener, a VAD and the acceptance checks hear is the silence between *voicing*: soft onsets,
breath and decaying tails are energy without voicing, and the detector's decision at an edge
depends on its adapted noise model and on where the edge falls in its 10 ms frame grid. So the
renderer closes the loop: it assembles the dialogue once, measures every speaker-change gap on
that audio with the same method the checks use, and moves the following turns by whole VAD
frames so each measured gap lands within half a frame of its drawn value.

Method (as in ``duetflow.report.collect.measure_gaps_vad``): WebRTC VAD, aggressiveness 3,
10 ms frames, over the whole signal; onsets are the starts of voiced runs of a forward pass,
offsets the onsets of a pass over the time-reversed signal (the detector holds "speech" for
several frames after speech ends, but reacts to an onset within a frame). The gap at a change is
the first onset after the midpoint between the two turns minus the last offset before it.

Shifts are whole frames, and the signal length is kept a whole number of frames, so moving a
turn moves its measured edges by exactly the shift: the forward grid and the reversed grid stay
where they were relative to every clip.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import _webrtcvad
import numpy as np
import numpy.typing as npt

from duetflow.audio.io import Audio
from duetflow.audio.vad import VAD_RATES, voiced_frames, webrtcvad

FRAME_MS = 10
AGGRESSIVENESS = 3


def frame_samples(sample_rate: int) -> int:
    """One VAD frame in samples at ``sample_rate`` (the grid shifts are made on)."""
    return max(1, sample_rate * FRAME_MS // 1000)


def _flags(pcm: bytes, sample_rate: int, frame_n: int) -> npt.NDArray[np.bool_]:
    """Decisions of a fresh detector over consecutive frames of 16-bit PCM.

    The frames go straight to the extension's ``process`` through ``map`` (what
    ``webrtcvad.Vad.is_speech`` calls after checking the length): no Python frame per 10 ms.
    """
    vad = webrtcvad.Vad(AGGRESSIVENESS)
    step = 2 * frame_n
    count = len(pcm) // step
    frames = [pcm[i : i + step] for i in range(0, count * step, step)]
    calls = map(
        _webrtcvad.process,
        itertools.repeat(vad._vad, count),
        itertools.repeat(sample_rate, count),
        frames,
        itertools.repeat(frame_n, count),
    )
    return np.fromiter(calls, dtype=bool, count=count)


def _both_passes(
    samples: Audio, sample_rate: int
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """Forward and time-reversed frame decisions, exactly as
    :func:`duetflow.audio.vad.voiced_frames` makes them on ``samples`` and on
    ``samples[::-1]``, converting to 16-bit PCM once for both."""
    frame_n = sample_rate * FRAME_MS // 1000
    n = len(samples)
    used = n // frame_n * frame_n
    pcm = (np.clip(samples, -1.0, 1.0) * 32767.0).astype("<i2")
    fwd = _flags(pcm[:used].tobytes(), sample_rate, frame_n)
    rev = _flags(pcm[n - used :][::-1].tobytes(), sample_rate, frame_n)
    return fwd, rev


def _run_starts(flags: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
    prev = np.concatenate(([False], flags[:-1]))
    return np.flatnonzero(flags & ~prev).astype(np.int64)


@dataclass(frozen=True)
class VoicingEdges:
    """Voicing onsets and offsets (sample indices) of a whole signal, two VAD passes."""

    onsets: npt.NDArray[np.int64]
    offsets: npt.NDArray[np.int64]  # sorted ascending

    @classmethod
    def measure(cls, samples: Audio, sample_rate: int) -> VoicingEdges:
        """Forward pass for onsets, time-reversed pass for offsets (see module docstring)."""
        n = len(samples)
        if sample_rate in VAD_RATES:
            fwd, rev = _both_passes(samples, sample_rate)
        else:  # the detector resamples to 16 kHz internally
            fwd, _ = voiced_frames(samples, sample_rate, AGGRESSIVENESS, FRAME_MS)
            rev, _ = voiced_frames(
                np.ascontiguousarray(samples[::-1]), sample_rate, AGGRESSIVENESS, FRAME_MS
            )
        scale = FRAME_MS / 1000.0 * sample_rate  # frame -> samples
        on = np.round(_run_starts(fwd) * scale).astype(np.int64)
        off = np.sort(n - np.round(_run_starts(rev) * scale).astype(np.int64))
        return cls(on, off)

    def gap_at(self, mid: int, lo: int, hi: int) -> tuple[int, int] | None:
        """(offset, onset) around ``mid``: last offset <= mid, first onset >= mid.

        None unless the offset lies after ``lo`` and the onset before ``hi`` (the previous
        turn's start and the next turn's end): outside them the detector heard no edge that
        belongs to this change.
        """
        k = int(np.searchsorted(self.offsets, mid, side="right")) - 1
        j = int(np.searchsorted(self.onsets, mid, side="left"))
        if k < 0 or j >= len(self.onsets):
            return None
        off, on = int(self.offsets[k]), int(self.onsets[j])
        if off <= lo or on >= hi:
            return None
        return off, on


def frame_shift(
    measured_n: int, planned_n: int, frame_n: int, limit_n: int, tolerance_n: int | None = None
) -> int:
    """Whole-frame shift (samples) that brings a measured gap nearest to the planned one.

    Zero when the gap is already within ``tolerance_n`` (default half a frame) of the plan, or
    when the correction would exceed ``limit_n`` (the measurement is then not trusted).
    """
    tol = frame_n // 2 if tolerance_n is None else tolerance_n
    if abs(planned_n - measured_n) <= tol:
        return 0
    k = int(np.round((planned_n - measured_n) / frame_n))
    shift = k * frame_n
    return shift if abs(shift) <= limit_n else 0
