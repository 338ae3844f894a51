"""Voice references: a clean 5–10 s clip (with transcript) per real speaker, and the pairing policy.

Only human speakers are cloned (:func:`~duetflow.tts.voice_sources.human_speakers`): never the
machine side of an HM dialogue, never a PH dialogue, and only from the categories in
``synth.voice_categories`` (default: HM, the studio participants). Input is a *rendered* work
directory (``audio_path`` per dialogue, turn times on that audio) or an *intake* one (``source``
JSON per dialogue, turn times on the source timeline). For every human speaker of every kept
dialogue we build candidate clips from runs of the speaker's own turns (no overlap with the other
speaker, backchannels and tag-only turns excluded) whose total length lies in
``[synth.reference_min_s, synth.reference_max_s]``, and score them by signal-to-noise ratio (VAD
speech power over the recording's room-tone power) and voiced share. The best clip per speaker
wins; ties go to the earlier dialogue and turn, so the choice is deterministic. Each dialogue's
result is cached on disk under a key derived from the audio's content hash, the turns and the
selection parameters, so reruns read no audio.

Pairing (:func:`choose_voices`): same language as the script; ``mixed_gender`` takes one male
and one female speaker, ``any`` two distinct speakers; the draw comes from
``rng_for(seed, "voices", script_id)``.

Selection, its on-disk cache and pairing stay in one module: they share the :class:`Voice`
record and the pool that the synthesis steps receive whole. The clip measures they score by
are :mod:`duetflow.tts.clip_measures`; reading the speakers' audio (which speakers are human,
who they are, their tracks and the content hash the cache keys on) is
:mod:`duetflow.tts.voice_sources`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from duetflow.audio.io import Audio, read_seconds, write_audio
from duetflow.audio.roomtone import extract_room_tone, xfade_concat
from duetflow.config import RunConfig
from duetflow.errors import InputError
from duetflow.records.convert import dumps
from duetflow.records.dialogue import (
    TurnKind,
)
from duetflow.records.manifest import DIALOGUES, DialogueRecord, TurnRecord, iter_work_records
from duetflow.seeding import rng_for
from duetflow.tts.backend import Voice
from duetflow.tts.clip_measures import estimate_pitch, mean_power, snr_db, speech_power
from duetflow.tts.length_match import HumanDialogue
from duetflow.tts.script import Script, clean_text, is_backchannel_text
from duetflow.tts.speaking_rate import dialogue_rate_cps
from duetflow.tts.voice_sources import (
    DialogueAudio,
    content_hash,
    human_speakers,
    load_track,
    person_key,
    speaker_gender,
)

log = logging.getLogger(__name__)

SELECTION_VERSION = 2  # bump when the selection logic changes: invalidates the cache
GENDER_PITCH_SPLIT_HZ = 165.0  # median F0 above this → F when the manifest has no gender
MAX_CANDIDATES = 24  # per speaker per dialogue; bounds the work on long recordings
_SNR_CAP_DB = 60.0


@dataclass(frozen=True)
class _TurnSpan:
    index: int
    speaker: str
    start: float
    end: float
    text: str
    kind: str


def _lang(code: str) -> str:
    c = code.lower().replace("_", "-")
    if c.startswith(("zh", "cmn")):
        return "zh"
    return c.split("-")[0]


# --- reading dialogues --------------------------------------------------------------------------


# --- candidate clips ----------------------------------------------------------------------------


def _candidates(
    own: Sequence[_TurnSpan], others: Sequence[_TurnSpan], min_s: float, max_s: float
) -> list[list[_TurnSpan]]:
    def overlaps(t: _TurnSpan) -> bool:
        return any(o.start < t.end and t.start < o.end for o in others)

    usable = [
        t
        for t in own
        if t.kind == str(TurnKind.TURN)
        and t.end > t.start
        and clean_text(t.text)
        and not is_backchannel_text(clean_text(t.text))
        and not overlaps(t)
    ]
    out: list[list[_TurnSpan]] = []
    for i in range(len(usable)):
        acc: list[_TurnSpan] = []
        total = 0.0
        for t in usable[i:]:
            d = t.end - t.start
            if total + d > max_s:
                break
            acc.append(t)
            total += d
            if total >= min_s:
                out.append(list(acc))
                break
        if len(out) >= MAX_CANDIDATES:
            break
    return out


@dataclass(frozen=True)
class _Scored:
    score: float
    clip: Audio
    transcript: str
    snr: float | None
    turn_indices: tuple[int, ...]


def _cut(track: DialogueAudio, t: _TurnSpan) -> Audio:
    a = max(0, int(round((t.start - track.offset_s) * track.sr)))
    b = min(len(track.samples), int(round((t.end - track.offset_s) * track.sr)))
    return track.samples[a:b]


def _score(
    track: DialogueAudio, cand: Sequence[_TurnSpan], noise_pow: float, language: str
) -> _Scored:
    fade_n = max(1, int(0.005 * track.sr))
    clip = xfade_concat([_cut(track, t) for t in cand], fade_n)
    sp, voiced = speech_power(clip, track.sr)
    snr = snr_db(sp, noise_pow) if sp > 0 else -math.inf
    clipped = float(np.mean(np.abs(clip) > 0.99)) if clip.size else 1.0
    snr_term = _SNR_CAP_DB if snr is None else min(snr, _SNR_CAP_DB)
    score = snr_term + 20.0 * voiced - 1000.0 * clipped
    joiner = "" if _lang(language) == "zh" else " "
    transcript = joiner.join(clean_text(t.text) for t in cand)
    return _Scored(score, clip, transcript, snr, tuple(t.index for t in cand))


# --- cache + pool -------------------------------------------------------------------------------


def _voice_from_meta(meta: Mapping[str, Any]) -> Voice:
    return Voice(**{k: meta[k] for k in Voice.__dataclass_fields__ if k in meta})


def references_for_dialogue(
    row: DialogueRecord,
    turns: Sequence[TurnRecord],
    workdir: Path,
    config: RunConfig,
    cache_dir: Path,
) -> list[tuple[float, Voice]]:
    """The best reference clip of each speaker of one dialogue, as ``(score, Voice)`` pairs.

    Cached by content hash under ``cache_dir``; raises InputError for unreadable audio.
    """
    spans = [
        _TurnSpan(
            int(t.turn_index),
            str(t.speaker),
            float(t.start_s),
            float(t.end_s),
            str(t.text or ""),
            str(t.kind or "turn"),
        )
        for t in sorted(turns, key=lambda r: int(r.turn_index))
    ]
    synth = config.synth
    content = content_hash(row, workdir)
    out: list[tuple[float, Voice]] = []
    for speaker in human_speakers(row):
        key_src = {
            "v": SELECTION_VERSION,
            "audio": content,
            "speaker": speaker,
            "turns": [(s.index, s.speaker, s.start, s.end, s.text, s.kind) for s in spans],
            "min_s": synth.reference_min_s,
            "max_s": synth.reference_max_s,
        }
        key = hashlib.sha256(dumps(key_src).encode()).hexdigest()[:20]
        entry = cache_dir / key
        meta_path = entry / "meta.json"
        if meta_path.exists():
            try:
                meta = json.loads(meta_path.read_text(encoding="utf-8"))
                cached = (
                    (float(meta["score"]), _voice_from_meta(meta["voice"]))
                    if meta.get("voice") is not None
                    else None
                )
            except (OSError, ValueError, TypeError, KeyError, AttributeError) as e:
                # a cache entry of the wrong shape is rebuilt, never a crash
                log.warning("ignoring voice cache %s (%s); selecting again", meta_path, e)
            else:
                if cached is not None:
                    out.append(cached)
                continue
        result = _select(row, speaker, spans, workdir, config, entry, key)
        entry.mkdir(parents=True, exist_ok=True)
        payload = {"score": result[0], "voice": asdict(result[1])} if result else {"voice": None}
        tmp = meta_path.with_suffix(".tmp")
        tmp.write_text(dumps(payload), encoding="utf-8")
        tmp.replace(meta_path)
        if result:
            out.append(result)
    return out


def _select(
    row: DialogueRecord,
    speaker: str,
    spans: Sequence[_TurnSpan],
    workdir: Path,
    config: RunConfig,
    entry: Path,
    key: str,
) -> tuple[float, Voice] | None:
    synth = config.synth
    own = [s for s in spans if s.speaker == speaker]
    others = [s for s in spans if s.speaker != speaker]
    cands = _candidates(own, others, synth.reference_min_s, synth.reference_max_s)
    if not cands:
        return None
    track = load_track(row, speaker, workdir)
    speech = [(s.start - track.offset_s, s.end - track.offset_s) for s in spans]
    tone = extract_room_tone(track.samples, track.sr, speech)
    noise_pow = mean_power(tone) if tone is not None else 0.0
    best: _Scored | None = None
    for cand in cands:
        scored = _score(track, cand, noise_pow, row.language)
        if best is None or scored.score > best.score:
            best = scored
    if best is None or best.snr == -math.inf:
        return None
    entry.mkdir(parents=True, exist_ok=True)
    clip_path = write_audio(entry / "ref.wav", best.clip, track.sr)
    noise_path = None
    if tone is not None and best.snr is not None:
        noise_path = str(write_audio(entry / "noise.wav", tone, track.sr, subtype="FLOAT"))
    gender = speaker_gender(row, speaker)
    pitch = estimate_pitch(best.clip, track.sr)
    gender_source = "manifest"
    if gender is None:
        gender_source = "pitch" if pitch is not None else "unknown"
        gender = None if pitch is None else ("F" if pitch > GENDER_PITCH_SPLIT_HZ else "M")
    voice = Voice(
        speaker_id=speaker,
        person=person_key(row, speaker),
        language=_lang(row.language),
        gender=gender,
        pitch_hz=None if pitch is None else round(pitch, 1),
        clip_id=f"{key}:{'-'.join(str(i) for i in best.turn_indices)}",
        clip_path=str(clip_path),
        transcript=best.transcript,
        duration_s=round(len(best.clip) / track.sr, 4),
        sample_rate=track.sr,
        snr_db=None if best.snr is None else round(best.snr, 2),
        noise_path=noise_path,
        source_dialogue_id=row.dialogue_id,
        gender_source=gender_source,
    )
    return round(best.score, 6), voice


def human_dialogue(row: DialogueRecord, turns: Sequence[TurnRecord]) -> HumanDialogue:
    """What a PH script can be matched to of one human dialogue: language, topic, duration,
    speaking rate (as the cue audit reads it) and turn count (backchannels not counted)."""
    speech = [t for t in turns if str(t.kind or "turn") != str(TurnKind.NONSPEECH)]
    rate = dialogue_rate_cps((float(t.start_s), float(t.end_s), str(t.text or "")) for t in speech)
    return HumanDialogue(
        language=_lang(row.language),
        topic=str(row.topic or ""),
        duration_s=round(float(row.duration_s), 6),
        rate_cps=rate if math.isnan(rate) else round(rate, 6),
        turns=sum(1 for t in speech if str(t.kind or "turn") == str(TurnKind.TURN)),
    )


def sorted_humans(humans: Sequence[HumanDialogue]) -> tuple[HumanDialogue, ...]:
    """The pool's human dialogues in one order, whatever order they were read in."""
    return tuple(sorted(humans, key=HumanDialogue.sort_key))


