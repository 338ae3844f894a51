"""Render one dialogue window to a FLAC file a listener (or a judge) hears.

Steps, in order (see docs/ARCHITECTURE.md, stage *render*; the definitions are in
docs/turn-taking.md, *Gaps* and *Room tone*):

1. **read** only the frames of the window, plus half a second of context (an edge may lie past
   a loose annotation), from every track, resampled to ``config.sample_rate``: one track per
   speaker for separable sources (multichannel, file per speaker, clip per turn), one mixed
   track for mixed mono;
2. **floor**: each track's background (:mod:`duetflow.source_acoustics`), measured where no
   turn of any speaker is annotated, never on the other speaker's crosstalk; the rest of the
   recording when the window holds too little (:mod:`duetflow.tone_sources`);
3. **edges**: each turn (mixed mono: each block of continuous talk; a latched speaker change,
   overlapping by no more than ``turns.min_overlap_s``, is cut at its quietest point so it can
   be re-timed like any other) is located by its annotation and trimmed to its acoustic extent
   (:mod:`duetflow.audio.edges`);
4. **loudness**: each speaker's trimmed speech measured with BS.1770 and gained to the target;
   mixed mono gets a per-speaker gain curve (measured on non-overlapped speech), ramped at
   changes;
5. **floor of the file**: the loudest background after gain; room tone from that track (its
   pauses, its recording's, or noise of its spectrum), and every edge measured again down to
   that floor in its own track's scale, so the edges placed are the edges the file will show;
6. **re-time** (:mod:`duetflow.audio.retime`): speaker changes get a seeded U[gap_ms_min,
   gap_ms_max] pause between acoustic extents, same-speaker pauses are capped;
7. **mix down** (:mod:`duetflow.mixdown`): clips over one steady floor, the true peak under the
   ceiling, every speaker-change gap measured on the file's samples and corrected where it is
   off its draw;
8. **write** mono audio atomically to ``out_dir/audio/<id>.flac`` (and two-channel stems if
   configured) and return the manifest rows. At every change the turn rows carry the measured
   edges, so a row gap is the acoustic gap of the file.

Turn times in a windowed :class:`~duetflow.model.Dialogue` are on the source timeline (the
model's convention); windows whose turns are relative to the window start are recognised (all
turns lie before ``window[0]`` and fit in the window length) and shifted.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

import duetflow
from duetflow import source_acoustics
from duetflow.audio import bs1770, edges, roomtone
from duetflow.audio import loudness as ld
from duetflow.audio.io import Audio, audio_info, read_frames, resample, to_pcm16, write_audio
from duetflow.audio.mix import fade_envelope, place, smooth_steps
from duetflow.audio.retime import (
    Block,
    edge_silence_s,
    layout_blocks,
    layout_turns,
    merge_blocks,
    mixed_speech_indices,
)
from duetflow.audio.trim import frame_db, rms_db
from duetflow.config import RenderConfig, RunConfig
from duetflow.errors import InputError
from duetflow.licences import UNDECLARED
from duetflow.manifest import dumps
from duetflow.mixdown import Bed, Change, Clip, Mix, mixdown
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
from duetflow.records import RenderedDialogueRow, RenderedTurnRow
from duetflow.seeding import rng_for
from duetflow.source_rate import source_rate
from duetflow.tone_sources import RecordingTone, recording_tone

log = logging.getLogger(__name__)

_WINDOW_TOL_S = 0.5  # slack when deciding whether turn times are window-relative
_END_TOL_S = 0.05  # a file may end this much before the last annotated turn end


@dataclass(frozen=True)
class RenderedDialogue:
    """The typed records of one rendered dialogue (:mod:`duetflow.records`)."""

    record: RenderedDialogueRow
    turn_records: tuple[RenderedTurnRow, ...]

    @property
    def row(self) -> dict[str, Any]:
        """The dialogue record as a table row (what a writer takes)."""
        return self.record.to_row()

    @property
    def turns(self) -> list[dict[str, Any]]:
        """The turn records as table rows, in output order."""
        return [t.to_row() for t in self.turn_records]


@dataclass(frozen=True)
class _Track:
    """Samples at the output rate; sample 0 is ``t0`` seconds on the source timeline."""

    samples: Audio
    t0: float
    gaps: tuple[tuple[float, float], ...] = ()  # source-time spans with no material (per-turn)
    pieces: tuple[tuple[float, float], ...] = ()  # source-time spans of each clip (per-turn)
    recording: tuple[str, int | None] | None = None  # (file, channel) the track is read from

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
            tracks[s] = _Track(
                _fit(resample(ch, file_sr, sr), n),
                start / file_sr,
                recording=(src.path, src.channels[s]),
            )
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
            tracks[s] = _Track(_fit(x, n), t0, recording=(path, src.channels.get(s)))
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
        # one clip per turn: the turn's annotation says where it lies (acoustic timing may
        # have moved start/end inside the clip)
        starts = [t.annotated_span[0] for t in turns]
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
        tracks[s] = _Track(buf[s], t_a, tuple(gaps), tuple(spans))
    return tracks


def _load_mixed(
    d: Dialogue, src: MixedMonoSource, turns: Sequence[Turn], sr: int, pad_s: float
) -> _Track:
    t_a, t_b = _source_range(d, turns, pad_s)
    x, file_sr, end = _read_range(src.path, t_a, t_b, sr, channel=src.channel)
    _check_end(src.path, end, turns, None)
    t0 = math.floor(t_a * file_sr) / file_sr
    return _Track(x, t0, recording=(src.path, src.channel))


# --- analysis -----------------------------------------------------------------------------------

_CONTEXT_S = 0.5  # read around the window: an edge may lie this far past a loose annotation
_REACH_S = 0.05  # background is judged only this close around the window's own turns
_MIN_TONE_S = 1.0  # less room tone than this in the window: look in the rest of the recording
_CUT_SEARCH_S = 0.02  # a latched speaker change in a mix is cut within this of the overlap
_CUT_FRAME_S = 0.005


def _spans(track: _Track, turns: Sequence[Turn], sr: int) -> list[tuple[float, float]]:
    """Every turn's annotated span in track samples."""
    return [((t.start - track.t0) * sr, (t.end - track.t0) * sr) for t in turns]


