"""The synthesize stage: scripts + voice references → a rendered PH work directory.

:func:`synthesize_scripts` does one shard: the pipeline's synth step
(:func:`duetflow.pipeline.stages.synth.run_synth_shard`), which ``duetflow synthesize`` runs too
(:func:`duetflow.pipeline.commands.synthesize`). Merged, the output is a rendered work
directory exactly like the process stage's: ``audio/<id>.flac``,
``dialogues.parquet``, ``turns.parquet``, ``rejections.parquet`` (stage ``synthesize``).
Inputs = kept + rejected: every script either becomes a dialogue or a rejection with a reason
(with ``quality.dnsmos`` on, a dialogue whose DNSMOS OVRL lies under PH's
``filters.min_dnsmos_ovrl`` is a ``filter`` rejection ``dnsmos_ovrl_low``).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from duetflow.audio.dnsmos import get_model
from duetflow.audio.trim import acoustic_extent
from duetflow.config import RunConfig
from duetflow.errors import InputError
from duetflow.records.convert import dumps
from duetflow.records.dialogue import Rejection, Stage
from duetflow.records.rows import RenderedDialogueRow, RenderedTurnRow
from duetflow.rendering.quality import dnsmos_problem, remove_audio, scored
from duetflow.seeding import rng_for, seed_for
from duetflow.tts.assemble import assemble, draws_key, ph_dialogue_id
from duetflow.tts.backend import Synthesis, SynthesisError, TTSBackend, Voice, load_backend
from duetflow.tts.length_match import HumanDialogue, LengthPlan, draw_human, lines_for_target
from duetflow.tts.qa import SpeakerEncoder, clone_qa
from duetflow.tts.script import Script
from duetflow.tts.voices import VoicePool, choose_voices
from duetflow.turntaking.retime import edge_silence_s

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SynthShardResult:
    """Records of one shard (dialogues, their turns in the same order, rejections)."""

    dialogues: list[RenderedDialogueRow] = field(default_factory=list)
    turns: list[tuple[RenderedTurnRow, ...]] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)
    audio_s: float = 0.0
    synth_s: float = 0.0
    utterances: int = 0


def _utterance_seed(config: RunConfig, dialogue_id: str, speaker: str) -> int:
    return seed_for(config.seed, dialogue_id, "tts", speaker) & 0x7FFFFFFF


def _reject(item_id: str, reason: str, detail: str, path: str = "") -> Rejection:
    return Rejection(item_id, Stage.SYNTHESIZE, reason, detail, corpus="ph", source_path=path)


def _synthesize_lines(
    script: Script, voices: tuple[Any, Any], backend: TTSBackend, config: RunConfig
) -> list[Synthesis]:
    """One backend call per speaker (so batching backends batch), results back in line order."""
    key = draws_key(script.id)
    out: list[Synthesis | None] = [None] * len(script.lines)
    for k, label in enumerate(("A", "B")):
        idx = [i for i, ln in enumerate(script.lines) if ln.speaker == label]
        if not idx:
            continue
        texts = [script.lines[i].text for i in idx]
        res = backend.synthesize(texts, voices[k], _utterance_seed(config, key, label))
        if len(res) != len(texts):
            raise SynthesisError(f"backend returned {len(res)} results for {len(texts)} texts")
        for i, r in zip(idx, res, strict=True):
            out[i] = r
    return [r for r in out if r is not None]


def _human_match(script: Script, voices: VoicePool, config: RunConfig) -> HumanDialogue | None:
    """The human dialogue ``script`` is matched to (its length and, with
    ``synth.match_human_rate``, its pace), drawn from the pool by the script's own draw
    (:func:`duetflow.tts.length_match.draw_human`); None when matching is off or the language
    has no human dialogue."""
    synth = config.synth
    if not (synth.match_human_length or synth.match_human_rate):
        return None
    return draw_human(
        voices.humans_for(script.language),
        # the taxonomy id the PH row will carry (a script may say "ordinary life")
        config.topics.mapper("scripts").map(script.topic).topic,
        rng_for(config.seed, draws_key(script.id), "human"),
        topic_min=synth.match_topic_min,
        need_rate=synth.match_human_rate,
    )


def _paced(
    pair: tuple[Voice, Voice], human: HumanDialogue | None, config: RunConfig
) -> tuple[Voice, Voice]:
    """The pair set to speak at the drawn dialogue's pace (``synth.match_human_rate``)."""
    if human is None or not config.synth.match_human_rate or not human.has_rate:
        return pair
    rate = human.rate_cps
    return (replace(pair[0], speaking_rate_cps=rate), replace(pair[1], speaking_rate_cps=rate))


