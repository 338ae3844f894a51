"""The synth stage: the configured scripts spoken in the voices of real speakers, shard by shard.

The work is :mod:`duetflow.tts.synthesize` (with the script and voice modules, the stage's entry
modules); a shard is cached by its scripts, its backend and the voice pool's fingerprint.
Shards merge in order into ``<workdir>/rendered/ph`` with the rejections of scripts that could
not be loaded or voiced. Voices come from the (matched) rendered work directories.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from duetflow.config import RunConfig
from duetflow.hashing import text_digest
from duetflow.pipeline.cache import PH_LABEL, StepOutcome, build_cached, cache_dir, record_counts
from duetflow.pipeline.executors import Batch
from duetflow.pipeline.merge import merge_workdirs, rendered_dir
from duetflow.pipeline.shards import stable_chunks
from duetflow.pipeline.stage import TTS_TAG, RunState, StageSpec, StepHints, Work, found
from duetflow.pipeline.stages.match import after_match
from duetflow.pipeline.stages.scripts import scripts_wanted, voice_dirs
from duetflow.records import convert, manifest
from duetflow.turntaking.stats import micros

if TYPE_CHECKING:  # the voice pool pulls in the audio stack; a cached run never needs it
    from duetflow.tts.script import Script
    from duetflow.tts.voices import VoicePool as VoicePoolLike

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SynthShard:
    """A slice of the configured scripts for one TTS backend (voices travel as a pool)."""

    label: str
    index: int
    key: str
    scripts: tuple[Script, ...]
    backend: str = "default"


def synth_wanted(config: RunConfig) -> bool:
    """Synthesis is on and has scripts to read (a file/folder, LLM scripts, HH transcripts)."""
    synth = config.synth
    return synth.enabled and (
        synth.scripts is not None or synth.from_hh_transcripts or scripts_wanted(config)
    )


def build_voices(
    config: RunConfig, voices_dirs: Sequence[str | Path], cache: Path | None = None
) -> VoicePoolLike:
    """One voice pool from every rendered work directory (references cached on disk, in
    ``cache``, default ``<workdir>/cache/voices``)."""
    from duetflow.tts.voices import VoicePool, build_voice_pool, sorted_humans

    cache = cache or Path(config.workdir) / "cache" / "voices"
    config = STAGE.scoped(config)
    voices: dict[str, Any] = {}
    problems: list[tuple[str, str, str]] = []
    humans: list[Any] = []
    for d in voices_dirs:
        pool = build_voice_pool(d, config, cache)
        for v in pool.voices:
            voices.setdefault(v.speaker_id, v)
        problems.extend(pool.rejections)
        humans.extend(pool.humans)
    return VoicePool(
        tuple(voices[k] for k in sorted(voices)), tuple(problems), sorted_humans(humans)
    )


def voices_fingerprint(pool: VoicePoolLike) -> str:
    """What the synthesized audio depends on: each voice's clip, transcript and measurements."""
    payload: list[Any] = [dataclasses.asdict(v) for v in pool.voices]
    payload.append([list(h.sort_key()) for h in pool.humans])  # PH lengths and rates drawn from
    return hashlib.sha256(convert.dumps(payload).encode()).hexdigest()


def _script_key(s: Script) -> str:
    return s.id


def plan_synth_shards(
    config: RunConfig,
    voices_dirs: Sequence[str | Path],
    pool: VoicePoolLike,
    rejected: list[Any],
    script_dirs: Sequence[str | Path] = (),
) -> Iterator[SynthShard]:
    """Stream the configured scripts as shards, backend after backend (``synth.backends``).

    Scripts come from ``synth.scripts``, the LLM script folders ``script_dirs`` and, when
    enabled, the kept HH transcripts. Those rejected on loading, or whose language has no
    backend, go to ``rejected`` (once, not per backend).
    """
    from duetflow.records.dialogue import Rejection
    from duetflow.tts.synthesize import backend_rejection

    voices_fp = voices_fingerprint(pool)
    index = 0
    for k, backend in enumerate(config.synth.all_backends()):

        def good(first: bool = k == 0, name: str = backend) -> Iterator[Any]:
            for item in _synth_scripts(config, voices_dirs, script_dirs):
                if isinstance(item, Rejection):
                    if first:
                        rejected.append(item)
                elif name in config.synth.backends_for(item.language):
                    yield item
                elif first and (rej := backend_rejection(item, config)) is not None:
                    rejected.append(rej)

        for batch in stable_chunks(good(), config.runner.shard_size, _script_key):
            text = convert.dumps([s.to_json() for s in batch])
            key = STAGE.key(config, backend, text_digest(text), voices_fp)
            yield SynthShard(PH_LABEL, index, key, tuple(batch), backend)
            index += 1