def _view(d: Dialogue, track: _Track, turns: Sequence[Turn], sr: int) -> source_acoustics.TrackView:
    lo = min((t.start for t in turns), default=track.t0)
    hi = max((t.end for t in turns), default=track.t0 + track.n / sr)
    if d.window is not None:
        lo, hi = min(lo, d.window[0]), max(hi, d.window[1])
    reach = ((lo - _REACH_S - track.t0) * sr, (hi + _REACH_S - track.t0) * sr)
    gaps = [((a - track.t0) * sr, (b - track.t0) * sr) for a, b in track.gaps]
    return source_acoustics.view(
        track.samples, sr, _spans(track, turns, sr), no_material=gaps, reach=reach
    )


def _floor(
    track: _Track, v: source_acoustics.TrackView, sr: int
) -> tuple[edges.Floor | None, RecordingTone | None]:
    """A track's floor: its window's background, else the rest of its recording's."""
    floor = source_acoustics.track_floor(v)
    clear = v.clear if v.blocked is None else v.clear & ~v.blocked
    enough = np.count_nonzero(clear) * v.an.edge.hop >= 0.3 * sr
    if (floor is None or not enough) and track.recording is not None:
        rec = recording_tone(*track.recording, sr)
        return (rec.floor or floor), rec
    return floor, None


def _tone_rng(config: RunConfig, d: Dialogue) -> np.random.Generator:
    """The room tone's own draws (excerpts, synthesis): the gap draws never depend on them."""
    return rng_for(config.seed, d.id, "room-tone")


def _measure(chunks: Sequence[Audio], sr: int) -> ld.Loudness:
    if not chunks:
        return ld.Loudness(ld.SILENCE_LUFS, "silent")
    return bs1770.measure(np.concatenate(chunks), sr)


def _cut(ext: edges.Extent) -> tuple[int, int]:
    return int(round(ext.start)), int(round(ext.end))


