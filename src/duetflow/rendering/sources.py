"""Reading a window's audio: one track per speaker (separable sources) or one mixed track.

Only the frames of the window are read, plus :data:`CONTEXT_S` of context (an edge may lie past a
loose annotation), from every track, resampled to the output rate: a channel per speaker
(multichannel), a file per speaker, clips laid on per-speaker virtual tracks (clip per turn), or
the mixed mono recording. A file that ends before a turn it should hold is an
:class:`~duetflow.errors.InputError` (``truncated_audio``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from duetflow.acoustics.source_bandwidth import BandwidthRecord, recording_bandwidth_hz
from duetflow.acoustics.window import Track
from duetflow.audio.bandlimit import energy_bandwidth_hz, lowpass
from duetflow.audio.io import Audio, AudioReader, audio_info, read_frames, resample
from duetflow.audio.mix import place
from duetflow.errors import InputError
from duetflow.records.dialogue import (
    Dialogue,
    MixedMonoSource,
    MultichannelSource,
    PerSpeakerSource,
    PerTurnSource,
    Turn,
)

_WINDOW_TOL_S = 0.5  # slack when deciding whether turn times are window-relative
_END_TOL_S = 0.05  # a file may end this much before the last annotated turn end
CONTEXT_S = 0.5  # read around the window: an edge may lie this far past a loose annotation


def band_limited(track: Track, sr: int, cutoff_hz: float | None) -> Track:
    """``track`` low-passed at ``cutoff_hz`` (zero-phase, :func:`duetflow.audio.bandlimit.lowpass`),
    remembering the cutoff so room tone read later from its recording gets the same."""
    if cutoff_hz is None:
        return track
    return replace(track, samples=lowpass(track.samples, sr, cutoff_hz), bandwidth_hz=cutoff_hz)


def bandwidth_record(tracks: Sequence[Track], sr: int, cutoff_hz: float | None) -> BandwidthRecord:
    """Provenance of the band-limit: the source's effective bandwidth (99 % energy, before the
    low-pass) and the cutoff applied.

    Tracks read from recordings (a channel, a file, the mixed recording) take their recording's
    figure, measured once per recording on its first
    :data:`~duetflow.acoustics.source_bandwidth.SPAN_S` seconds
    (:func:`~duetflow.acoustics.source_bandwidth.recording_bandwidth_hz`), so every window of a
    recording records the same value. Clip-per-turn tracks (no one recording: the window's clips
    are its sources, each read once) are measured on the tracks as read."""
    recordings = [t.recording for t in tracks if t.recording is not None]
    if tracks and len(recordings) == len(tracks):
        hz = recording_bandwidth_hz(recordings, sr)
    else:
        x = np.concatenate([t.samples for t in tracks]) if tracks else np.zeros(0, np.float32)
        hz = energy_bandwidth_hz(x, sr)
    return BandwidthRecord(hz, cutoff_hz)


def source_turns(d: Dialogue) -> tuple[Turn, ...]:
    """The dialogue's turns on the source timeline (window-relative turns are shifted)."""
    if d.window is None or not d.turns or d.window[0] <= 0:
        return d.turns
    w0, w1 = d.window
    lo = min(t.start for t in d.turns)
    hi = max(t.end for t in d.turns)
    if lo >= w0 - _WINDOW_TOL_S:
        return d.turns
    if hi <= (w1 - w0) + _WINDOW_TOL_S:
        return tuple(
            replace(
                t,
                start=t.start + w0,
                end=t.end + w0,
                annotated=None
                if t.annotated is None
                else (t.annotated[0] + w0, t.annotated[1] + w0),
            )
            for t in d.turns
        )
    raise InputError(
        d.id,
        f"turns span {lo:.3f}-{hi:.3f} s, neither inside window {w0:.3f}-{w1:.3f} s "
        "nor within its length",
        reason="bad_window",
    )


def _source_range(d: Dialogue, turns: Sequence[Turn], pad_s: float) -> tuple[float, float]:
    if d.window is not None:
        a, b = d.window
    else:
        a, b = 0.0, d.duration_s
    if turns:
        a = min(a, min(t.start for t in turns))
        b = max(b, max(t.end for t in turns))
    return max(0.0, a - pad_s), b + pad_s


def _read_range(
    path: str, t_a: float, t_b: float, sr_out: int, *, channel: int | None = None
) -> tuple[Audio, int, float]:
    """Frames of ``[t_a, t_b)`` (seconds) → (mono samples at sr_out, source sr, file end in s)."""
    info = audio_info(path)
    start = int(math.floor(t_a * info.sample_rate))
    stop = min(info.frames, int(math.ceil(t_b * info.sample_rate)))
    if stop <= start:
        return np.zeros(0, dtype=np.float32), info.sample_rate, info.duration_s
    if channel is not None and not 0 <= channel < info.channels:
        raise InputError(
            path, f"channel {channel} requested, file has {info.channels}", reason="bad_channels"
        )
    data, sr = read_frames(path, start, stop, channel=channel, mono=channel is None)
    return resample(data, sr, sr_out), sr, info.duration_s


def _fit(x: Audio, n: int) -> Audio:
    if len(x) == n:
        return x
    if len(x) > n:
        return x[:n]
    return np.concatenate((x, np.zeros(n - len(x), dtype=np.float32)))


def _check_end(path: str, file_end: float, turns: Sequence[Turn], who: str | None) -> None:
    need = max((t.end for t in turns if who is None or t.speaker == who), default=0.0)
    if need > file_end + _END_TOL_S:
        raise InputError(
            path,
            f"audio ends at {file_end:.3f} s but a turn ends at {need:.3f} s",
            reason="truncated_audio",
        )