def _synth_scripts(
    config: RunConfig, voices_dirs: Sequence[str | Path], script_dirs: Sequence[str | Path]
) -> Iterator[Any]:
    """The scripts (and rejections of unreadable ones) that synthesis reads, in order."""
    from duetflow.tts.script import load_scripts, scripts_from_workdir

    if config.synth.scripts is not None:
        yield from load_scripts(config.synth.scripts)
    for d in script_dirs:
        if Path(d).is_dir():
            yield from load_scripts(d)
    if config.synth.from_hh_transcripts:
        for d in voices_dirs:
            yield from scripts_from_workdir(d)


def count_synth_jobs(
    config: RunConfig, voices_dirs: Sequence[str | Path], script_dirs: Sequence[str | Path] = ()
) -> int:
    """How many synthesis jobs :func:`plan_synth_shards` cuts into shards: each readable
    script once per backend of its language (the shards' ``found`` add up to it; the
    progress total). One extra pass over the scripts, which are small text."""
    from duetflow.records.dialogue import Rejection

    return sum(
        len(config.synth.backends_for(item.language))
        for item in _synth_scripts(config, voices_dirs, script_dirs)
        if not isinstance(item, Rejection)
    )


def run_synth_shard(shard: SynthShard, pool: VoicePoolLike, config: RunConfig) -> StepOutcome:
    """Synthesize one shard of scripts into its cache directory (or reuse it)."""

    def build(out: Path) -> StepOutcome:
        from duetflow.tts.synthesize import synthesize_scripts  # the TTS stack: only to build

        scoped = STAGE.scoped(config)
        qa = scoped.synth.clone_qa
        res = synthesize_scripts(list(shard.scripts), pool, shard.backend, scoped, out, qa=qa)
        with manifest.WorkdirWriter(
            out, manifest.RENDERED_DIALOGUE_SCHEMA, manifest.RENDERED_TURN_SCHEMA, (4096,) * 3
        ) as w:
            for row, turns in zip(res.dialogues, res.turns, strict=True):
                w.write(row, turns)
            w.reject(res.rejections)
        kept, rejected, by_reason = record_counts(len(res.dialogues), res.rejections)
        totals = {
            "utterances": res.utterances,
            "audio_us": sum(micros(row.duration_s) for row in res.dialogues),
        }
        return StepOutcome(
            "synth", shard.label, shard.key, str(out), len(shard.scripts), kept, rejected,
            by_reason, shard.index, totals=totals, work_s=res.synth_s,
        )  # fmt: skip

    return build_cached(cache_dir(config, "synth", shard.key), build)


def merge_synth(
    shards: Sequence[StepOutcome], script_rejections: Sequence[Any], config: RunConfig
) -> StepOutcome:
    """The PH work directory: every shard in order, then the scripts rejected before any."""
    records = [convert.rejection_record(r) for r in script_rejections]
    merged = merge_workdirs(
        PH_LABEL, shards, rendered_dir(config, PH_LABEL), extra_rejections=records, stage="synth"
    )
    return dataclasses.replace(merged, found=merged.found + len(records))


def wanted(state: RunState) -> bool:
    return synth_wanted(state.config)


def plan(state: RunState) -> Iterable[Work]:
    """One unit: the scripts (configured, LLM, HH transcripts) voiced from the voice pool."""
    config = state.config
    voices = voice_dirs(state)
    scripts = state.output("scripts")
    llm_dirs, rejected = ([], []) if not scripts else (scripts[0][0], list(scripts[0][1]))
    pool = build_voices(config, voices)
    log.info("voice pool: %d speakers from %d work directories", len(pool.voices), len(voices))
    shards = plan_synth_shards(config, voices, pool, rejected, llm_dirs)
    batch = Batch("synth", PH_LABEL, window=config.synth.concurrency)
    yield Work(shards, (pool, config), batch, context=rejected)


def merge(state: RunState, work: Work, done: list[Any]) -> list[StepOutcome]:
    merged = merge_synth(done, work.context, state.config)
    state.steps.extend(done)
    state.workdirs.append(merged)
    log.info(
        "synthesize: %d shards (%d reused), %d kept, %d rejected -> %s", len(done),
        sum(s.reused for s in done), merged.kept, merged.rejected, merged.path,
    )  # fmt: skip
    return [merged]


STAGE = StageSpec(
    "synth",
    # filters and quality: DNSMOS scores and filters.min_dnsmos_ovrl (issue 29)
    ("seed", "sample_rate", "synth", "render", "turns", "window", "topics", "filters", "quality"),
    ("duetflow.tts.synthesize", "duetflow.tts.script", "duetflow.tts.voices"),
    inputs="a shard of scripts, the voice pool of the rendered work directories",
    outputs="PH tables + audio of the shard; merged into rendered/ph",
    step=run_synth_shard,
    plan=plan,
    merge=merge,
    wanted=wanted,
    resume=after_match,
    hints=StepHints(
        "synthesize-shard",
        "synthesize-{shard.index}",
        (TTS_TAG,),
        retries=1,
        delay_s=5,
        backoff=True,
    ),
    flow="synthesize",
    size=found,
)