@dataclass
class _Tone:
    """Room tone for the bed, where it came from, and the floor it was judged against."""

    samples: Audio
    origin: str  # window / recording / synthesized
    speaker: str


def _tone(
    who: str,
    track: _Track,
    v: source_acoustics.TrackView,
    floor: edges.Floor,
    extents: Sequence[tuple[float, float]],
    rec: RecordingTone | None,
    sr: int,
    rng: np.random.Generator,
    *,
    annotated: bool = True,
) -> _Tone | None:
    """Room tone of one track: its window's pauses, then its recording's, then synthesized.

    ``annotated``: whether the annotations mark where speech is not (a clip-per-turn track's
    turns span whole clips: its background is what lies outside the acoustic extents)."""
    runs = source_acoustics.tone_runs(v, floor, extents, annotated=annotated)
    tone = roomtone.tone_pieces(v.samples, runs, sr)
    got = 0.0 if tone is None else len(tone) / sr
    if got >= _MIN_TONE_S or track.recording is None:
        if tone is not None:
            return _Tone(tone, "window", who)
    else:
        rec = rec or recording_tone(*track.recording, sr)
        if rec.tone is not None:
            more = rec.tone
            if tone is not None:  # at the window's own level: the bed holds one level
                more = more * np.float32(10 ** ((rms_db(tone) - rms_db(more)) / 20))
            parts = [t for t in (tone, more) if t is not None]
            fade_n = max(1, int(round(roomtone.XFADE_S * sr)))
            return _Tone(roomtone.xfade_concat(parts, fade_n), "recording", who)
        if tone is not None:
            return _Tone(tone, "window", who)
    synth = source_acoustics.synthesized(v, floor, extents, rng)
    return _Tone(synth, "synthesized", who) if synth is not None else None


# --- rendering ----------------------------------------------------------------------------------


@dataclass
class _Result:
    out: Audio
    stems: Audio | None
    rows: list[RenderedTurnRow]
    gaps: list[float]
    measured: list[float | None]
    corrected: int
    loud: dict[str, ld.Loudness]
    gains: dict[str, float]
    tone: dict[str, Any]
    dropped: list[int]
    ceiling_db: float


def _tone_meta(
    cfg: RenderConfig, tone: _Tone | None, floor_db: float | None, sr: int
) -> dict[str, Any]:
    if tone is not None and floor_db is not None:
        return {
            "used": True,
            "from_speaker": tone.speaker,
            "origin": tone.origin,
            "floor_dbfs": round(floor_db, 2),
            "material_s": round(len(tone.samples) / sr, 3),
        }
    if not cfg.room_tone:
        return {"used": False, "reason": "render.room_tone is false"}
    return {"used": False, "reason": "the source's floor is digital silence"}


def _out_floor(cfg: RenderConfig, post: Sequence[edges.Floor], tone: _Tone | None) -> float | None:
    """The rendered file's floor (dBFS before the ceiling): the loudest background after gain,
    when room tone is laid; None when it is not (the file's pauses are then digital silence)."""
    noisy = [f.db for f in post if not f.digital]
    if not cfg.room_tone or not noisy or tone is None:
        return None
    return max(noisy)


def _rows_at_changes(
    spans: Sequence[tuple[int, int]], changes: Sequence[Change], mix: Mix
) -> list[tuple[float, float]]:
    """Each main item's output span as its rows report it: the acoustic extent, and at every
    measured speaker change the edges the confirming measurement found on the file."""
    out = [(float(a + s), float(b + s)) for (a, b), s in zip(spans, mix.shifts, strict=True)]
    for ch, m in zip(changes, mix.measures, strict=True):
        if m is None:
            continue
        k = ch.after
        if out[k][0] < m.offset and m.onset < out[k + 1][1]:
            out[k] = (out[k][0], m.offset)
            out[k + 1] = (m.onset, out[k + 1][1])
    return out


