"""The synthesize stage: scripts + voice references → a rendered PH work directory.

:func:`synthesize` is the stage contract (``scripts + kept dialogues → rendered PH workdir``);
:func:`synthesize_scripts` does one shard and is what the Prefect tasks call. Output is a
rendered work directory exactly like the process stage's: ``audio/<id>.flac``,
``dialogues.parquet``, ``turns.parquet``, ``rejections.parquet`` (stage ``synthesize``).
Inputs = kept + rejected: every script either becomes a dialogue or a rejection with a reason.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from duetflow.config import RunConfig
from duetflow.errors import InputError
from duetflow.manifest import (
    DIALOGUES,
    REJECTION_SCHEMA,
    REJECTIONS,
    RENDERED_DIALOGUE_SCHEMA,
    RENDERED_TURN_SCHEMA,
    TURNS,
    TableWriter,
    dumps,
    rejection_to_row,
)
from duetflow.model import Rejection, Stage
from duetflow.progress import Progress
from duetflow.records import RenderedDialogueRow, RenderedTurnRow
from duetflow.seeding import seed_for
from duetflow.tts.assemble import assemble, draws_key, ph_dialogue_id
from duetflow.tts.base import Synthesis, SynthesisError, TTSBackend, load_backend
from duetflow.tts.qa import SpeakerEncoder, clone_qa
from duetflow.tts.script import Script, load_scripts, scripts_from_workdir
from duetflow.tts.voices import VoicePool, build_voice_pool, choose_voices

log = logging.getLogger(__name__)

VOICE_CACHE = "voice_cache"


@dataclass(frozen=True)
class SynthShardResult:
    """Records of one shard (dialogues, their turns in the same order, rejections)."""

    dialogues: list[RenderedDialogueRow] = field(default_factory=list)
    turns: list[tuple[RenderedTurnRow, ...]] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)
    audio_s: float = 0.0
    synth_s: float = 0.0
    utterances: int = 0


@dataclass(frozen=True)
class SynthReport:
    out_dir: Path
    backend: str
    scripts: int
    kept: int
    rejected: int
    reasons: dict[str, int]
    voices: int
    audio_s: float
    synth_s: float
    utterances: int

    @property
    def rtf(self) -> float:
        """Real-time factor of the TTS calls (synthesis seconds per second of output)."""
        return self.synth_s / self.audio_s if self.audio_s else 0.0


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
            pair = choose_voices(script, voices, config)
            t0 = time.perf_counter()
            syn = _synthesize_lines(script, pair, be, config)
            synth_s = time.perf_counter() - t0
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
            rejections.append(_reject(did, failure[0], failure[1], script.path))
            continue
        prov = json.loads(done.record.provenance)
        prov.update(report.provenance())
        row = replace(done.record, provenance=dumps(prov))
        dialogues.append(row)
        turn_rows.append(done.turn_records)
        audio_s += row.duration_s
        synth_total += synth_s
        n_utt += len(script.lines)
    return SynthShardResult(dialogues, turn_rows, rejections, audio_s, synth_total, n_utt)


def iter_scripts(
    scripts: Path | None, voices_workdir: Path, config: RunConfig
) -> Iterator[Script | Rejection]:
    """Configured script sources: a file/folder and, if enabled, kept HH transcripts."""
    if scripts is not None:
        yield from load_scripts(scripts)
    if config.synth.from_hh_transcripts:
        yield from scripts_from_workdir(voices_workdir)


def _shards(items: Iterable[Script | Rejection], size: int) -> Iterator[list[Script | Rejection]]:
    buf: list[Script | Rejection] = []
    for it in items:
        buf.append(it)
        if sum(isinstance(b, Script) for b in buf) >= size:
            yield buf
            buf = []
    if buf:
        yield buf


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


def synthesize(
    scripts: Path | None,
    voices_workdir: Path,
    config: RunConfig,
    out_dir: Path,
    backend: str | None = None,
    *,
    qa: bool | None = None,
    cache_dir: Path | None = None,
) -> SynthReport:
    """Stage entry point: synthesize every script into a rendered PH work directory.

    Each script is voiced by every backend ``synth.backends`` lists for its language (one PH
    dialogue per script and backend, ids ``ph__<backend>__<script id>``); ``backend``
    overrides that with one backend for all. ``scripts`` overrides ``config.synth.scripts``.
    Voice references are cached in ``cache_dir`` (default ``out_dir/voice_cache``). Streams
    shard by shard (``runner.shard_size`` scripts), backend after backend. The report's
    ``scripts`` counts synthesis jobs (script × backend) plus scripts rejected before any.
    """
    names = [backend] if backend else config.synth.all_backends()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    scripts = scripts if scripts is not None else config.synth.scripts
    pool = build_voice_pool(voices_workdir, config, cache_dir or out / VOICE_CACHE)
    reasons: Counter[str] = Counter()
    n_scripts = kept = 0
    audio_s = synth_s = 0.0
    utterances = 0
    # scripts are small text: one extra parsing pass gives the progress bar its total (jobs:
    # a script per backend of its language; a rejected script once)
    bar = Progress(
        "synthesize",
        "",
        sum(
            1
            if isinstance(it, Rejection) or backend
            else max(1, len(config.synth.backends_for(it.language)))
            for it in iter_scripts(scripts, voices_workdir, config)
        ),
    )
    with (
        TableWriter(out / DIALOGUES, RENDERED_DIALOGUE_SCHEMA, 256) as dw,
        TableWriter(out / TURNS, RENDERED_TURN_SCHEMA, 2048) as tw,
        TableWriter(out / REJECTIONS, REJECTION_SCHEMA, 2048) as rw,
    ):
        for k, name in enumerate(names):
            be: TTSBackend | None = None
            for shard in _shards(
                iter_scripts(scripts, voices_workdir, config), config.runner.shard_size
            ):
                todo: list[Script] = []
                bad: list[Rejection] = []
                for item in shard:
                    if isinstance(item, Rejection):
                        bad += [item] if k == 0 else []
                    elif backend or name in config.synth.backends_for(item.language):
                        todo.append(item)
                    elif k == 0 and (rej := backend_rejection(item, config)) is not None:
                        bad.append(rej)
                n_scripts += len(todo) + len(bad)
                bar.advance(len(todo) + len(bad))
                if todo and be is None:
                    be = load_backend(name, config.synth.for_backend(name))
                res = synthesize_scripts(todo, pool, be, config, out, qa=qa) if be else None
                for rej in bad:
                    rw.write([rejection_to_row(rej)])
                    reasons[rej.reason] += 1
                if res is None:
                    continue
                for row, turns in zip(res.dialogues, res.turns, strict=True):
                    dw.write([row.to_row()])
                    tw.write(t.to_row() for t in turns)
                for rej in res.rejections:
                    rw.write([rejection_to_row(rej)])
                    reasons[rej.reason] += 1
                kept += len(res.dialogues)
                audio_s += res.audio_s
                synth_s += res.synth_s
                utterances += res.utterances
    report = SynthReport(
        out_dir=out,
        backend=",".join(names),
        scripts=n_scripts,
        kept=kept,
        rejected=sum(reasons.values()),
        reasons=dict(sorted(reasons.items())),
        voices=len(pool.voices),
        audio_s=round(audio_s, 3),
        synth_s=round(synth_s, 3),
        utterances=utterances,
    )
    log.info("synthesize: %d jobs → %d kept, %d rejected", n_scripts, kept, report.rejected)
    return report
