"""Reading only the frames a stage needs, resampling, and deterministic writing.

Samples are float32 in [-1, 1], shape ``(frames,)`` for mono or ``(frames, channels)``.
Every failure to read is an :class:`~duetflow.errors.InputError` naming the file, so an adapter
can quarantine the item and go on.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import soundfile as sf
import soxr

from duetflow.audio import kernels
from duetflow.errors import DISK_FULL_ERRNOS, DiskFullError, InputError

Audio = npt.NDArray[np.float32]

_TRUNCATED_DATA = re.compile(r"^data\s*:\s*(\d+)\s*\(should be (\d+)\)", re.MULTILINE)


@dataclass(frozen=True)
class AudioInfo:
    path: str
    sample_rate: int
    channels: int
    frames: int
    subtype: str
    format: str

    @property
    def duration_s(self) -> float:
        return self.frames / self.sample_rate if self.sample_rate else 0.0


def audio_info(path: str | Path) -> AudioInfo:
    """Header facts of an audio file; raises InputError for missing, empty or unreadable files."""
    with AudioReader(path) as reader:
        return reader.info


class AudioReader:
    """An audio file opened once: its :func:`audio_info` (the same checks, the same errors) and
    reads of its frames from that open file, so a caller that needs the header before it reads
    opens and parses the file once. A context manager (closes the file)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._file = _open(self.path)
        try:
            self.info = _header(self.path, self._file)
        except BaseException:
            self._file.close()
            raise

    def __enter__(self) -> AudioReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._file.close()

    def read_channels(
        self, start: int, stop: int | None, channels: Sequence[int]
    ) -> tuple[list[Audio], int]:
        """:func:`read_channels` of this file (the same checks, samples and errors)."""
        p, info = self.path, self.info
        start, stop = _frame_range(p, info, start, stop)
        for c in channels:
            _check_channel(p, info, c)
        return _channels_of(p, self._file, info, start, stop, channels), info.sample_rate

    def read_block(self, start: int, stop: int | None) -> tuple[Audio, int]:
        """Frames ``[start, stop)``, all channels, ``(frames, channels)`` float32, checked."""
        start, stop = _frame_range(self.path, self.info, start, stop)
        return _read_block(self.path, self._file, self.info, start, stop), self.info.sample_rate


def _open(p: Path) -> sf.SoundFile:
    """``p`` opened by libsndfile; InputError for a missing, empty or unreadable file."""
    if not p.exists():
        raise InputError(p, "file not found", reason="missing_file")
    if p.stat().st_size == 0:
        raise InputError(p, "zero-byte audio file", reason="bad_audio")
    try:
        return sf.SoundFile(str(p))
    except (RuntimeError, sf.LibsndfileError) as e:
        raise InputError(p, f"unreadable audio: {e}", reason="bad_audio") from None


def _header(p: Path, f: sf.SoundFile) -> AudioInfo:
    """:func:`audio_info` of the open file ``f``: the facts ``sf.info`` reads from it (the same
    libsndfile calls, less the ones it only prints), the same checks."""
    try:
        sample_rate, channels, frames = f.samplerate, f.channels, f.frames
        subtype, fmt, log = f.subtype, f.format, f.extra_info
    except (RuntimeError, sf.LibsndfileError) as e:
        raise InputError(p, f"unreadable audio: {e}", reason="bad_audio") from None
    if frames <= 0 or sample_rate <= 0:
        raise InputError(p, "audio has no frames", reason="bad_audio")
    # libsndfile silently shortens a WAV whose data chunk runs past the end of the file; its
    # header log says so ("data : 64000 (should be 31978)"), which is how truncation shows.
    m = _TRUNCATED_DATA.search(log or "")
    if m and int(m.group(2)) < int(m.group(1)):
        raise InputError(
            p,
            f"truncated: data chunk declares {m.group(1)} bytes, file holds {m.group(2)}",
            reason="truncated_audio",
        )
    return AudioInfo(str(p), sample_rate, channels, frames, subtype, fmt)


def read_frames(
    path: str | Path,
    start: int = 0,
    stop: int | None = None,
    *,
    channel: int | None = None,
    mono: bool = False,
) -> tuple[Audio, int]:
    """Read frames ``[start, stop)`` by seeking, never decoding the rest of the file.

    ``channel`` selects one channel; ``mono`` averages all channels. Returns ``(samples, sr)``.
    A file shorter than its header claims (truncated) raises InputError.
    """
    with AudioReader(path) as reader:
        if channel is not None:
            chans, sr = reader.read_channels(start, stop, [channel])
            return chans[0], sr
        data, sr = reader.read_block(start, stop)
    out: Audio
    if mono or data.shape[1] == 1:
        out = data.mean(axis=1, dtype=np.float32) if data.shape[1] > 1 else data[:, 0].copy()
    else:
        out = data
    return out, sr