def _same_track_bounds(
    turns: Sequence[Turn], idx: Sequence[int], i: int, track: _Track, sr: int
) -> tuple[float, float]:
    """Where turn ``i``'s edges may lie on its track (samples): past its hint by the search
    reach, never past the middle of a pause to the previous or next turn on the same track, nor
    outside its clip (clip-per-turn)."""
    t = turns[i]
    lo = (t.start - track.t0 - edges.SEARCH_S) * sr
    hi = (t.end - track.t0 + edges.SEARCH_S) * sr
    for j in idx:
        if j == i:
            continue
        o = turns[j]
        if o.end <= t.start:
            lo = max(lo, (0.5 * (o.end + t.start) - track.t0) * sr)
        elif o.start >= t.end:
            hi = min(hi, (0.5 * (t.end + o.start) - track.t0) * sr)
    mid = 0.5 * (t.start + t.end)
    for a, b in track.pieces:
        if a <= mid < b:
            lo, hi = max(lo, (a - track.t0) * sr), min(hi, (b - track.t0) * sr)
    return max(lo, 0.0), min(hi, float(track.n))


def _piece_mask(v: source_acoustics.TrackView, track: _Track, t: Turn, sr: int) -> Any:
    """Frames of the clip holding turn ``t`` (clip-per-turn tracks), else None."""
    mid = 0.5 * (t.start + t.end)
    for a, b in track.pieces:
        if a <= mid < b:
            mask = np.zeros(v.n_frames, dtype=bool)
            k0, k1 = v.an.edge.span((a - track.t0) * sr, (b - track.t0) * sr)
            mask[k0:k1] = True
            return mask
    return None


