"""A window's background: the room tone laid under the file, and the file's floor.

Each track's floor is measured in the acoustic layer (:mod:`duetflow.acoustics.window`: where no
turn of any speaker is annotated, else in the rest of its recording,
:mod:`duetflow.acoustics.tone_sources`). Room tone comes from the window's pauses, then the
recording's, then noise of the floor's spectrum; its draws use their own generator
(:func:`tone_rng`), so the gap draws never depend on them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from duetflow.acoustics import source_acoustics
from duetflow.acoustics.tone_sources import RecordingTone, recording_tone
from duetflow.acoustics.window import Track
from duetflow.audio import bs1770, edges, roomtone, tone_colour
from duetflow.audio import loudness as ld
from duetflow.audio.bandlimit import lowpass
from duetflow.audio.io import Audio
from duetflow.audio.trim import rms_db
from duetflow.config import RenderConfig, RunConfig
from duetflow.records.dialogue import Dialogue
from duetflow.seeding import rng_for

_MIN_TONE_S = 1.0  # less room tone than this in the window: look in the rest of the recording


def tone_rng(config: RunConfig, d: Dialogue) -> np.random.Generator:
    """The room tone's own draws (excerpts, synthesis): the gap draws never depend on them."""
    return rng_for(config.seed, d.id, "room-tone")


def measure_speech(chunks: Sequence[Audio], sr: int) -> ld.Loudness:
    """BS.1770 loudness of a speaker's trimmed speech, taken together (silent when none)."""
    if not chunks:
        return ld.Loudness(ld.SILENCE_LUFS, "silent")
    return bs1770.measure(np.concatenate(chunks), sr)


def measure_speech_each(speakers: Sequence[Sequence[Audio]], sr: int) -> list[ld.Loudness]:
    """:func:`measure_speech` of each speaker's chunks, the same numbers (two speakers'
    K-weighting side by side, the chunks never joined:
    :func:`duetflow.audio.bs1770.measure_each_joined`)."""
    return bs1770.measure_each_joined(speakers, sr)


@dataclass
class Tone:
    """Room tone for the bed, where it came from, and the floor it was judged against."""

    samples: Audio
    origin: str  # window / recording / synthesized
    speaker: str
    own_tilt_db_oct: float | None = None  # colour matched (render.tone_tilt_db_oct): its own


def find_tone(
    who: str,
    track: Track,
    v: source_acoustics.TrackView,
    floor: edges.Floor,
    extents: Sequence[tuple[float, float]],
    rec: RecordingTone | None,
    sr: int,
    rng: np.random.Generator,
    *,
    annotated: bool = True,
) -> Tone | None:
    """Room tone of one track: its window's pauses, then its recording's, then synthesized.

    ``annotated``: whether the annotations mark where speech is not (a clip-per-turn track's
    turns span whole clips: its background is what lies outside the acoustic extents)."""
    return _find_tone(who, track, v, floor, extents, rec, sr, rng, annotated=annotated)


def colour(
    tone: Tone | None, tilt_db_oct: float | None, sr: int, limit_hz: float | None
) -> Tone | None:
    """``tone`` with the colour ``render.tone_tilt_db_oct`` sets for the dialogue's language
    (None: its own): its spectral envelope in the pass band (to ``limit_hz``, the language's
    bandwidth, less the low-pass's transition) one line of that tilt
    (:func:`duetflow.audio.tone_colour.to_envelope`); the bed's own tilt is recorded."""
    if tone is None or tilt_db_oct is None:
        return tone
    hi = tone_colour.pass_band_hz(limit_hz)
    shaped, own = tone_colour.to_envelope(tone.samples, sr, tilt_db_oct, hi_hz=hi)
    if not math.isfinite(own):  # too short or silent to measure: laid as it is
        return tone
    return replace(tone, samples=shaped, own_tilt_db_oct=round(own, 3))


def _find_tone(
    who: str,
    track: Track,
    v: source_acoustics.TrackView,
    floor: edges.Floor,
    extents: Sequence[tuple[float, float]],
    rec: RecordingTone | None,
    sr: int,
    rng: np.random.Generator,
    *,
    annotated: bool,
) -> Tone | None:
    runs = source_acoustics.tone_runs(v, floor, extents, annotated=annotated)
    tone = roomtone.tone_pieces(v.samples, runs, sr)
    got = 0.0 if tone is None else len(tone) / sr
    if got >= _MIN_TONE_S or track.recording is None:
        if tone is not None:
            return Tone(tone, "window", who)
    else:
        rec = rec or recording_tone(*track.recording, sr, track.bandwidth_hz)
        if rec.tone is not None:
            more = rec.tone
            if tone is not None:  # at the window's own level: the bed holds one level
                more = more * np.float32(10 ** ((rms_db(tone) - rms_db(more)) / 20))
            parts = [t for t in (tone, more) if t is not None]
            fade_n = max(1, int(round(roomtone.XFADE_S * sr)))
            return Tone(roomtone.xfade_concat(parts, fade_n), "recording", who)
        if tone is not None:
            return Tone(tone, "window", who)
    synth = source_acoustics.synthesized(v, floor, extents, rng)
    if synth is None:
        return None
    return Tone(lowpass(synth, sr, track.bandwidth_hz), "synthesized", who)


def describe_tone(
    cfg: RenderConfig, tone: Tone | None, floor_db: float | None, sr: int
) -> dict[str, Any]:
    """The provenance's ``room_tone`` record: what was laid (origin, level, length) or why not."""
    if tone is not None and floor_db is not None:
        meta: dict[str, Any] = {
            "used": True,
            "from_speaker": tone.speaker,
            "origin": tone.origin,
            "floor_dbfs": round(floor_db, 2),
            "material_s": round(len(tone.samples) / sr, 3),
        }
        if tone.own_tilt_db_oct is not None:  # colour matched: the bed's own tilt before
            meta["own_tilt_db_oct"] = tone.own_tilt_db_oct
        return meta
    if not cfg.room_tone:
        return {"used": False, "reason": "render.room_tone is false"}
    return {"used": False, "reason": "the source's floor is digital silence"}


def file_floor(cfg: RenderConfig, post: Sequence[edges.Floor], tone: Tone | None) -> float | None:
    """The rendered file's floor (dBFS before the ceiling): the loudest background after gain,
    raised to ``render.floor_db`` under the loudness target where that is higher (one pause
    floor for every category), when room tone is laid; None when it is not (the file's pauses
    are then digital silence)."""
    noisy = [f.db for f in post if not f.digital]
    if not cfg.room_tone or not noisy or tone is None:
        return None
    target = cfg.floor_target_dbfs
    return max(noisy) if target is None else max(max(noisy), target)