@dataclass(frozen=True)
class VoicePool:
    """Best reference per person (:func:`person_key`), in a stable order (sorted by person)."""

    voices: tuple[Voice, ...]
    rejections: tuple[tuple[str, str, str], ...] = ()  # (dialogue id, reason, detail)
    #: language, topic, rendered duration, speaking rate and turns of every human (HH, HM)
    #: dialogue of the work directory, sorted: what PH lengths and rates are drawn from
    #: (:mod:`duetflow.tts.length_match`)
    humans: tuple[HumanDialogue, ...] = ()

    def lengths_for(self, language: str) -> list[float]:
        """Rendered durations (s) of the human dialogues of ``language`` (``zh-CN`` → zh)."""
        lang = _lang(language)
        return [h.duration_s for h in self.humans if h.language == lang]

    def humans_for(self, language: str) -> list[HumanDialogue]:
        """The human dialogues of ``language`` (``zh-CN`` → zh) a PH script may be matched to."""
        lang = _lang(language)
        return [h for h in self.humans if h.language == lang]

    def for_language(self, language: str) -> list[Voice]:
        lang = _lang(language)
        return [v for v in self.voices if v.language == lang]


def build_voice_pool(workdir: str | Path, config: RunConfig, cache_dir: str | Path) -> VoicePool:
    """Scan a rendered or intake work directory for reference speakers (streaming, cached).

    Only the human participants of dialogues whose category is in ``synth.voice_categories``
    lend their voices: by default HM studio sessions, as in the seed study (the PH voices are
    then the voices judges also hear in HM dialogues); add ``HH`` to use corpus speakers.
    """
    wd = Path(workdir)
    if not (wd / DIALOGUES).exists():
        raise InputError(
            wd / DIALOGUES, "voices work directory has no dialogues", reason="missing_file"
        )
    cache = Path(cache_dir)
    best: dict[str, tuple[float, Voice]] = {}
    problems: list[tuple[str, str, str]] = []
    lenders = set(config.synth.voice_categories)  # never PH: never clone a clone
    humans: list[HumanDialogue] = []
    for row, turns in iter_work_records(wd):
        if row.category in ("HH", "HM"):
            humans.append(human_dialogue(row, turns))
        if row.category not in lenders:
            continue
        try:
            found = references_for_dialogue(row, turns, wd, config, cache)
        except InputError as e:
            log.warning("voice reference skipped for %s: %s", row.dialogue_id, e)
            problems.append((row.dialogue_id, e.reason, str(e)))
            continue
        licence = row.licence or ""  # the voice carries its source's licence
        for score, voice in found:
            voice = replace(voice, licence=licence)
            cur = best.get(voice.person)
            if cur is None or score > cur[0]:
                best[voice.person] = (score, voice)
    voices = tuple(v for _, v in sorted(best.values(), key=lambda sv: sv[1].person))
    log.info("voice pool: %d speakers from %s", len(voices), wd)
    return VoicePool(voices, tuple(problems), sorted_humans(humans))