def _render_separable(
    d: Dialogue, turns: Sequence[Turn], config: RunConfig, rng: np.random.Generator
) -> tuple[_Result, list[str]]:
    cfg, sr = config.render, config.sample_rate
    pad_n = int(round(cfg.trim_pad_ms / 1000.0 * sr))
    fade_n = max(1, int(round(cfg.fade_ms / 1000.0 * sr)))
    tracks, files = _load_separable(d, turns, sr, _CONTEXT_S)
    ids = [s.id for s in d.speakers]
    for t in turns:
        if t.speaker not in tracks:
            raise InputError(
                d.id, f"turn speaker {t.speaker!r} is not a dialogue speaker", reason="bad_speaker"
            )
    views = {s: _view(d, tracks[s], turns, sr) for s in ids}
    found = {s: _floor(tracks[s], views[s], sr) for s in ids}
    if not isinstance(d.source, PerTurnSource) and len(ids) == 2:
        own = [_spans(tracks[s], [t for t in turns if t.speaker == s], sr) for s in ids]
        source_acoustics.mark_crosstalk([views[s] for s in ids], own, [found[s][0] for s in ids])
        found = {s: _floor(tracks[s], views[s], sr) for s in ids}
    speech = [i for i, t in enumerate(turns) if t.kind != TurnKind.NONSPEECH]
    by_speaker = {s: [i for i in speech if turns[i].speaker == s] for s in ids}

    # each turn's background: its track's (file-based), or its own clip's (clip-per-turn)
    def turn_floor(i: int, ext: edges.Extent | None = None) -> edges.Floor:
        t = turns[i]
        v, tr = views[t.speaker], tracks[t.speaker]
        mask = _piece_mask(v, tr, t, sr)
        base = found[t.speaker][0] or edges.DIGITAL_FLOOR
        if mask is None:
            return base
        if ext is not None:
            mask = mask & edges.background_mask(v.an.edge, [(ext.start, ext.end)], 0.02 * sr)
            return edges.estimate_floor(v.an, mask) or base
        return edges.floor_of(v.an, usable=mask) or base

    def hint(i: int) -> tuple[float, float]:
        t, tr = turns[i], tracks[turns[i].speaker]
        return (t.start - tr.t0) * sr, (t.end - tr.t0) * sr

    bounds = {
        i: _same_track_bounds(turns, by_speaker[turns[i].speaker], i, tracks[turns[i].speaker], sr)
        for i in speech
    }
    floors: dict[int, edges.Floor] = {}
    coarse: dict[int, edges.Extent] = {}
    dropped: list[int] = []
    for i in speech:
        t = turns[i]
        f = turn_floor(i)
        ext = source_acoustics.extent(views[t.speaker], f, hint(i), bounds[i])
        if ext is not None and isinstance(d.source, PerTurnSource):
            f = turn_floor(i, ext)
            ext = source_acoustics.extent(views[t.speaker], f, hint(i), bounds[i]) or ext
        if ext is None:
            if t.kind == TurnKind.BACKCHANNEL:
                dropped.append(i)
                continue
            raise InputError(
                d.id,
                f"turn {i} ({t.speaker}, {t.start:.3f}-{t.end:.3f} s) has no audible speech",
                reason="silent_turn",
            )
        floors[i], coarse[i] = f, ext
    if isinstance(d.source, PerTurnSource):
        # one floor per speaker, from the background of all their clips together: a clip whose
        # slack holds a breath, or none at all, does not set a floor of its own
        for s in ids:
            v = views[s]
            mask = np.zeros(v.n_frames, dtype=bool)
            mine = [i for i in coarse if turns[i].speaker == s]
            for i in mine:
                piece = _piece_mask(v, tracks[s], turns[i], sr)
                if piece is not None:
                    mask |= piece
            exts = [(coarse[i].start, coarse[i].end) for i in mine]
            mask &= edges.background_mask(v.an.edge, exts, source_acoustics.TONE_MARGIN_S * sr)
            pooled = edges.estimate_floor(v.an, mask)
            if pooled is None:
                continue
            found[s] = (pooled, found[s][1])
            for i in mine:
                ext = source_acoustics.extent(v, pooled, hint(i), bounds[i])
                if ext is not None:
                    floors[i], coarse[i] = pooled, ext

    # loudness per speaker on the trimmed speech that is rendered
    drop_bc = cfg.backchannels == "drop"
    chunks: dict[str, list[Audio]] = {s: [] for s in ids}
    for i, ext in coarse.items():
        if not (drop_bc and turns[i].kind == TurnKind.BACKCHANNEL):
            i0, i1 = _cut(ext)
            chunks[turns[i].speaker].append(tracks[turns[i].speaker].samples[i0:i1])
    loud = {s: _measure(chunks[s], sr) for s in ids}
    gains = {s: ld.gain_to_target(loud[s].lufs, cfg.loudness_target_lufs) for s in ids}

    # the file's floor: the loudest background after gain, room tone from that speaker's track
    post = {i: floors[i].gained(gains[turns[i].speaker]) for i in coarse}
    loudest = max(
        (i for i in coarse if not post[i].digital), key=lambda i: post[i].db, default=None
    )
    tone: _Tone | None = None
    if cfg.room_tone and loudest is not None:
        for s in sorted(ids, key=lambda s: s != turns[loudest].speaker):
            base = found[s][0]
            if base is None or base.digital:
                continue
            exts = [(coarse[i].start, coarse[i].end) for i in coarse]
            tone = _tone(
                s, tracks[s], views[s], base, exts, found[s][1], sr, _tone_rng(config, d),
                annotated=not isinstance(d.source, PerTurnSource),
            )  # fmt: skip
            if tone is not None:
                break
    out_floor = _out_floor(cfg, list(post.values()), tone)
    target = edges.ABSOLUTE_FLOOR_DB if out_floor is None else out_floor

    # final extents: speech measured down to the file's floor, in each track's scale
    extents: dict[int, edges.Extent] = {}
    for i, ext in coarse.items():
        want = target - gains[turns[i].speaker]
        if abs(want - floors[i].db) <= 0.5 and not floors[i].digital:
            extents[i] = ext
            continue
        fine = source_acoustics.extent(views[turns[i].speaker], floors[i], hint(i), bounds[i], want)
        extents[i] = fine or ext

    trimmed: list[Turn] = []
    for i, t in enumerate(turns):
        if i not in extents:
            trimmed.append(replace(t, kind=TurnKind.NONSPEECH))
            continue
        t0, (i0, i1) = tracks[t.speaker].t0, _cut(extents[i])
        trimmed.append(replace(t, start=t0 + i0 / sr, end=t0 + i1 / sr))
    lead = edge_silence_s(cfg)
    tl = layout_turns(trimmed, cfg, rng, lead_s=lead, tail_s=lead)

    # clips, each moving with its main turn (a kept backchannel with its host)
    group = {p.index: k for k, p in enumerate(tl.mains)}
    stem_of = {s: k for k, s in enumerate(ids)} if cfg.stems else {}
    clips: list[Clip] = []
    spans: list[tuple[int, int]] = [(0, 0)] * len(group)
    for p in tl.placements:
        tr = tracks[p.speaker]
        i0, i1 = _cut(extents[p.index])
        a, b = max(0, i0 - pad_n), min(tr.n, i1 + pad_n)
        at = int(round(p.out_start * sr)) - (i0 - a)
        env = fade_envelope(b - a, fade_n)
        data = tr.samples[a:b] * (env * np.float32(ld.db_to_gain(gains[p.speaker])))
        g = group[p.index if p.host is None else p.host]
        fp = post[p.index].power
        clips.append(Clip(g, stem_of.get(p.speaker), data, env, at, i0 - a, i1 - a, fp))
        if p.host is None:
            spans[g] = (at + i0 - a, at + i1 - a)
    changes = [Change(k, g) for k, g in zip(tl.change_after, tl.gaps_s, strict=True)]
    bed = None
    if out_floor is not None and tone is not None:
        bed = Bed(tone.samples, 10.0 ** (out_floor / 10.0))
    mix = mixdown(
        clips, spans, changes, tl.duration_s, sr, bed=bed, rng=_tone_rng(config, d),
        ceiling_dbtp=cfg.true_peak_ceiling_dbtp, n_stems=len(ids) if cfg.stems else 0,
        band_s=(cfg.gap_ms_min / 1000.0, cfg.gap_ms_max / 1000.0),
    )  # fmt: skip
    bounds_out = _rows_at_changes(spans, changes, mix)
    rows = []
    for p, c in zip(tl.placements, clips, strict=True):
        if p.host is None:
            s0, s1 = bounds_out[c.group]
        else:
            at = c.at + mix.shifts[c.group]
            s0, s1 = float(at + c.e0), float(at + c.e1)
        rows.append(_turn_row(d, p.index, p.host is not None, s0 / sr, s1 / sr))
    res = _Result(
        mix.out, mix.stems, rows, list(tl.gaps_s), _measured_ms(mix, sr), mix.corrected, loud,
        gains, _tone_meta(cfg, tone, out_floor, sr), sorted({*dropped, *tl.dropped}),
        mix.ceiling_db,
    )  # fmt: skip
    return res, files


