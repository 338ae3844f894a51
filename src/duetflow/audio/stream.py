"""Reading an audio file block by block, so memory does not grow with its length.

:func:`iter_blocks` yields consecutive blocks of one channel (or the channel mean) with the same
values :func:`~duetflow.audio.io.read_frames` returns for the whole file, and the same checks
(unreadable, truncated, NaN/inf samples → :class:`~duetflow.errors.InputError`).
:class:`StreamResampler` resamples such blocks to another rate with soxr's streaming resampler:
the output depends only on the samples, never on how they were cut into blocks.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import soundfile as sf
import soxr

from duetflow.audio.io import Audio, audio_info
from duetflow.errors import InputError

#: Frames per block read from disk: 2^16 (1.4 s at 48 kHz), fewer for many channels.
BLOCK_FRAMES = 1 << 16
#: Most samples (all channels) one block may hold: 4 MiB of float32.
BLOCK_SAMPLES = 1 << 20


def iter_blocks(
    path: str | Path,
    block_frames: int = BLOCK_FRAMES,
    *,
    channel: int | None = None,
) -> Iterator[Audio]:
    """Mono float32 blocks of ``path``: channel ``channel``, or the mean of all channels.

    Raises InputError like :func:`~duetflow.audio.io.read_frames` (``bad_audio``,
    ``truncated_audio``, ``bad_channels``); the error can come after blocks were yielded.
    """
    p = Path(path)
    info = audio_info(p)
    if channel is not None and not 0 <= channel < info.channels:
        raise InputError(
            p, f"channel {channel} requested, file has {info.channels}", reason="bad_channels"
        )
    pcm16 = info.subtype == "PCM_16"  # same values as libsndfile's float read, ~6x cheaper
    block_frames = max(1, min(block_frames, BLOCK_SAMPLES // info.channels))  # 64 channels...
    seen = 0
    try:
        with sf.SoundFile(str(p)) as f:
            while seen < info.frames:
                n = min(block_frames, info.frames - seen)
                if pcm16:
                    data = f.read(n, dtype="int16", always_2d=True) * np.float32(2.0**-15)
                else:
                    data = f.read(n, dtype="float32", always_2d=True)
                if data.shape[0] == 0:
                    break
                if not np.isfinite(data).all():
                    raise InputError(
                        p, f"audio contains NaN or infinite samples (near frame {seen})",
                        reason="bad_audio",
                    )  # fmt: skip
                seen += data.shape[0]
                if channel is not None:
                    yield np.ascontiguousarray(data[:, channel])
                elif data.shape[1] == 1:
                    yield data[:, 0].copy()
                else:
                    yield data.mean(axis=1, dtype=np.float32)
    except (RuntimeError, sf.LibsndfileError) as e:
        raise InputError(p, f"unreadable audio: {e}", reason="bad_audio") from None
    if seen < info.frames:
        raise InputError(
            p, f"truncated: expected {info.frames} frames, got {seen}", reason="truncated_audio"
        )


class StreamResampler:
    """Resample consecutive mono blocks from ``sr_in`` to ``sr_out`` (identity when equal)."""

    def __init__(self, sr_in: int, sr_out: int, quality: str = "HQ") -> None:
        self.identity = sr_in == sr_out
        self._stream = (
            None if self.identity else soxr.ResampleStream(sr_in, sr_out, 1, "float32", quality)
        )

    def __call__(self, block: Audio, last: bool = False) -> Audio:
        """The resampled samples of ``block``; ``last=True`` flushes what the filter holds."""
        x = np.ascontiguousarray(block, dtype=np.float32)
        if self._stream is None:
            return x
        return np.asarray(self._stream.resample_chunk(x, last=last), dtype=np.float32)