def read_channels(
    path: str | Path,
    start: int,
    stop: int | None,
    channels: Sequence[int],
    *,
    info: AudioInfo | None = None,
) -> tuple[list[Audio], int]:
    """``read_frames(path, start, stop, channel=c)`` for each of ``channels``, the same samples,
    from one read of the frames, each channel its own C-contiguous array (:func:`_channels_of`).
    ``info``: the file's :func:`audio_info`, when the caller has it already (the header is not
    checked twice); without it the header is read from the file opened for the frames
    (:class:`AudioReader`)."""
    p = Path(path)
    if info is None:
        with AudioReader(p) as reader:
            return reader.read_channels(start, stop, channels)
    start, stop = _frame_range(p, info, start, stop)
    for c in channels:
        _check_channel(p, info, c)
    try:
        f = sf.SoundFile(str(p))
    except (RuntimeError, sf.LibsndfileError) as e:
        raise InputError(p, f"unreadable audio: {e}", reason="bad_audio") from None
    with f:
        return _channels_of(p, f, info, start, stop, channels), info.sample_rate


#: a 16-bit sample's value as a float: the integer times 2^-15 (libsndfile's float read)
_PCM16_SCALE = np.float32(2.0**-15)


def _frame_range(p: Path, info: AudioInfo, start: int, stop: int | None) -> tuple[int, int]:
    stop = info.frames if stop is None else min(stop, info.frames)
    start = max(0, start)
    if stop < start:
        raise InputError(
            p, f"frame range [{start}, {stop}) is empty or reversed", reason="bad_range"
        )
    return start, stop


def _check_channel(p: Path, info: AudioInfo, channel: int) -> None:
    if not 0 <= channel < info.channels:
        raise InputError(
            p, f"channel {channel} requested, file has {info.channels}", reason="bad_channels"
        )


def _read_block(p: Path, f: sf.SoundFile, info: AudioInfo, start: int, stop: int) -> Audio:
    """Frames ``[start, stop)`` of the open file ``f``, ``(frames, channels)`` float32: a 16-bit
    file read as integers and scaled (~6x cheaper than libsndfile's float read, the same
    values), any other as float; truncation and non-finite samples raise InputError."""
    data = _read_raw(p, f, info, start, stop)
    # a 16-bit file's integers scaled: the same values as libsndfile's float read, ~6x cheaper
    if info.subtype == "PCM_16":
        data = data * _PCM16_SCALE
    out: Audio = data.astype(np.float32, copy=False)  # float32 already: no copy
    return out


def _read_raw(
    p: Path, f: sf.SoundFile, info: AudioInfo, start: int, stop: int
) -> npt.NDArray[np.int16] | Audio:
    """Frames ``[start, stop)`` of ``f`` as libsndfile reads them, ``(frames, channels)``: int16
    of a 16-bit file, float32 (checked finite) of any other; truncation raises InputError."""
    try:
        f.seek(start)
        if info.subtype == "PCM_16":
            data = f.read(stop - start, dtype="int16", always_2d=True)
        else:
            data = f.read(stop - start, dtype="float32", always_2d=True)
    except (RuntimeError, sf.LibsndfileError) as e:
        raise InputError(p, f"unreadable audio: {e}", reason="bad_audio") from None
    if data.shape[0] < stop - start:
        raise InputError(
            p,
            f"truncated: expected {stop - start} frames from {start}, got {data.shape[0]}",
            reason="truncated_audio",
        )
    if info.subtype != "PCM_16" and not np.isfinite(data).all():  # integers are always finite
        raise InputError(p, "audio contains NaN or infinite samples", reason="bad_audio")
    out: npt.NDArray[np.int16] | Audio = data
    return out


def _channels_of(
    p: Path, f: sf.SoundFile, info: AudioInfo, start: int, stop: int, channels: Sequence[int]
) -> list[Audio]:
    """Each of ``channels`` (checked) of frames ``[start, stop)`` of ``f``, its own C-contiguous
    float32 array. A 16-bit file's integers go straight into the channels' arrays, scaled in
    one compiled pass (:func:`duetflow.audio.sample_kernels.pcm16_channels`) where numba is,
    else all scaled at once and each channel copied out (a strided scale per channel is ~1.6x
    slower): the same values either way, ``float32(int16) * 2^-15`` (exact)."""
    data = _read_raw(p, f, info, start, stop)
    if info.subtype == "PCM_16":
        split = _pcm16_kernel()
        if split is not None and channels:
            out: Audio = np.empty((len(channels), data.shape[0]), dtype=np.float32)
            split(data, np.array(channels, dtype=np.int64), out)
            return list(out)
        data = data * _PCM16_SCALE
    return [np.ascontiguousarray(data[:, c]) for c in channels]