def _measured_ms(mix: Mix, sr: int) -> list[float | None]:
    return [None if m is None else round(m.gap / sr * 1000.0, 3) for m in mix.measures]


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
    are cut at the quietest point around the overlap, so neither keeps the other's voice; other
    neighbours are bounded at the middle of the pause between their annotations.
    """
    bounds = [(b.start - edges.SEARCH_S, b.end + edges.SEARCH_S) for b in blocks]
    m = _CUT_SEARCH_S
    for k in range(len(blocks) - 1):
        e, s = blocks[k].end, blocks[k + 1].start
        if s >= e:
            c = 0.5 * (e + s)
            if s - e < 2 * edges.SEARCH_S:
                bounds[k] = (bounds[k][0], c)
                bounds[k + 1] = (c, bounds[k + 1][1])
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
    pad_n = int(round(cfg.trim_pad_ms / 1000.0 * sr))
    fade_n = max(1, int(round(cfg.fade_ms / 1000.0 * sr)))
    track = _load_mixed(d, src, turns, sr, _CONTEXT_S)
    ids = [s.id for s in d.speakers]
    v = _view(d, track, turns, sr)
    floor, rec = _floor(track, v, sr)
    floor = floor or edges.DIGITAL_FLOOR

    keep, dropped = mixed_speech_indices(turns, cfg)
    raw_blocks = merge_blocks(turns, keep, config.turns.min_overlap_s)
    limits = _block_bounds(track, raw_blocks, sr)

    def locate(k: int, on: float | None = None, off: float | None = None) -> edges.Extent | None:
        blk, (b0, b1) = raw_blocks[k], limits[k]
        hint = ((blk.start - track.t0) * sr, (blk.end - track.t0) * sr)
        lims = (max(0.0, (b0 - track.t0) * sr), min(float(track.n), (b1 - track.t0) * sr))
        return source_acoustics.extent(v, floor, hint, lims, onset_db=on, offset_db=off)

    coarse: list[edges.Extent] = []
    for k, blk in enumerate(raw_blocks):
        ext = locate(k)
        if ext is None:
            raise InputError(
                src.path,
                f"no audible speech in {blk.start:.3f}-{blk.end:.3f} s (turns {list(blk.members)})",
                reason="silent_turn",
            )
        coarse.append(ext)

    # who speaks alone where (track samples), for measurement and the gain curve
    masks = {s: np.zeros(track.n, dtype=bool) for s in ids}
    for i in keep:
        t = turns[i]
        if t.speaker in masks:
            masks[t.speaker][max(0, track.index(t.start, sr)) : track.index(t.end, sr)] = True
    inside = np.zeros(track.n, dtype=bool)
    for ext in coarse:
        i0, i1 = _cut(ext)
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
    gsm = smooth_steps(g, fade_n)

    # the file's floor: the recording's floor under the larger gain; tone from the recording
    tone: _Tone | None = None
    if cfg.room_tone and not floor.digital:
        exts = [(e.start, e.end) for e in coarse]
        tone = _tone("mix", track, v, floor, exts, rec, sr, _tone_rng(config, d))
    post = [floor.gained(gains[s]) for s in ids]
    out_floor = _out_floor(cfg, post, tone)
    target = edges.ABSOLUTE_FLOOR_DB if out_floor is None else out_floor
    extents: list[edges.Extent] = []
    for k, (blk, ext) in enumerate(zip(raw_blocks, coarse, strict=True)):
        on = target - gains.get(blk.first_speaker, mid_db)
        off = target - gains.get(blk.last_speaker, mid_db)
        fine = locate(k, on, off) if floor.digital or max(
            abs(on - floor.db), abs(off - floor.db)
        ) > 0.5 else ext  # fmt: skip
        extents.append(fine or ext)

    blocks = [
        replace(blk, start=track.t0 + i0 / sr, end=track.t0 + i1 / sr)
        for blk, (i0, i1) in zip(raw_blocks, map(_cut, extents), strict=True)
    ]
    lead = edge_silence_s(cfg)
    starts, gaps, after, duration = layout_blocks(blocks, cfg, rng, lead_s=lead, tail_s=lead)

    # clip bounds: the pad never reaches into the neighbouring block's speech
    cuts = [_cut(e) for e in extents]
    lims = [(0, track.n) for _ in blocks]
    for k in range(len(blocks) - 1):
        e1, n0 = cuts[k][1], cuts[k + 1][0]
        if n0 - e1 < 2 * pad_n:
            mid = (e1 + n0) // 2
            lims[k] = (lims[k][0], mid)
            lims[k + 1] = (mid, lims[k + 1][1])
    clips: list[Clip] = []
    spans: list[tuple[int, int]] = []
    fpow = floor.power
    for k, ((i0, i1), o_start) in enumerate(zip(cuts, starts, strict=True)):
        a, b = max(lims[k][0], i0 - pad_n), min(lims[k][1], i1 + pad_n)
        at = int(round(o_start * sr)) - (i0 - a)
        env = fade_envelope(b - a, fade_n)
        data = track.samples[a:b] * gsm[a:b] * env
        fp = (np.square(gsm[a:b]) * np.float32(fpow)).astype(np.float32)
        clips.append(Clip(k, None, data, env, at, i0 - a, i1 - a, fp))
        spans.append((at + i0 - a, at + i1 - a))
    changes = [Change(k, gap) for k, gap in zip(after, gaps, strict=True)]
    bed = None
    if out_floor is not None and tone is not None:
        bed = Bed(tone.samples, 10.0 ** (out_floor / 10.0))
    mix = mixdown(
        clips, spans, changes, duration, sr, bed=bed, rng=_tone_rng(config, d),
        ceiling_dbtp=cfg.true_peak_ceiling_dbtp,
        band_s=(cfg.gap_ms_min / 1000.0, cfg.gap_ms_max / 1000.0),
    )  # fmt: skip
    bounds = _rows_at_changes(spans, changes, mix)

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
    tone_meta = _tone_meta(cfg, tone, out_floor, sr)
    if cfg.stems:
        log.info("%s: stems are not available for a mixed mono source", d.id)
        tone_meta["stems"] = "unavailable for mixed mono"
    res = _Result(
        mix.out, None, rows, gaps, _measured_ms(mix, sr), mix.corrected, loud, gains, tone_meta,
        dropped, mix.ceiling_db,
    )  # fmt: skip
    return res, [src.path]


def _turn_row(d: Dialogue, index: int, hosted: bool, start: float, end: float) -> RenderedTurnRow:
    """A rendered turn; ``hosted``: a backchannel inside another speaker's turn (a
    stand-alone backchannel is laid out, and reported, as an ordinary turn)."""
    o = d.turns[index]
    return RenderedTurnRow(
        dialogue_id=d.id,
        turn_index=0,  # renumbered in output order
        speaker=o.speaker,
        kind=str(TurnKind.BACKCHANNEL if hosted else TurnKind.TURN),
        start_s=round(start, 6),
        end_s=round(end, 6),
        orig_start_s=float(o.annotated_span[0]),
        orig_end_s=float(o.annotated_span[1]),
        text=o.text,
    )


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
    # the 16-bit samples the gap confirmation measured (mixdown.as_written), written as they are
    path = write_audio(out_dir / rel, to_pcm16(out), sr, audio_format=cfg.audio_format)
    stems_rel = None
    if stems is not None:
        stems_rel = f"stems/{name}.{cfg.audio_format}"
        write_audio(out_dir / stems_rel, to_pcm16(stems), sr, audio_format=cfg.audio_format)

    a, b = d.speaker_a.id, d.speaker_b.id
    total = {s: res.gains.get(s, 0.0) + ceiling for s in (a, b)}
    rendered = {
        s: (res.loud[s].lufs + total[s] if res.loud[s].lufs > ld.SILENCE_LUFS else ld.SILENCE_LUFS)
        for s in (a, b)
    }
    rows = [
        replace(r, turn_index=k)
        for k, r in enumerate(sorted(res.rows, key=lambda r: (r.start_s, r.orig_start_s)))
    ]
    src_rate = source_rate(d.source, sr)  # trainers (issue 16): source rate + resampling
    provenance = {
        "source_kind": d.source.kind,
        "source_files": files,
        "window": list(d.window) if d.window else None,
        "orig_turns": [[t.speaker, str(t.kind), *t.annotated_span] for t in d.turns],
        "dropped_turns": res.dropped,
        "gaps_ms": [round(g * 1000, 3) for g in res.gaps],
        "gaps_measured_ms": res.measured,
        "gap_corrections": res.corrected,
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
    row = RenderedDialogueRow(
        dialogue_id=d.id,
        source_id=d.source_id,
        corpus=d.corpus,
        category=str(d.category),
        language=d.language,
        topic=d.topic,
        speaker_a=a,
        speaker_b=b,
        design=d.design,
        audio_path=rel,
        sha256=_sha256(path),
        duration_s=len(out) / sr,
        sample_rate=sr,
        num_channels=1,
        n_turns=len(rows),
        loudness_lufs_a=round(rendered[a], 4),
        loudness_lufs_b=round(rendered[b], 4),
        gain_db_a=round(total[a], 4),
        gain_db_b=round(total[b], 4),
        gap_ms_min=round(min(gaps_ms), 3) if gaps_ms else None,
        gap_ms_max=round(max(gaps_ms), 3) if gaps_ms else None,
        provenance=dumps(provenance),
        # -- trainers (issue 16): licence and source sample rate per dialogue --
        licence=d.licence or UNDECLARED,
        source_sample_rate=src_rate.sample_rate,
    )
    log.debug("rendered %s: %.2f s, %d turns", d.id, row.duration_s, len(rows))
    return RenderedDialogue(row, tuple(rows))
