"""Render one dialogue window to a FLAC file a listener (or a judge) hears.

Steps, in order (see docs/ARCHITECTURE.md, stage *render*):

1. **read** only the frames of the window (plus the trim pad) from every track, resampled to
   ``config.sample_rate``: one track per speaker for separable sources (multichannel, file per
   speaker, clip per turn), one mixed track for mixed mono;
2. **room tone**: the recording's quiet non-speech material (:mod:`duetflow.audio.roomtone`);
   its level is also the noise floor the trimmer works above;
3. **trim** each turn (mixed mono: each block of continuous talk; a latched speaker change,
   overlapping by no more than ``turns.min_overlap_s``, is cut at its quietest point so it can
   be re-timed like any other) to its acoustic extent;
4. **re-time** (:mod:`duetflow.audio.retime`): speaker changes get a seeded U[gap_ms_min,
   gap_ms_max] silence between extents, same-speaker pauses are capped;
5. **loudness**: each speaker's trimmed speech measured with BS.1770 and gained to the target;
   mixed mono gets a per-speaker gain curve (measured on non-overlapped speech), ramped at
   changes;
6. **assemble** over a room-tone bed (ducked under speech by the clips' raised-cosine
   envelopes, so there is no hard cut anywhere); one gain reduction of the whole dialogue keeps
   the true peak under the ceiling;
7. **close the gaps on the audio** (:mod:`duetflow.audio.gaps`): WebRTC VAD on the dialogue as
   the file will hold it measures every speaker-change gap; the following turns move by whole
   VAD frames until each measured gap is within a frame of its draw (re-measured after a move);
8. **write** mono audio atomically to ``out_dir/audio/<id>.flac`` (and two-channel stems if
   configured) and return the manifest rows. Turn rows carry the measured voicing offset at a
   change and the drawn gap after it, so row gaps are the drawn gaps.

Turn times in a windowed :class:`~duetflow.model.Dialogue` are on the source timeline (the
model's convention); windows whose turns are relative to the window start are recognised (all
turns lie before ``window[0]`` and fit in the window length) and shifted.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

import duetflow
from duetflow.audio import bs1770
from duetflow.audio import loudness as ld
from duetflow.audio.gaps import VoicingEdges, frame_samples, frame_shift
from duetflow.audio.io import Audio, audio_info, read_frames, resample, write_audio
from duetflow.audio.mix import fade_envelope, place, smooth_steps
from duetflow.audio.retime import (
    Block,
    edge_silence_s,
    layout_blocks,
    layout_turns,
    merge_blocks,
    mixed_speech_indices,
)
from duetflow.audio.roomtone import DIGITAL_SILENCE_DB, extract_room_tone, fill
from duetflow.audio.trim import acoustic_extent, frame_db, rms_db
from duetflow.config import RenderConfig, RunConfig
from duetflow.errors import InputError
from duetflow.licences import UNDECLARED
from duetflow.manifest import dumps
from duetflow.model import (
    Dialogue,
    MixedMonoSource,
    MultichannelSource,
    PerSpeakerSource,
    PerTurnSource,
    Turn,
    TurnKind,
    safe_id,
)
from duetflow.seeding import rng_for
from duetflow.source_rate import source_rate

log = logging.getLogger(__name__)

_WINDOW_TOL_S = 0.5  # slack when deciding whether turn times are window-relative
_END_TOL_S = 0.05  # a file may end this much before the last annotated turn end
_TONE_MARGIN_S = 0.1  # kept clear of annotated speech when collecting room tone


@dataclass(frozen=True)
class RenderedDialogue:
    """Manifest rows of one rendered dialogue (``RENDERED_DIALOGUE_SCHEMA`` / ``_TURN_SCHEMA``)."""

    row: dict[str, Any]
    turns: list[dict[str, Any]]


@dataclass(frozen=True)
class _Track:
    """Samples at the output rate; sample 0 is ``t0`` seconds on the source timeline."""

    samples: Audio
    t0: float
    gaps: tuple[tuple[float, float], ...] = ()  # source-time spans with no material (per-turn)

    def index(self, t: float, sr: int) -> int:
        return int(round((t - self.t0) * sr))

    @property
    def n(self) -> int:
        return len(self.samples)


# --- reading ------------------------------------------------------------------------------------


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
        return tuple(replace(t, start=t.start + w0, end=t.end + w0) for t in d.turns)
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


def _load_separable(
    d: Dialogue, turns: Sequence[Turn], sr: int, pad_s: float
) -> tuple[dict[str, _Track], list[str]]:
    """One track per speaker covering the window (plus pad)."""
    t_a, t_b = _source_range(d, turns, pad_s)
    n = int(round((t_b - t_a) * sr))
    ids = [s.id for s in d.speakers]
    src = d.source
    tracks: dict[str, _Track] = {}
    if isinstance(src, MultichannelSource):
        missing = [s for s in ids if s not in src.channels]
        if missing:
            raise InputError(src.path, f"no channel for speaker(s) {missing}", reason="bad_source")
        info = audio_info(src.path)
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
        data, file_sr = read_frames(src.path, start, max(start, stop))
        data2 = data.reshape(len(data), -1)
        for s in ids:
            ch = np.ascontiguousarray(data2[:, src.channels[s]])
            tracks[s] = _Track(_fit(resample(ch, file_sr, sr), n), start / file_sr)
        return tracks, [src.path]
    if isinstance(src, PerSpeakerSource):
        missing = [s for s in ids if s not in src.paths]
        if missing:
            raise InputError(d.id, f"no file for speaker(s) {missing}", reason="bad_source")
        for s in ids:
            path = src.paths[s]
            x, file_sr, end = _read_range(path, t_a, t_b, sr, channel=src.channels.get(s))
            _check_end(path, end, turns, s)
            t0 = math.floor(t_a * file_sr) / file_sr
            tracks[s] = _Track(_fit(x, n), t0)
        return tracks, [src.paths[s] for s in ids]
    if isinstance(src, PerTurnSource):
        return _load_per_turn(d, src, turns, sr, t_a, n), list(src.paths)
    raise InputError(d.id, f"source kind {src.kind} is not separable", reason="bad_source")


def _load_per_turn(
    d: Dialogue, src: PerTurnSource, turns: Sequence[Turn], sr: int, t_a: float, n: int
) -> dict[str, _Track]:
    """Per-speaker virtual tracks: each clip on its turn's speaker's track, silence elsewhere."""
    infos = [audio_info(p) for p in src.paths]
    if len(src.paths) == len(turns):
        starts = [t.start for t in turns]  # one clip per turn: the turn says where it lies
    else:
        starts, pos = [], 0.0
        for inf in infos:
            starts.append(pos)
            pos += inf.duration_s
    ids = {s.id for s in d.speakers}
    buf = {s: np.zeros(n, dtype=np.float32) for s in ids}
    material: dict[str, list[tuple[float, float]]] = {s: [] for s in ids}
    t_b = t_a + n / sr
    for k, (path, inf, c0) in enumerate(zip(src.paths, infos, starts, strict=True)):
        c1 = c0 + inf.duration_s
        if c1 <= t_a or c0 >= t_b:
            continue
        if len(src.paths) == len(turns):
            who: str | None = turns[k].speaker
            need = turns[k].end - turns[k].start
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
        tracks[s] = _Track(buf[s], t_a, tuple(gaps))
    return tracks


def _load_mixed(
    d: Dialogue, src: MixedMonoSource, turns: Sequence[Turn], sr: int, pad_s: float
) -> _Track:
    t_a, t_b = _source_range(d, turns, pad_s)
    x, file_sr, end = _read_range(src.path, t_a, t_b, sr, channel=src.channel)
    _check_end(src.path, end, turns, None)
    t0 = math.floor(t_a * file_sr) / file_sr
    return _Track(x, t0)


# --- analysis -----------------------------------------------------------------------------------


def _speech_regions(
    track: _Track, turns: Sequence[Turn], extra: Sequence[tuple[float, float]] = ()
) -> list[tuple[float, float]]:
    """Annotated speech (all speakers) + no-material spans, relative to the track start."""
    regions = [(t.start - track.t0, t.end - track.t0) for t in turns]
    regions += [(a - track.t0, b - track.t0) for a, b in (*track.gaps, *extra)]
    return regions


def _tone_for(track: _Track, turns: Sequence[Turn], sr: int) -> Audio | None:
    return extract_room_tone(
        track.samples, sr, _speech_regions(track, turns), margin_s=_TONE_MARGIN_S
    )


def _level(tone: Audio | None) -> float | None:
    return rms_db(tone) if tone is not None else None


def _material_floor_db(track: _Track, sr: int) -> float | None:
    """A rough noise floor: the 5th percentile of 10 ms frame levels where the track has audio."""
    n = max(1, sr // 100)
    levels = frame_db(track.samples, n)
    keep = levels > DIGITAL_SILENCE_DB
    for a, b in track.gaps:
        keep[max(0, track.index(a, sr) // n) : max(0, track.index(b, sr) // n + 1)] = False
    if not keep.any():
        return None
    return float(np.percentile(levels[keep], 5))


def _tone_between_extents(
    track: _Track, speaker: str, turns: Sequence[Turn], sr: int
) -> Audio | None:
    """Room tone from the slack around a speaker's turns (clip-per-turn sources, dense labels).

    A first trimming pass over a percentile floor finds the acoustic extents; what lies outside
    them (and outside the other speakers' turns) is the recording's background.
    """
    floor = _material_floor_db(track, sr)
    if floor is None:
        return None
    regions: list[tuple[float, float]] = []
    for t in turns:
        if t.speaker != speaker:
            regions.append((t.start - track.t0, t.end - track.t0))
            continue
        ext = _extent(track, t.start, t.end, sr, floor)
        if ext is not None:
            regions.append((ext[0] / sr, ext[1] / sr))
    regions += [(a - track.t0, b - track.t0) for a, b in track.gaps]
    return extract_room_tone(track.samples, sr, regions, min_len_s=0.1, margin_s=0.03)


def _extent(
    track: _Track, a: float, b: float, sr: int, floor_db: float | None
) -> tuple[int, int] | None:
    """Acoustic extent of source span ``[a, b]`` as track sample indices."""
    i0, i1 = max(0, track.index(a, sr)), min(track.n, track.index(b, sr))
    if i1 <= i0:
        return None
    ext = acoustic_extent(track.samples[i0:i1], sr, floor_db)
    if ext is None:
        return None
    return i0 + ext[0], i0 + ext[1]


def _measure(chunks: Sequence[Audio], sr: int) -> ld.Loudness:
    if not chunks:
        return ld.Loudness(ld.SILENCE_LUFS, "silent")
    return bs1770.measure(np.concatenate(chunks), sr)


# --- assembly -----------------------------------------------------------------------------------

_MAX_GAP_SHIFT_S = 0.2  # a measured gap further than this from the plan is not corrected
_ROUNDS = 3  # gap measurements per dialogue, at most
_CUT_SEARCH_S = 0.02  # a latched speaker change in a mix is cut within this of the overlap
_CUT_FRAME_S = 0.005


@dataclass(frozen=True)
class _Clip:
    """One piece of the output: gained, faded samples that move with main item ``group``."""

    group: int
    stem: int | None  # stem channel (speaker position) or None
    data: Audio  # samples x gain x fade envelope
    env: Audio  # the fade envelope (ducks the room-tone bed)
    at: int  # provisional output index of data[0]
    e0: int  # acoustic extent inside data
    e1: int


@dataclass(frozen=True)
class _Change:
    """A drawn speaker-change gap between main items ``after`` and ``after + 1``."""

    after: int
    gap_s: float


@dataclass
class _Mix:
    out: Audio
    stems: Audio | None
    shifts: list[int]  # per main item, samples added to its provisional position
    edges: list[tuple[int, int] | None]  # per change: measured (offset, onset), final samples
    ceiling_db: float


def _assemble(
    clips: Sequence[_Clip], shifts: Sequence[int], n: int, bed: Audio | None, n_stems: int
) -> tuple[Audio, Audio | None]:
    """Lay the clips over the room-tone bed, ducked under speech by the clips' envelopes."""
    out = np.zeros(n, dtype=np.float32)
    weight = np.zeros(n, dtype=np.float32)
    stem_layer = [np.zeros(n, dtype=np.float32) for _ in range(n_stems)]
    stem_weight = [np.zeros(n, dtype=np.float32) for _ in range(n_stems)]
    for c in clips:
        at = c.at + shifts[c.group]
        place(out, c.data, at)
        place(weight, c.env, at)
        if n_stems and c.stem is not None:
            place(stem_layer[c.stem], c.data, at)
            place(stem_weight[c.stem], c.env, at)
    stems = None
    if n_stems:
        chans = []
        for layer, w in zip(stem_layer, stem_weight, strict=True):
            if bed is not None:
                layer += bed[:n] * (1.0 - np.minimum(w, 1.0))
            chans.append(layer)
        stems = np.stack(chans, axis=1).astype(np.float32)
    if bed is not None:  # out += bed * (1 - min(weight, 1)), in place
        np.minimum(weight, 1.0, out=weight)
        np.subtract(1.0, weight, out=weight)
        weight *= bed[:n]
        out += weight
    return out, stems


def _bed(tone: Audio | None, n: int, gain_db: float, rng: np.random.Generator, sr: int) -> Audio:
    assert tone is not None
    return fill(tone, n, rng, max(1, int(0.01 * sr))) * np.float32(ld.db_to_gain(gain_db))


def _mixdown(
    clips: Sequence[_Clip],
    spans: Sequence[tuple[int, int]],
    changes: Sequence[_Change],
    duration_s: float,
    sr: int,
    cfg: RenderConfig,
    bed_tone: tuple[Audio, float] | None,
    rng: np.random.Generator,
    n_stems: int,
) -> _Mix:
    """Assemble, measure every speaker-change gap with VAD, move turns by whole frames, repeat.

    ``spans`` are each main item's acoustic extent in provisional output samples. See
    :mod:`duetflow.audio.gaps` for why the loop is closed on the audio itself. A move changes
    the detector's context (a shorter run of room tone before an onset), which now and then
    moves a decision by a frame, so the result is measured again until every gap sits within a
    frame of its draw (at most ``_ROUNDS`` measurements; in practice one or two).
    """
    frame_n = frame_samples(sr)
    n0 = -(-int(round(duration_s * sr)) // frame_n) * frame_n  # a whole number of VAD frames
    bed0 = _bed(bed_tone[0], n0, bed_tone[1], rng, sr) if bed_tone is not None else None
    shifts = [0] * len(spans)
    out, stems = _assemble(clips, shifts, n0, bed0, n_stems)
    ceiling = bs1770.ceiling_gain_db(out, sr, cfg.true_peak_ceiling_dbtp)
    limit = int(_MAX_GAP_SHIFT_S * sr)
    rel: list[tuple[int, int] | None] = [None] * len(changes)  # edges relative to their items
    for rnd in range(_ROUNDS if changes else 0):
        # measure what the file will hold: the level after the ceiling and 16-bit samples (a
        # decision at an edge can flip on a least significant bit)
        voicing = VoicingEdges.measure(_as_written(out, ceiling), sr)
        deltas = [0] * len(spans)
        for c, ch in enumerate(changes):
            k = ch.after
            lo, end = (v + shifts[k] for v in spans[k])
            start, hi = (v + shifts[k + 1] for v in spans[k + 1])
            edge = voicing.gap_at((end + start) // 2, lo, hi)
            if edge is None:
                log.debug("no voicing edge at the change after item %d (round %d)", k, rnd)
                continue
            rel[c] = (edge[0] - shifts[k], edge[1] - shifts[k + 1])
            # first round: the nearest whole frame; later ones only move a gap still more than
            # a frame off (a decision that flips with its context cannot be pinned closer)
            tol = frame_n // 2 if rnd == 0 else frame_n
            step = frame_shift(
                edge[1] - edge[0], int(round(ch.gap_s * sr)), frame_n, limit, tolerance_n=tol
            )
            deltas[k + 1] = max(step, -((start - end) // frame_n) * frame_n)  # extents never meet
        if not any(deltas):
            break
        shifts = [s + d for s, d in zip(shifts, itertools.accumulate(deltas), strict=True)]
        n1 = n0 + shifts[-1]
        bed = _shift_bed(bed0, spans, shifts, n1) if bed0 is not None else None
        out, stems = _assemble(clips, shifts, n1, bed, n_stems)
        # the same clips at the same level: keep the measured level unless room tone moved
        # under a join pushed a true peak over the ceiling
        peak = bs1770.true_peak_dbtp(out, sr) + ceiling
        if peak > cfg.true_peak_ceiling_dbtp - 0.02:
            extra = cfg.true_peak_ceiling_dbtp - 0.05 - peak
            log.info("true peak moved after re-timing: %.3f dB more reduction", extra)
            ceiling += extra
    else:
        if changes:
            log.info("gaps still moving after %d measurements; last moves unmeasured", _ROUNDS)
    edges: list[tuple[int, int] | None] = [
        None if e is None else (e[0] + shifts[ch.after], e[1] + shifts[ch.after + 1])
        for ch, e in zip(changes, rel, strict=True)
    ]
    return _Mix(out, stems, shifts, edges, ceiling)


def _as_written(x: Audio, gain_db: float) -> Audio:
    """``x`` at ``gain_db`` as 16-bit PCM would hold it (what the file and its readers see)."""
    y = x * np.float32(ld.db_to_gain(gain_db)) if gain_db < 0 else x
    q: Audio = np.clip(y, -1.0, 1.0 - 1.0 / 32768).astype(np.float32)
    q *= np.float32(32768.0)
    np.rint(q, out=q)
    q *= np.float32(1.0 / 32768.0)
    return q


def _shift_bed(
    bed: Audio, spans: Sequence[tuple[int, int]], shifts: Sequence[int], n: int
) -> Audio:
    """The bed cut at mid-gap and moved with the items, so the room tone under and around every
    turn is the very noise the gaps were measured with (only mid-gap length changes)."""
    out = np.empty(n, dtype=np.float32)
    lo = 0
    for k, sh in enumerate(shifts):
        if k + 1 < len(shifts):
            mid = (spans[k][1] + spans[k + 1][0]) // 2
            hi = mid + sh + (shifts[k + 1] - sh) // 2
        else:
            hi = n
        hi = min(max(hi, lo), n)
        out[lo:hi] = bed[lo - sh : hi - sh]
        lo = hi
    return out


def _row_bounds(
    spans: Sequence[tuple[int, int]], changes: Sequence[_Change], mix: _Mix, sr: int
) -> list[tuple[int, int]]:
    """Final output span of each main item as its rows report it.

    The acoustic extent, except at a measured speaker change: the previous item ends at the
    measured voicing offset and the next starts exactly the drawn gap later (within half a VAD
    frame of its measured onset), so turn rows carry the drawn gaps.
    """
    out = [(a + s, b + s) for (a, b), s in zip(spans, mix.shifts, strict=True)]
    for ch, edge in zip(changes, mix.edges, strict=True):
        if edge is None:
            continue
        off = edge[0]
        k = ch.after
        start = off + int(round(ch.gap_s * sr))
        if out[k][0] < off and start < out[k + 1][1]:
            out[k] = (out[k][0], off)
            out[k + 1] = (start, out[k + 1][1])
    return out


# --- rendering ----------------------------------------------------------------------------------


@dataclass
class _Result:
    out: Audio
    stems: Audio | None
    rows: list[dict[str, Any]]
    gaps: list[float]
    loud: dict[str, ld.Loudness]
    gains: dict[str, float]
    tone: dict[str, Any]
    dropped: list[int]
    ceiling_db: float


def _tone_meta(cfg: RenderConfig, used: bool, **kw: Any) -> dict[str, Any]:
    if used:
        return {"used": True, **kw}
    if not cfg.room_tone:
        return {"used": False, "reason": "render.room_tone is false"}
    return {"used": False, "reason": "no non-speech material or digital silence"}


def _render_separable(
    d: Dialogue, turns: Sequence[Turn], config: RunConfig, rng: np.random.Generator
) -> tuple[_Result, list[str]]:
    cfg, sr = config.render, config.sample_rate
    pad_s = cfg.trim_pad_ms / 1000.0
    pad_n, fade_n = int(round(pad_s * sr)), max(1, int(round(cfg.fade_ms / 1000.0 * sr)))
    tracks, files = _load_separable(d, turns, sr, pad_s)
    ids = [s.id for s in d.speakers]
    for t in turns:
        if t.speaker not in tracks:
            raise InputError(
                d.id, f"turn speaker {t.speaker!r} is not a dialogue speaker", reason="bad_speaker"
            )
    tones = {s: _tone_for(tracks[s], turns, sr) for s in ids}
    for s in ids:
        if tones[s] is None:  # annotations leave no room: look between acoustic extents instead
            tones[s] = _tone_between_extents(tracks[s], s, turns, sr)
    floors = {s: _level(tones[s]) for s in ids}

    # trim each turn to its energy extent (what the clip keeps)
    extents: dict[int, tuple[int, int]] = {}
    dropped: list[int] = []
    for i, t in enumerate(turns):
        if t.kind == TurnKind.NONSPEECH:
            continue
        ext = _extent(tracks[t.speaker], t.start, t.end, sr, floors[t.speaker])
        if ext is None:
            if t.kind == TurnKind.BACKCHANNEL:
                dropped.append(i)
                continue
            raise InputError(
                d.id,
                f"turn {i} ({t.speaker}, {t.start:.3f}-{t.end:.3f} s) has no audible speech",
                reason="silent_turn",
            )
        extents[i] = ext

    # loudness per speaker on exactly the trimmed speech that is rendered
    drop_bc = cfg.backchannels == "drop"
    chunks: dict[str, list[Audio]] = {s: [] for s in ids}
    for i, (i0, i1) in extents.items():
        if not (drop_bc and turns[i].kind == TurnKind.BACKCHANNEL):
            chunks[turns[i].speaker].append(tracks[turns[i].speaker].samples[i0:i1])
    loud = {s: _measure(chunks[s], sr) for s in ids}
    gains = {s: ld.gain_to_target(loud[s].lufs, cfg.loudness_target_lufs) for s in ids}

    trimmed: list[Turn] = []
    for i, t in enumerate(turns):
        if i not in extents:
            trimmed.append(replace(t, kind=TurnKind.NONSPEECH))
            continue
        t0, (i0, i1) = tracks[t.speaker].t0, extents[i]
        trimmed.append(replace(t, start=t0 + i0 / sr, end=t0 + i1 / sr))
    lead = edge_silence_s(cfg)
    tl = layout_turns(trimmed, cfg, rng, lead_s=lead, tail_s=lead)

    # clips, each moving with its main turn (a kept backchannel with its host)
    group = {p.index: k for k, p in enumerate(tl.mains)}
    stem_of = {s: k for k, s in enumerate(ids)} if cfg.stems else {}
    clips: list[_Clip] = []
    spans: list[tuple[int, int]] = [(0, 0)] * len(group)
    for p in tl.placements:
        tr = tracks[p.speaker]
        i0, i1 = extents[p.index]
        a, b = max(0, i0 - pad_n), min(tr.n, i1 + pad_n)
        at = int(round(p.out_start * sr)) - (i0 - a)
        env = fade_envelope(b - a, fade_n)
        data = tr.samples[a:b] * (env * np.float32(ld.db_to_gain(gains[p.speaker])))
        g = group[p.index if p.host is None else p.host]
        clips.append(_Clip(g, stem_of.get(p.speaker), data, env, at, i0 - a, i1 - a))
        if p.host is None:
            spans[g] = (at + i0 - a, at + i1 - a)
    changes = [_Change(k, g) for k, g in zip(tl.change_after, tl.gaps_s, strict=True)]

    usable = [s for s in ids if tones[s] is not None]
    bed_tone: tuple[Audio, float] | None = None
    tone_meta = _tone_meta(cfg, False)
    if cfg.room_tone and usable:
        src_s = min(usable, key=lambda s: floors[s] or -math.inf)
        tone = tones[src_s]
        assert tone is not None
        bed_tone = (tone, gains[src_s])
        tone_meta = _tone_meta(
            cfg,
            True,
            from_speaker=src_s,
            rms_dbfs=round(float(floors[src_s] or -math.inf), 2),
            material_s=round(len(tone) / sr, 3),
        )
    mix = _mixdown(
        clips, spans, changes, tl.duration_s, sr, cfg, bed_tone, rng, len(ids) if cfg.stems else 0
    )
    bounds = _row_bounds(spans, changes, mix, sr)
    rows = []
    for p, c in zip(tl.placements, clips, strict=True):
        if p.host is None:
            s0, s1 = bounds[c.group]
        else:
            at = c.at + mix.shifts[c.group]
            s0, s1 = at + c.e0, at + c.e1
        rows.append(_turn_row(d, p.index, p.host is not None, s0 / sr, s1 / sr))
    dropped_all = sorted({*dropped, *tl.dropped})
    res = _Result(
        mix.out, mix.stems, rows, list(tl.gaps_s), loud, gains, tone_meta, dropped_all,
        mix.ceiling_db,
    )  # fmt: skip
    return res, files


def _quietest(x: Audio, i0: int, i1: int, sr: int) -> int:
    """Sample index at the centre of the quietest 5 ms frame of ``x[i0:i1]``."""
    n = max(1, int(_CUT_FRAME_S * sr))
    if i1 - i0 < n:
        return (i0 + i1) // 2
    levels = frame_db(x[i0:i1], n)
    return i0 + int(np.argmin(levels)) * n + n // 2


def _block_bounds(track: _Track, blocks: Sequence[Block], sr: int) -> list[tuple[float, float]]:
    """Source-time range each block's audio may come from.

    Blocks that overlap (a latched speaker change, see :func:`~duetflow.audio.retime.merge_blocks`)
    are cut at the quietest point around the overlap, so neither keeps the other's voice.
    """
    bounds = [(b.start, b.end) for b in blocks]
    m = _CUT_SEARCH_S
    for k in range(len(blocks) - 1):
        e, s = blocks[k].end, blocks[k + 1].start
        if s >= e:
            continue
        lo = max(track.index(s - m, sr), track.index(blocks[k].start, sr), 0)
        hi = min(track.index(e + m, sr), track.index(blocks[k + 1].end, sr), track.n)
        c = track.t0 + _quietest(track.samples, lo, hi, sr) / sr
        bounds[k] = (bounds[k][0], c)
        bounds[k + 1] = (c, bounds[k + 1][1])
    return bounds


def _render_mixed(
    d: Dialogue, turns: Sequence[Turn], config: RunConfig, rng: np.random.Generator
) -> tuple[_Result, list[str]]:
    cfg, sr = config.render, config.sample_rate
    src = d.source
    assert isinstance(src, MixedMonoSource)
    pad_s = cfg.trim_pad_ms / 1000.0
    pad_n, fade_n = int(round(pad_s * sr)), max(1, int(round(cfg.fade_ms / 1000.0 * sr)))
    track = _load_mixed(d, src, turns, sr, pad_s)
    ids = [s.id for s in d.speakers]
    tone = _tone_for(track, turns, sr)
    floor = rms_db(tone) if tone is not None else None

    keep, dropped = mixed_speech_indices(turns, cfg)
    raw_blocks = merge_blocks(turns, keep, config.turns.min_overlap_s)
    extents: list[tuple[int, int]] = []
    for blk, (b0, b1) in zip(raw_blocks, _block_bounds(track, raw_blocks, sr), strict=True):
        ext = _extent(track, b0, b1, sr, floor)
        if ext is None:
            raise InputError(
                src.path,
                f"no audible speech in {blk.start:.3f}-{blk.end:.3f} s (turns {list(blk.members)})",
                reason="silent_turn",
            )
        extents.append(ext)

    # who speaks alone where (track samples), for measurement and the gain curve
    masks = {s: np.zeros(track.n, dtype=bool) for s in ids}
    for i in keep:
        t = turns[i]
        if t.speaker in masks:
            masks[t.speaker][max(0, track.index(t.start, sr)) : track.index(t.end, sr)] = True
    inside = np.zeros(track.n, dtype=bool)
    for i0, i1 in extents:
        inside[i0:i1] = True
    alone_of: dict[str, np.ndarray] = {}
    for s in ids:
        others = np.zeros(track.n, dtype=bool)
        for o in ids:
            if o != s:
                others |= masks[o]
        alone_of[s] = masks[s] & ~others
    loud: dict[str, ld.Loudness] = {}
    for s in ids:
        alone = alone_of[s] & inside
        if not alone.any():
            alone = masks[s] & inside
        loud[s] = (
            bs1770.measure(track.samples[alone], sr)
            if alone.any()
            else ld.Loudness(ld.SILENCE_LUFS, "silent")
        )
    gains = {s: ld.gain_to_target(loud[s].lufs, cfg.loudness_target_lufs) for s in ids}
    mid_db = float(np.mean([gains[s] for s in ids]))
    g = np.full(track.n, ld.db_to_gain(mid_db), dtype=np.float64)
    for s in ids:
        g[alone_of[s]] = ld.db_to_gain(gains[s])

    blocks = [
        replace(blk, start=track.t0 + i0 / sr, end=track.t0 + i1 / sr)
        for blk, (i0, i1) in zip(raw_blocks, extents, strict=True)
    ]
    lead = edge_silence_s(cfg)
    starts, gaps, after, duration = layout_blocks(blocks, cfg, rng, lead_s=lead, tail_s=lead)

    # clip bounds: the pad never reaches into the neighbouring block's speech
    lims = [(0, track.n) for _ in blocks]
    for k in range(len(blocks) - 1):
        e1, n0 = extents[k][1], extents[k + 1][0]
        if n0 - e1 < 2 * pad_n:
            mid = (e1 + n0) // 2
            lims[k] = (lims[k][0], mid)
            lims[k + 1] = (mid, lims[k + 1][1])
    clips: list[_Clip] = []
    spans: list[tuple[int, int]] = []
    for k, ((i0, i1), o_start) in enumerate(zip(extents, starts, strict=True)):
        a, b = max(lims[k][0], i0 - pad_n), min(lims[k][1], i1 + pad_n)
        at = int(round(o_start * sr)) - (i0 - a)
        env = fade_envelope(b - a, fade_n)
        data = track.samples[a:b] * smooth_steps(g[a:b], fade_n) * env
        clips.append(_Clip(k, None, data, env, at, i0 - a, i1 - a))
        spans.append((at + i0 - a, at + i1 - a))
    changes = [_Change(k, gap) for k, gap in zip(after, gaps, strict=True)]
    bed_tone = (tone, mid_db) if cfg.room_tone and tone is not None else None
    mix = _mixdown(clips, spans, changes, duration, sr, cfg, bed_tone, rng, 0)
    bounds = _row_bounds(spans, changes, mix, sr)

    rows = []
    for k, (blk, (lo, hi)) in enumerate(zip(blocks, bounds, strict=True)):
        shift = (spans[k][0] + mix.shifts[k]) / sr - blk.start  # source -> output time
        solo = len(blk.members) == 1
        mains = [i for i in blk.members if turns[i].kind == TurnKind.TURN] or list(blk.members)
        first = min(mains, key=lambda i: (turns[i].start, i))
        last = max(mains, key=lambda i: (turns[i].end, -i))
        for i in sorted(blk.members, key=lambda i: (turns[i].start, i)):
            t = turns[i]
            # the block's edges are its first and last main turn's edges (gaps are drawn there)
            start = lo / sr if i == first else min(max(t.start + shift, lo / sr), hi / sr)
            end = hi / sr if i == last else min(max(t.end + shift, lo / sr), hi / sr)
            hosted = t.kind == TurnKind.BACKCHANNEL and not solo
            rows.append(_turn_row(d, i, hosted, start, end))
    if bed_tone is not None:
        tone_meta = _tone_meta(
            cfg,
            True,
            from_speaker="mix",
            rms_dbfs=round(float(floor or -math.inf), 2),
            material_s=round(len(bed_tone[0]) / sr, 3),
        )
    else:
        tone_meta = _tone_meta(cfg, False)
    if cfg.stems:
        log.info("%s: stems are not available for a mixed mono source", d.id)
        tone_meta["stems"] = "unavailable for mixed mono"
    res = _Result(mix.out, None, rows, gaps, loud, gains, tone_meta, dropped, mix.ceiling_db)
    return res, [src.path]


def _turn_row(d: Dialogue, index: int, hosted: bool, start: float, end: float) -> dict[str, Any]:
    """A rendered turn row; ``hosted``: a backchannel inside another speaker's turn (a
    stand-alone backchannel is laid out, and reported, as an ordinary turn)."""
    o = d.turns[index]
    return {
        "dialogue_id": d.id,
        "turn_index": 0,  # renumbered in output order
        "speaker": o.speaker,
        "kind": str(TurnKind.BACKCHANNEL if hosted else TurnKind.TURN),
        "start_s": round(start, 6),
        "end_s": round(end, 6),
        "orig_start_s": float(o.start),
        "orig_end_s": float(o.end),
        "text": o.text,
    }


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def render_dialogue(dialogue: Dialogue, config: RunConfig, out_dir: Path) -> RenderedDialogue:
    """Render one window to ``out_dir/audio/<id>.<fmt>`` and return its manifest rows.

    Raises :class:`~duetflow.errors.InputError` for audio that cannot be rendered (missing,
    truncated, silent turns); the caller turns it into a ``Stage.RENDER`` rejection.
    """
    cfg, sr = config.render, config.sample_rate
    d = dialogue
    turns = source_turns(d)
    rng = rng_for(config.seed, d.id)
    if isinstance(d.source, MixedMonoSource):
        res, files = _render_mixed(d, turns, config, rng)
    else:
        res, files = _render_separable(d, turns, config, rng)

    ceiling = res.ceiling_db
    out, stems = res.out, res.stems
    if ceiling < 0:
        scale = np.float32(ld.db_to_gain(ceiling))
        out = out * scale
        stems = stems * scale if stems is not None else None
    if not np.any(out):
        raise InputError(d.id, "rendered audio is all silence", reason="silent_turn")

    out_dir = Path(out_dir)
    name = safe_id(d.id)
    rel = f"audio/{name}.{cfg.audio_format}"
    path = write_audio(out_dir / rel, out, sr, audio_format=cfg.audio_format)
    stems_rel = None
    if stems is not None:
        stems_rel = f"stems/{name}.{cfg.audio_format}"
        write_audio(out_dir / stems_rel, stems, sr, audio_format=cfg.audio_format)

    a, b = d.speaker_a.id, d.speaker_b.id
    total = {s: res.gains.get(s, 0.0) + ceiling for s in (a, b)}
    rendered = {
        s: (res.loud[s].lufs + total[s] if res.loud[s].lufs > ld.SILENCE_LUFS else ld.SILENCE_LUFS)
        for s in (a, b)
    }
    rows = sorted(res.rows, key=lambda r: (r["start_s"], r["orig_start_s"]))
    for k, r in enumerate(rows):
        r["turn_index"] = k
    src_rate = source_rate(d.source, sr)  # trainers (issue 16): source rate + resampling
    provenance = {
        "source_kind": d.source.kind,
        "source_files": files,
        "window": list(d.window) if d.window else None,
        "orig_turns": [[t.speaker, str(t.kind), t.start, t.end] for t in d.turns],
        "dropped_turns": res.dropped,
        "gaps_ms": [round(g * 1000, 3) for g in res.gaps],
        "loudness": {
            s: {"measured_lufs": round(res.loud[s].lufs, 3), "method": res.loud[s].method}
            for s in (a, b)
        },
        "ceiling_gain_db": round(ceiling, 4),
        "room_tone": res.tone,
        "stems_path": stems_rel,
        "seed": config.seed,
        "config_hash": config.section_hash("render", "sample_rate", "seed"),
        "code_version": duetflow.__version__,
        "input": dict(d.provenance),
        "resampling": src_rate.resampling,
    }
    gaps_ms = [g * 1000 for g in res.gaps]
    row = {
        "dialogue_id": d.id,
        "source_id": d.source_id,
        "corpus": d.corpus,
        "category": str(d.category),
        "language": d.language,
        "topic": d.topic,
        "speaker_a": a,
        "speaker_b": b,
        "audio_path": rel,
        "sha256": _sha256(path),
        "duration_s": len(out) / sr,
        "sample_rate": sr,
        "num_channels": 1,
        "n_turns": len(rows),
        "loudness_lufs_a": round(rendered[a], 4),
        "loudness_lufs_b": round(rendered[b], 4),
        "gain_db_a": round(total[a], 4),
        "gain_db_b": round(total[b], 4),
        "gap_ms_min": round(min(gaps_ms), 3) if gaps_ms else None,
        "gap_ms_max": round(max(gaps_ms), 3) if gaps_ms else None,
        "provenance": dumps(provenance),
        # -- trainers (issue 16): licence and source sample rate per dialogue --
        "licence": d.licence or UNDECLARED,
        "source_sample_rate": src_rate.sample_rate,
    }
    log.debug("rendered %s: %.2f s, %d turns", d.id, row["duration_s"], len(rows))
    return RenderedDialogue(row, rows)