def _pcm16_kernel() -> Any | None:
    """:func:`duetflow.audio.sample_kernels.pcm16_channels`, or None (numba missing, turned
    off, or unable to compile it here: numpy then, the same values)."""
    compiled = kernels.sample_kernels()
    return compiled.pcm16_channels if compiled is not None and _pcm16_ready(compiled) else None


@lru_cache(maxsize=1)
def _pcm16_ready(compiled: Any) -> bool:
    try:
        compiled.pcm16_channels(
            np.zeros((3, 2), np.int16), np.array([1, 0, 1]), np.empty((3, 3), np.float32)
        )
    except Exception:  # a numba that cannot compile it: the same values without it
        return False
    return True


def read_seconds(
    path: str | Path,
    start_s: float = 0.0,
    end_s: float | None = None,
    *,
    channel: int | None = None,
    mono: bool = False,
    sample_rate: int | None = None,
) -> tuple[Audio, int]:
    """Read a time range (seconds); optionally resample to ``sample_rate``."""
    info = audio_info(path)
    start = int(round(start_s * info.sample_rate))
    stop = None if end_s is None else int(round(end_s * info.sample_rate))
    data, sr = read_frames(path, start, stop, channel=channel, mono=mono)
    if sample_rate is not None and sample_rate != sr:
        data, sr = resample(data, sr, sample_rate), sample_rate
    return data, sr


def resample(samples: Audio, sr_in: int, sr_out: int, quality: str = "HQ") -> Audio:
    """Band-limited resampling with soxr (deterministic, fast)."""
    if sr_in == sr_out or samples.shape[0] == 0:
        return samples.astype(np.float32, copy=False)
    out = soxr.resample(samples, sr_in, sr_out, quality=quality)
    return np.asarray(out, dtype=np.float32)


#: FLAC compression level (0-8) of every file written: the FLAC reference encoder's default.
#: Measured on rendered dialogues (docs/performance.md, *Encoding*): levels 0-5 differ by
#: under 1 % in size and ~10 % in CPU, 6 and 8 save 4-5 % of the bytes for 1.2-1.9x the CPU.
FLAC_COMPRESSION_LEVEL = 5

PCM16 = npt.NDArray[np.int16]


def to_pcm16(samples: Audio) -> PCM16:
    """16-bit PCM of float samples: clipped to [-1, 1 - 2^-15], times 2^15, rounded to the
    nearest integer (ties to even), the conversion libsndfile's FLAC encoder applies, so a
    reader's ``int16 / 32768`` gives back exactly what was measured before writing."""
    return pcm16_levels(samples).astype(np.int16)


def pcm16_levels(samples: Audio) -> Audio:
    """The values :func:`to_pcm16` gives, as float32 integers (-32768 ... 32767)."""
    q: Audio = np.clip(samples, -1.0, 1.0 - 1.0 / 32768).astype(np.float32, copy=False)
    q *= np.float32(32768.0)
    np.rint(q, out=q)
    return q


def write_audio(
    path: str | Path,
    samples: Audio | PCM16,
    sample_rate: int,
    *,
    subtype: str = "PCM_16",
    audio_format: str | None = None,
) -> Path:
    """Write WAV or FLAC atomically (temp file + rename); same samples → same bytes.

    ``int16`` samples (:func:`to_pcm16`, the renderer's) are written as they are (``subtype``
    PCM_16), nothing re-quantised inside the encoder. Float samples are clipped to [-1, 1)
    before libsndfile's integer conversion; callers are expected to have applied a peak ceiling
    already, clipping only guards against float rounding. FLAC is written at
    :data:`FLAC_COMPRESSION_LEVEL`. No fsync: a stage makes its shard durable once, at commit.
    """
    p, fmt, data = _prepared(path, samples, subtype, audio_format)
    with _replacing(p) as tmp:
        try:
            sf._ffi.errno = 0  # type: ignore[attr-defined]  # what a failed call sets is then its own
            _encode(str(tmp), data, sample_rate, subtype, fmt)
        except sf.LibsndfileError as e:
            if _disk_full(e, tmp.parent, data.nbytes):
                raise DiskFullError(p, "No space left on device, reported by libsndfile") from e
            raise
    return p