def _match_length(
    script: Script, syn: list[Synthesis], human: HumanDialogue | None, config: RunConfig
) -> tuple[Script, list[Synthesis], LengthPlan | None]:
    """``script`` and its syntheses cut to the length of the drawn human dialogue
    (:mod:`duetflow.tts.length_match`); unchanged when off or none is known."""
    if not config.synth.match_human_length or human is None:
        return script, syn, None
    target = human.duration_s
    speech = []
    for s in syn:
        ext = acoustic_extent(s.audio.astype(np.float32), s.sample_rate)
        speech.append(0.0 if ext is None else (ext[1] - ext[0]) / s.sample_rate)
    r = config.render
    plan = lines_for_target(
        speech,
        [ln.speaker for ln in script.lines],
        target,
        (r.gap_ms_min + r.gap_ms_max) / 2000.0,
        edge_silence_s(r),
        config.window.select_range,
    )
    return replace(script, lines=script.lines[: plan.lines]), syn[: plan.lines], plan


def human_provenance(human: HumanDialogue, pair: tuple[Voice, Voice]) -> dict[str, object]:
    """What a PH dialogue was matched to: the drawn dialogue's topic, length, rate and turns,
    and the pace its voices were asked for (None: their references' own)."""
    rate = None if not human.has_rate else round(human.rate_cps, 3)
    return {
        "topic": human.topic,
        "duration_s": round(human.duration_s, 3),
        "rate_cps": rate,
        "turns": human.turns,
        "speaking_rate_cps": pair[0].speaking_rate_cps,
    }


def synthesize_scripts(
    scripts: Sequence[Script],
    voices: VoicePool,
    backend: str | TTSBackend,
    config: RunConfig,
    out_dir: Path,
    *,
    qa: bool | None = None,
) -> SynthShardResult:
    """Synthesize one shard of scripts into ``out_dir`` (audio written; rows returned).

    ``qa``: None → measure clone similarity when Resemblyzer is installed; False → skip it
    (recorded as not measured). Speaking-rate QA always runs.
    """
    be = (
        load_backend(backend, config.synth.for_backend(backend))
        if isinstance(backend, str)
        else backend
    )
    if config.quality.dnsmos:
        get_model()  # the install hint (ConfigError) before any synthesis
    encoder = None if qa is False else SpeakerEncoder.get()
    if qa and encoder is not None and not encoder.available:
        log.warning("clone QA requested but unavailable: %s", encoder.error)
    dialogues: list[RenderedDialogueRow] = []
    turn_rows: list[tuple[RenderedTurnRow, ...]] = []
    rejections: list[Rejection] = []
    audio_s = synth_total = 0.0
    n_utt = 0
    for script in scripts:
        did = ph_dialogue_id(script.id, be.name)
        try:
            human = _human_match(script, voices, config)
            pair = _paced(choose_voices(script, voices, config), human, config)
            t0 = time.perf_counter()
            syn = _synthesize_lines(script, pair, be, config)
            synth_s = time.perf_counter() - t0
            script, syn, plan = _match_length(script, syn, human, config)
            done = assemble(script, pair, syn, config, out_dir, be.provenance(), be.name)
        except InputError as e:
            rejections.append(_reject(did, e.reason, str(e), script.path))
            continue
        except SynthesisError as e:
            rejections.append(_reject(did, e.reason, str(e), script.path))
            continue
        speakers = [0 if ln.speaker == "A" else 1 for ln in script.lines]
        report = clone_qa(
            [ln.text for ln in script.lines],
            speakers,
            list(done.utterances),
            done.sample_rate,
            pair,
            config.synth,
            encoder,
        )
        failure = report.failure(config.synth)
        if failure is not None:
            done.audio_path.unlink(missing_ok=True)
            if done.record.stereo_path:  # issue 27: its two-channel file goes with it
                (done.audio_path.parents[1] / done.record.stereo_path).unlink(missing_ok=True)
            rejections.append(_reject(did, failure[0], failure[1], script.path))
            continue
        prov = json.loads(done.record.provenance)
        prov.update(report.provenance())
        prov["length_match"] = None if plan is None else plan.provenance()
        prov["human_match"] = None if human is None else human_provenance(human, pair)
        row = replace(done.record, provenance=dumps(prov))
        if config.quality.dnsmos:  # issue 29: scores, then filters.min_dnsmos_ovrl
            try:
                row = scored(row, done.turn_records, out_dir)
            except InputError as e:
                remove_audio(row, out_dir)
                rejections.append(_reject(did, e.reason, str(e), script.path))
                continue
            low = dnsmos_problem(row, config.filters.min_dnsmos_ovrl_for(row.category))
            if low is not None:
                remove_audio(row, out_dir)
                rejections.append(
                    Rejection(did, Stage.FILTER, low[0], dumps(low[1]), "ph", script.path)
                )
                continue
        dialogues.append(row)
        turn_rows.append(done.turn_records)
        audio_s += row.duration_s
        synth_total += synth_s
        n_utt += len(script.lines)
    return SynthShardResult(dialogues, turn_rows, rejections, audio_s, synth_total, n_utt)


def backend_rejection(script: Script, config: RunConfig) -> Rejection | None:
    """A ``no_backend`` rejection when ``synth.backends`` names no backend for the language."""
    if config.synth.backends_for(script.language):
        return None
    return _reject(
        f"ph__{script.id}",
        "no_backend",
        f"synth.backends has no TTS backend for language {script.language!r} "
        f"(configured: {sorted(config.synth.backends or {})})",
        script.path,
    )