def load_separable(
    d: Dialogue, turns: Sequence[Turn], sr: int, pad_s: float
) -> tuple[dict[str, Track], dict[str, int]]:
    """One track per speaker covering the window (plus pad), and the source's files with the
    sample rate of each (their headers, read here: the row's source rate needs no second
    read)."""
    t_a, t_b = _source_range(d, turns, pad_s)
    n = int(round((t_b - t_a) * sr))
    ids = [s.id for s in d.speakers]
    src = d.source
    tracks: dict[str, Track] = {}
    if isinstance(src, MultichannelSource):
        missing = [s for s in ids if s not in src.channels]
        if missing:
            raise InputError(src.path, f"no channel for speaker(s) {missing}", reason="bad_source")
        # the file opened once: its header checked, then each speaker's channel made straight
        # from its frames, read once
        with AudioReader(src.path) as reader:
            info = reader.info
            start = int(math.floor(t_a * info.sample_rate))
            stop = min(info.frames, int(math.ceil(t_b * info.sample_rate)))
            for s in ids:
                if not 0 <= src.channels[s] < info.channels:
                    raise InputError(
                        src.path,
                        f"speaker {s} on channel {src.channels[s]}, file has {info.channels}",
                        reason="bad_channels",
                    )
            _check_end(src.path, info.duration_s, turns, None)
            chans, file_sr = reader.read_channels(
                start, max(start, stop), [src.channels[s] for s in ids]
            )
        for s, ch in zip(ids, chans, strict=True):
            tracks[s] = Track(
                _fit(resample(ch, file_sr, sr), n),
                start / file_sr,
                recording=(src.path, src.channels[s]),
            )
        return tracks, {src.path: info.sample_rate}
    if isinstance(src, PerSpeakerSource):
        missing = [s for s in ids if s not in src.paths]
        if missing:
            raise InputError(d.id, f"no file for speaker(s) {missing}", reason="bad_source")
        rates: dict[str, int] = {}
        for s in ids:
            path = src.paths[s]
            x, file_sr, end = _read_range(path, t_a, t_b, sr, channel=src.channels.get(s))
            _check_end(path, end, turns, s)
            t0 = math.floor(t_a * file_sr) / file_sr
            tracks[s] = Track(_fit(x, n), t0, recording=(path, src.channels.get(s)))
            rates[path] = file_sr
        return tracks, rates
    if isinstance(src, PerTurnSource):
        return _load_per_turn(d, src, turns, sr, t_a, n)
    raise InputError(d.id, f"source kind {src.kind} is not separable", reason="bad_source")


def _load_per_turn(
    d: Dialogue, src: PerTurnSource, turns: Sequence[Turn], sr: int, t_a: float, n: int
) -> tuple[dict[str, Track], dict[str, int]]:
    """Per-speaker virtual tracks: each clip on its turn's speaker's track, silence elsewhere;
    and every clip's sample rate (each header read once)."""
    infos = [audio_info(p) for p in src.paths]
    if len(src.paths) == len(turns):
        # one clip per turn: the turn's annotation says where it lies (acoustic timing may
        # have moved start/end inside the clip)
        starts = [t.annotated_span[0] for t in turns]
    else:
        starts, pos = [], 0.0
        for inf in infos:
            starts.append(pos)
            pos += inf.duration_s
    # the speakers in dialogue order, never a set's: the tracks' order reaches measurements
    # over all of them (bandwidth_record), which must not change with the process's hash seed
    ids = list(dict.fromkeys(s.id for s in d.speakers))
    buf = {s: np.zeros(n, dtype=np.float32) for s in ids}
    material: dict[str, list[tuple[float, float]]] = {s: [] for s in ids}
    t_b = t_a + n / sr
    for k, (path, inf, c0) in enumerate(zip(src.paths, infos, starts, strict=True)):
        c1 = c0 + inf.duration_s
        if c1 <= t_a or c0 >= t_b:
            continue
        if len(src.paths) == len(turns):
            who: str | None = turns[k].speaker
            need = turns[k].annotated_span[1] - turns[k].annotated_span[0]
            if need > inf.duration_s + _END_TOL_S:
                raise InputError(
                    path,
                    f"clip lasts {inf.duration_s:.3f} s, turn {k} needs {need:.3f} s",
                    reason="truncated_audio",
                )
        else:
            mid = [t for t in turns if c0 <= (t.start + t.end) / 2 < c1]
            who = mid[0].speaker if mid else None
        if who is None or who not in ids:
            continue
        a, b = max(c0, t_a), min(c1, t_b)
        x, _, _ = _read_range(path, a - c0, b - c0, sr)
        at = int(round((a - t_a) * sr))
        place(buf[who], x, at)
        material[who].append((a, min(b, a + len(x) / sr)))
    tracks = {}
    for s in ids:
        spans = sorted(material[s])
        gaps, pos = [], t_a
        for a, b in spans:
            if a > pos:
                gaps.append((pos, a))
            pos = max(pos, b)
        if pos < t_b:
            gaps.append((pos, t_b))
        tracks[s] = Track(buf[s], t_a, tuple(gaps), tuple(spans))
    return tracks, {p: inf.sample_rate for p, inf in zip(src.paths, infos, strict=True)}


def load_mixed(
    d: Dialogue, src: MixedMonoSource, turns: Sequence[Turn], sr: int, pad_s: float
) -> tuple[Track, int]:
    """The mixed recording's track covering the window (plus ``pad_s``), and the file's sample
    rate."""
    t_a, t_b = _source_range(d, turns, pad_s)
    x, file_sr, end = _read_range(src.path, t_a, t_b, sr, channel=src.channel)
    _check_end(src.path, end, turns, None)
    t0 = math.floor(t_a * file_sr) / file_sr
    return Track(x, t0, recording=(src.path, src.channel)), file_sr