def write_audio_sha256(
    path: str | Path,
    samples: Audio | PCM16,
    sample_rate: int,
    *,
    subtype: str = "PCM_16",
    audio_format: str | None = None,
) -> tuple[Path, str]:
    """:func:`write_audio` (the same bytes, written atomically) and the hex sha256 of the file,
    taken from the bytes written, so the caller does not read the file back.

    The file is encoded in memory (a seekable buffer: libsndfile seeks back to finish the
    header, as it does in a file), hashed, then written to a temporary file and renamed. Meant
    for files that fit in memory, such as a rendered dialogue; a full disk is a
    :class:`~duetflow.errors.DiskFullError` naming ``path``, nothing left behind.
    """
    p, fmt, data = _prepared(path, samples, subtype, audio_format)
    buf = io.BytesIO()
    _encode(buf, data, sample_rate, subtype, fmt)
    with buf.getbuffer() as encoded:
        digest = hashlib.sha256(encoded).hexdigest()
        with _replacing(p) as tmp, open(tmp, "wb") as f:
            f.write(encoded)
    return p, digest


def _prepared(
    path: str | Path, samples: Audio | PCM16, subtype: str, audio_format: str | None
) -> tuple[Path, str, Audio | PCM16]:
    """What both writers start from: the path (its folder made), the format, the samples as
    the encoder takes them."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    return p, _format(p, audio_format), _encodable(samples, subtype)


@contextmanager
def _replacing(p: Path) -> Iterator[Path]:
    """A temporary path beside ``p`` to write, renamed over ``p`` when the block ends cleanly
    and removed whatever happens; a full disk is a :class:`~duetflow.errors.DiskFullError`
    naming ``p``."""
    tmp = _tmp_path(p)
    try:
        yield tmp
        os.replace(tmp, p)
    except OSError as e:
        full = DiskFullError.of(e, p)
        if full is not None:
            raise full from e
        raise
    finally:
        tmp.unlink(missing_ok=True)


def _format(p: Path, audio_format: str | None) -> str:
    return (audio_format or p.suffix.lstrip(".") or "wav").upper()


def _tmp_path(p: Path) -> Path:
    return p.with_name(f".{p.name}.{os.getpid()}.tmp")


def _encodable(samples: Audio | PCM16, subtype: str) -> Audio | PCM16:
    """``int16`` samples as they are (PCM_16 only), float samples clipped to [-1, 1)."""
    if samples.dtype == np.int16:
        if subtype != "PCM_16":
            raise ValueError(f"int16 samples are written as PCM_16, not {subtype}")
        return samples
    clipped: Audio = np.clip(samples, -1.0, 1.0 - 1.0 / 32768).astype(np.float32, copy=False)
    return clipped


def _encode(
    target: str | io.BytesIO, data: Audio | PCM16, sample_rate: int, subtype: str, fmt: str
) -> None:
    """Encode ``data`` into ``target`` (a path, or a seekable in-memory buffer: the same bytes)."""
    level = {"compression_level": FLAC_COMPRESSION_LEVEL / 8} if fmt == "FLAC" else {}
    channels = 1 if data.ndim == 1 else data.shape[1]
    with sf.SoundFile(
        target, "w", sample_rate, channels, subtype=subtype, format=fmt, **level
    ) as f:
        if data.dtype != np.int16:
            _no_peak_chunk(f)
        f.write(data)


#: libsndfile's ``SFE_SYSTEM`` ("System error."): a failed system call, errno not passed on
_SFE_SYSTEM = 2


def _disk_full(e: sf.LibsndfileError, folder: Path, size: int) -> bool:
    """Whether libsndfile's "System error." while writing into ``folder`` is a full disk: the
    errno of its failed call (cffi keeps it per thread, reset before the write) says so, or
    ``folder``'s file system has less room left than the ``size`` bytes being written."""
    if e.code != _SFE_SYSTEM:
        return False
    if sf._ffi.errno in DISK_FULL_ERRNOS:  # type: ignore[attr-defined]
        return True
    try:
        st = os.statvfs(folder)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < max(size, 1 << 20)


#: libsndfile's ``SFC_SET_ADD_PEAK_CHUNK``: float WAVs get a PEAK chunk stamped with the time
#: of writing, so two writes of the same samples would differ
_SFC_SET_ADD_PEAK_CHUNK = 0x1050


def _no_peak_chunk(f: sf.SoundFile) -> None:
    """Write no PEAK chunk (its timestamp would make equal samples give different bytes)."""
    sf._snd.sf_command(f._file, _SFC_SET_ADD_PEAK_CHUNK, sf._ffi.NULL, 0)  # type: ignore[attr-defined]


def to_mono(samples: Audio) -> Audio:
    """Average channels (no-op for mono)."""
    if samples.ndim == 1:
        return samples
    mono: Audio = samples.mean(axis=1, dtype=np.float32)
    return mono
