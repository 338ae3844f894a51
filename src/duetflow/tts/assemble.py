"""Utterances → one PH dialogue: trim, pauses, ambience, loudness, FLAC + rendered rows.

Order of operations (each step exists because a listener would otherwise hear a tell):

1. resample every utterance to the run's rate, low-pass it to the language's effective bandwidth
   (``render.bandwidth_hz``, the renderer's low-pass, :mod:`duetflow.audio.bandlimit`; the
   ambience too), and trim it to its acoustic extent
   (:func:`duetflow.audio.trim.acoustic_extent`), remove its DC offset (:func:`remove_dc`: a
   TTS engine's offset would tell PH apart), with short fades, so the planned pause is the
   pause heard;
2. per-speaker loudness balance: each speaker's speech is gained to ``render.loudness_target_lufs``;
3. ambience: room tone from the reference recording's non-speech (its pauses between words
   are enough, :func:`duetflow.audio.roomtone.extract_room_tone`), at the reference's measured
   SNR (speech power in VAD regions over noise power, the same measure used on the reference);
   the utterances are trimmed again down to that floor, so the pauses laid are the pauses heard;
4. lay the utterances end to end with pauses drawn from U[render.gap_ms_min, render.gap_ms_max]
   by ``rng_for(seed, draws_key(script_id))`` (the same for every backend voicing the script),
   over the ambience at one steady level, and confirm every pause on the audio
   (:func:`duetflow.rendering.mixdown.mixdown`, the renderer's mixdown): the rows' pauses are the
   acoustic pauses of the file;
5. a true-peak ceiling (gain down, never clip), then FLAC; a dialogue that lasts less than
   ``window.min_s`` or more than ``window.max_s`` is rejected instead (``rendered_too_short`` /
   ``rendered_too_long``), before anything is written.

Rows follow ``RENDERED_DIALOGUE_SCHEMA`` / ``RENDERED_TURN_SCHEMA`` with the same meaning as the
process stage: loudness is the *output* loudness per speaker, gaps are speaker-change gaps.
``orig_start_s``/``orig_end_s`` are the turn's extent on the raw synthesis timeline (raw
utterances laid end to end, as for a per-turn source).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from duetflow.audio.bandlimit import energy_bandwidth_hz, lowpass
from duetflow.audio.io import Audio, read_frames, resample, write_audio
from duetflow.audio.loudness import apply_gain, gain_to_target, measure
from duetflow.audio.roomtone import fill
from duetflow.audio.trim import acoustic_extent
from duetflow.config import RunConfig
from duetflow.errors import InputError
from duetflow.hashing import sha256_file
from duetflow.licences import UNDECLARED, combine
from duetflow.records.convert import dumps
from duetflow.records.dialogue import Category, DesignFields, TurnKind, safe_id
from duetflow.records.rows import RenderedDialogueRow, RenderedTurnRow
from duetflow.rendering.assembly import Bed, Clip
from duetflow.rendering.mixdown import Change, mixdown
from duetflow.rendering.source_rate import resampling_record
from duetflow.seeding import rng_for
from duetflow.tts.backend import Synthesis, Voice
from duetflow.tts.clip_measures import speech_power
from duetflow.tts.script import Script
from duetflow.turntaking.rendered_length import length_problem
from duetflow.turntaking.retime import edge_silence_s

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AssembledDialogue:
    """One written PH dialogue: its rendered rows and what QA needs to look at."""

    record: RenderedDialogueRow
    turn_records: tuple[RenderedTurnRow, ...]
    audio_path: Path
    utterances: tuple[Audio, ...]  # trimmed, gained utterances at the run's rate (for QA)
    sample_rate: int
    ambience_snr_db: float | None


def draws_key(script_id: str) -> str:
    """Key of a script's random draws (pauses, ambience, TTS seeds): one per script, so every
    backend that voices it gets the same plan and only the voices differ."""
    return f"ph__{script_id}"


def ph_dialogue_id(script_id: str, backend: str) -> str:
    """Id of a PH dialogue: the backend is part of it, so one script can be voiced by several."""
    return f"ph__{safe_id(backend)}__{script_id}"


def remove_dc(x: Audio) -> Audio:
    """``x`` less its mean (computed in float64): a TTS engine's DC offset removed.

    eSpeak NG's formant output carries +0.2…1.4e-3 FS of DC per utterance (its glottal source),
    which no human recording of the build holds (the renderer's sources sit within ±6e-5 FS);
    the cue audit read it as a perfect PH separator. Applied to each utterance's acoustic extent
    before the fades, so the utterance laid in the file sums to (nearly) zero.
    """
    if x.size == 0:
        return x
    return (x.astype(np.float64) - float(np.mean(x, dtype=np.float64))).astype(np.float32)


#: Room tone laid before and after an utterance when its extent over the bed is measured, s.
TRIM_PAD_S = 0.25


def extent_over_bed(
    u: Audio, sr: int, tone: Audio, noise_pow: float, rng: np.random.Generator
) -> tuple[int, int] | None:
    """The acoustic extent of utterance ``u`` as it will be heard: over the ambience bed.

    ``u`` is laid on :data:`TRIM_PAD_S` of room tone at ``noise_pow`` either side and its
    extent read by :func:`duetflow.audio.trim.acoustic_extent` with the bed as its floor, as the
    file's gaps are read (:func:`duetflow.audio.edges.measure_gap`). Measured on the clean clip
    with only a target level, a soft sound before the voicing (eSpeak NG's aspirated onsets
    in Chinese) joined the speech across a dip that the bed fills; the file's edges then left
    it in the pause, where the audit read it as a louder, brighter floor.
    """
    pad = int(round(TRIM_PAD_S * sr))
    bed = fill(tone, len(u) + 2 * pad, rng, max(1, int(0.01 * sr)))
    p = float(np.mean(np.square(tone, dtype=np.float64)))
    if p <= 0:
        return acoustic_extent(u, sr, 10 * math.log10(noise_pow))
    y = (bed * np.float32(math.sqrt(noise_pow / p))).astype(np.float32)
    y[pad : pad + len(u)] += u
    ext = acoustic_extent(y, sr)
    if ext is None:
        return None
    i0, i1 = max(0, ext[0] - pad), min(len(u), ext[1] - pad)
    return (i0, i1) if i1 > i0 else None


def _fade(x: Audio, n: int) -> Audio:
    n = min(n, len(x) // 2)
    if n <= 0:
        return x
    y = x.copy()
    ramp = np.linspace(0.0, 1.0, n, dtype=np.float32)
    y[:n] *= ramp
    y[-n:] *= ramp[::-1]
    return y


def assemble(
    script: Script,
    voices: tuple[Voice, Voice],
    syntheses: Sequence[Synthesis],
    config: RunConfig,
    out_dir: Path,
    provenance: Mapping[str, Any],
    backend: str,
) -> AssembledDialogue:
    """Build and write one PH dialogue from per-line syntheses (``syntheses[i]`` ↔ line ``i``).

    ``backend`` names the TTS backend (part of the id, ``tts_backend`` column). Raises
    InputError (reason ``empty_synthesis``) when an utterance has no audible content, and
    (``rendered_too_short`` / ``rendered_too_long``) when the dialogue would last outside
    ``window.min_s``–``window.max_s``.
    """
    did = ph_dialogue_id(script.id, backend)
    sr = config.sample_rate
    r = config.render
    fade_n = max(1, int(round(r.fade_ms / 1000 * sr)))
    spk_index = {"A": 0, "B": 1}

    native = tuple(sorted({int(syn.sample_rate) for syn in syntheses}))
    # 1. resample, band-limit to the language's bandwidth (the same low-pass as the renderer's),
    # trim
    limit = r.bandwidth_for(script.language)
    raw_pos = 0.0
    trimmed: list[Audio] = []
    orig: list[tuple[float, float]] = []
    resampled = [resample(syn.audio.astype(np.float32), syn.sample_rate, sr) for syn in syntheses]
    source_hz = energy_bandwidth_hz(np.concatenate(resampled), sr) if resampled else None
    for i, (line, x0) in enumerate(zip(script.lines, resampled, strict=True)):
        x = lowpass(x0, sr, limit)
        ext = acoustic_extent(x, sr)
        if ext is None:
            raise InputError(
                script.path or script.id,
                f"line {i} ({line.speaker}): synthesis has no audible speech",
                reason="empty_synthesis",
                field=f"lines[{i}]",
            )
        i0, i1 = ext
        trimmed.append(_fade(remove_dc(x[i0:i1]), fade_n))
        orig.append((raw_pos + i0 / sr, raw_pos + i1 / sr))
        raw_pos += len(x) / sr

    # 2. per-speaker loudness to the target
    gains: list[float] = [0.0, 0.0]
    for k in (0, 1):
        own = [u for u, ln in zip(trimmed, script.lines, strict=True) if spk_index[ln.speaker] == k]
        m = measure(np.concatenate(own), sr) if own else None
        gains[k] = gain_to_target(m.lufs, r.loudness_target_lufs) if m else 0.0
    gained = [
        apply_gain(u, gains[spk_index[ln.speaker]])
        for u, ln in zip(trimmed, script.lines, strict=True)
    ]

    # 3. ambience level: the reference's SNR against this dialogue's speech. Utterances are
    # re-trimmed against that floor, so tails the ambience will mask do not lengthen the pauses.
    amb_voice = next((v for v in voices if v.noise_path and v.snr_db is not None), None)
    tone: Audio | None = None
    noise_pow = 0.0
    if config.synth.ambience and amb_voice is not None and amb_voice.noise_path:
        t, tone_sr = read_frames(amb_voice.noise_path, mono=True)
        # the bed's DC too: a reference's room tone can hold a few 1e-4 FS (its mean)
        t = remove_dc(lowpass(resample(t, tone_sr, sr), sr, limit))
        sp, _ = speech_power(np.concatenate(gained), sr)
        assert amb_voice.snr_db is not None
        if t.size > 8 * fade_n and sp > 0:
            tone, noise_pow = t, sp / 10 ** (amb_voice.snr_db / 10)
            if r.floor_target_dbfs is not None:  # one pause floor for every category
                noise_pow = 10 ** (r.floor_target_dbfs / 10)
            for i, u in enumerate(gained):
                trim_rng = rng_for(config.seed, draws_key(script.id), "trim", i)
                ext2 = extent_over_bed(u, sr, t, noise_pow, trim_rng)
                if ext2 is not None:
                    gained[i] = _fade(u[ext2[0] : ext2[1]], fade_n)
                    o0 = orig[i][0]
                    orig[i] = (o0 + ext2[0] / sr, o0 + ext2[1] / sr)
            # what the re-trim cut changed each speaker's loudness a little: back to the target
            for k in (0, 1):
                idx = [i for i, ln in enumerate(script.lines) if spk_index[ln.speaker] == k]
                if not idx:
                    continue
                m = measure(np.concatenate([gained[i] for i in idx]), sr)
                delta = gain_to_target(m.lufs, r.loudness_target_lufs)
                gains[k] += delta
                for i in idx:
                    gained[i] = apply_gain(gained[i], delta)

    # 4. timeline with seeded pauses between acoustic extents; the ambience bed under
    # everything at the reference's floor, every pause confirmed on the audio
    rng = rng_for(config.seed, draws_key(script.id))
    # the same edge silence as a rendered HH/HM window (one rule, turntaking.retime)
    lead = int(round(edge_silence_s(r) * sr))
    starts: list[int] = []
    pauses: list[float] = []
    pos = lead
    for i, u in enumerate(gained):
        starts.append(pos)
        pos += len(u)
        if i < len(gained) - 1:
            pauses.append(float(rng.uniform(r.gap_ms_min, r.gap_ms_max)) / 1000)
            pos += int(round(pauses[-1] * sr))
    total = pos + lead
    problem = length_problem(total / sr, config.window)
    if problem is not None:
        reason, _ = problem
        raise InputError(
            script.path or script.id,
            f"assembled dialogue lasts {total / sr:.2f} s, outside "
            f"[{config.window.min_s}, {config.window.max_s}] s ({len(gained)} lines)",
            reason=reason,
        )
    two = r.channels != "mono"  # issue 27: a layer per speaker for the two-channel file
    clips = [
        Clip(i, spk_index[line.speaker] if two else None, u,
             _fade(np.ones(len(u), dtype=np.float32), fade_n), s0, 0, len(u))
        for i, (line, s0, u) in enumerate(zip(script.lines, starts, gained, strict=True))
    ]  # fmt: skip
    spans = [(s0, s0 + len(u)) for s0, u in zip(starts, gained, strict=True)]
    bed: Bed | None = None
    amb_snr: float | None = None
    if tone is not None and amb_voice is not None and noise_pow > 0:
        bed, amb_snr = Bed(tone, noise_pow), amb_voice.snr_db
    mixed = mixdown(
        clips,
        spans,
        [Change(i, g) for i, g in enumerate(pauses)],
        total / sr,
        sr,
        bed=bed,
        rng=rng_for(config.seed, draws_key(script.id), "ambience"),
        ceiling_dbtp=r.true_peak_ceiling_dbtp,
        band_s=(r.gap_ms_min / 1000.0, r.gap_ms_max / 1000.0),
        n_stems=2 if two else 0,
    )

    # 5. true-peak ceiling
    ceil = mixed.ceiling_db
    mix = mixed.out
    if ceil < 0:
        mix = apply_gain(mix, ceil)
        gains = [g + ceil for g in gains]
    total = len(mix)
    starts = [s0 + sh for s0, sh in zip(starts, mixed.shifts, strict=True)]
    edges_at = [(float(s0), float(s0 + len(u))) for s0, u in zip(starts, gained, strict=True)]
    for i, gm in enumerate(mixed.measures):  # rows take the edges measured on the file
        if gm is not None and edges_at[i][0] < gm.offset and gm.onset < edges_at[i + 1][1]:
            edges_at[i] = (edges_at[i][0], gm.offset)
            edges_at[i + 1] = (gm.onset, edges_at[i + 1][1])

    rel = f"audio/{did}.{r.audio_format}"
    path = write_audio(out_dir / rel, mix, sr, audio_format=r.audio_format)
    stereo_rel = stereo_sha = None
    if mixed.stems is not None:  # A left, B right, at the mix's ceiling gain
        stereo = apply_gain(mixed.stems, ceil) if ceil < 0 else mixed.stems
        stereo_rel = f"stereo/{did}.{r.audio_format}"
        stereo_sha = sha256_file(
            write_audio(out_dir / stereo_rel, stereo, sr, audio_format=r.audio_format)
        )

    turns: list[RenderedTurnRow] = []
    per_spk: list[list[Audio]] = [[], []]
    gaps: list[float] = []
    for i, (line, s, u) in enumerate(zip(script.lines, starts, gained, strict=True)):
        k = spk_index[line.speaker]
        per_spk[k].append(mix[s : s + len(u)])
        if i > 0 and script.lines[i - 1].speaker != line.speaker:
            gaps.append((edges_at[i][0] - edges_at[i - 1][1]) / sr * 1000)
        turns.append(
            RenderedTurnRow(
                dialogue_id=did,
                turn_index=i,
                speaker=voices[k].name,
                kind=str(TurnKind.TURN),
                start_s=round(edges_at[i][0] / sr, 6),
                end_s=round(edges_at[i][1] / sr, 6),
                orig_start_s=round(orig[i][0], 6),
                orig_end_s=round(orig[i][1], 6),
                text=line.text,
            )
        )
    lufs = [measure(np.concatenate(p), sr).lufs if p else -120.0 for p in per_spk]
    prov = {
        **provenance,
        "script_id": script.id,
        "script_source": script.source,
        "script_path": script.path,
        "script_provenance": dict(script.provenance) or None,
        "source_dialogue_id": script.source_dialogue_id,
        "seed": config.seed,
        "utterance_seeds": [s.seed for s in syntheses],
        "attempts": [s.attempts for s in syntheses],
        "retry_notes": [list(s.notes) for s in syntheses if s.attempts > 1],
        "reference_clip_ids": [voices[0].clip_id, voices[1].clip_id],
        "reference_dialogue_ids": [voices[0].source_dialogue_id, voices[1].source_dialogue_id],
        "reference_snr_db": [voices[0].snr_db, voices[1].snr_db],
        "speakers": [
            {
                "id": v.name,
                "gender": v.gender,
                "gender_source": v.gender_source,
                "pitch_hz": v.pitch_hz,
            }
            for v in voices
        ],
        "ambience": None
        if amb_snr is None or amb_voice is None
        else {
            "from_clip_id": amb_voice.clip_id,
            "snr_db": amb_snr,
            "floor_dbfs": round(10 * math.log10(noise_pow), 2),
        },
        "peak_ceiling_gain_db": round(ceil, 3),
        "pauses_ms": [round(p * 1000, 3) for p in pauses],
        "pauses_measured_ms": [
            None if gm is None else round(gm.gap / sr * 1000, 3) for gm in mixed.measures
        ],
        "gap_corrections": mixed.corrected,
        "resampling": resampling_record(native, sr),
        "bandwidth": {
            "source_hz": None if source_hz is None else round(source_hz, 1),
            "limit_hz": limit,
        },
    }
    topic = config.topics.mapper("scripts").map(script.topic)
    design = DesignFields(
        source_topic=script.source_topic or topic.source_topic, tts_backend=backend
    )
    row = RenderedDialogueRow(
        dialogue_id=did,
        # a PH dialogue made from an HH transcript shares its source recording (split group)
        source_id=script.source_id or script.source_dialogue_id or script.id,
        corpus="ph",
        category=str(Category.PH),
        language=script.language,
        topic=topic.topic,
        speaker_a=voices[0].name,
        speaker_b=voices[1].name,
        design=design,
        audio_path=rel,
        sha256=sha256_file(path),
        duration_s=round(total / sr, 6),
        sample_rate=sr,
        num_channels=1,
        n_turns=len(turns),
        loudness_lufs_a=round(lufs[0], 3),
        loudness_lufs_b=round(lufs[1], 3),
        gain_db_a=round(gains[0], 3),
        gain_db_b=round(gains[1], 3),
        gap_ms_min=round(min(gaps), 3) if gaps else None,
        gap_ms_max=round(max(gaps), 3) if gaps else None,
        provenance=dumps(prov),
        # -- trainers (issue 16): licence and source sample rate per dialogue --
        licence=ph_licence(provenance, voices),
        source_sample_rate=max(native, default=sr),
        stereo_path=stereo_rel,
        stereo_sha256=stereo_sha,
    )
    return AssembledDialogue(row, tuple(turns), path, tuple(gained), sr, amb_snr)


def ph_licence(backend_provenance: Mapping[str, Any], voices: Sequence[Voice]) -> str:
    """What binds a PH dialogue: the backend's ``output_licence`` (its weights') and the
    licences of the dialogues its voices (clips, ambience) came from."""
    backend = backend_provenance.get("output_licence", UNDECLARED)
    return combine(backend, *(v.licence or UNDECLARED for v in voices))