def choose_voices(script: Script, pool: VoicePool, config: RunConfig) -> tuple[Voice, Voice]:
    """Voices for speakers A and B of ``script`` under ``synth.voice_policy`` (deterministic)."""
    cands = pool.for_language(script.language)
    rng = rng_for(config.seed, "voices", script.id)
    where = script.path or script.id
    if config.synth.voice_policy == "mixed_gender":
        males = [v for v in cands if v.gender == "M"]
        females = [v for v in cands if v.gender == "F"]
        if not males or not females:
            raise InputError(
                where,
                f"no male+female reference pair for language {script.language!r} "
                f"({len(males)} M, {len(females)} F in the voice pool)",
                reason="no_voices",
            )
        m = males[int(rng.integers(len(males)))]
        f = females[int(rng.integers(len(females)))]
        return (m, f) if rng.random() < 0.5 else (f, m)
    if len(cands) < 2:
        raise InputError(
            where,
            f"need two reference speakers for language {script.language!r}, pool has {len(cands)}",
            reason="no_voices",
        )
    i, j = rng.choice(len(cands), size=2, replace=False)
    return cands[int(i)], cands[int(j)]  # distinct entries: the pool holds a speaker once


def load_voice_audio(voice: Voice, sample_rate: int | None = None) -> tuple[Audio, int]:
    """The reference clip, optionally resampled (Dia wants 44.1 kHz, Spark 16 kHz)."""
    return read_seconds(voice.clip_path, sample_rate=sample_rate)
