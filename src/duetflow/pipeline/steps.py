"""The pipeline's step functions: one corpus ingest, one process shard, one synth shard, the
HH ↔ HM match and the LLM scripts, with the shard plans that feed them.

Each ``run_*`` function is one step an executor runs (in this process or as a Prefect task,
:mod:`duetflow.tasks`); each writes its outputs by key through
:func:`duetflow.pipeline.cache.build_cached` and receives only its stage's config sections
(:meth:`duetflow.pipeline.stages.StageSpec.scoped`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import logging
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from duetflow.config import CorpusSpec, RunConfig
from duetflow.errors import ConfigError
from duetflow.hashing import files_fingerprint, text_digest
from duetflow.pipeline.cache import (
    PH_LABEL,
    RESULT,
    StepOutcome,
    build_cached,
    cache_dir,
    load_outcome,
    record_counts,
    table_counts,
)
from duetflow.pipeline.keys import dialogues_fingerprint, tree_fingerprint
from duetflow.pipeline.stages import INGEST, MATCH, PROCESS, SCRIPTS, SYNTH
from duetflow.records import convert, manifest
from duetflow.records.dialogue import Dialogue, safe_id
from duetflow.turntaking.stats import micros

if TYPE_CHECKING:
    from duetflow.tts.script import Script
    from duetflow.tts.voices import VoicePool as VoicePoolLike

T = TypeVar("T")

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CorpusJob:
    """One configured corpus with the label that names its folders (unique within a run)."""

    label: str
    spec: CorpusSpec


@dataclass(frozen=True)
class ProcessShard:
    """A slice of one corpus's intake dialogues, in intake order; ``index`` orders the merge."""

    label: str
    index: int
    key: str
    dialogues: tuple[Dialogue, ...]


@dataclass(frozen=True)
class SynthShard:
    """A slice of the configured scripts for one TTS backend (voices travel as a pool)."""

    label: str
    index: int
    key: str
    scripts: tuple[Script, ...]
    backend: str = "default"


# --- ingest -------------------------------------------------------------------------------------


def corpus_jobs(config: RunConfig, only: Sequence[str] | None = None) -> list[CorpusJob]:
    """The configured corpora with unique folder labels, optionally only those named."""
    counts = Counter(spec.name for spec in config.corpora)
    jobs: list[CorpusJob] = []
    seen: Counter[str] = Counter()
    for spec in config.corpora:
        label = safe_id(spec.name)
        if counts[spec.name] > 1:
            label = f"{label}-{seen[spec.name]}"
        seen[spec.name] += 1
        jobs.append(CorpusJob(label=label, spec=spec))
    if only:
        wanted = set(only)
        unknown = wanted - {j.label for j in jobs} - {j.spec.name for j in jobs}
        if unknown:
            raise ConfigError(f"corpus {sorted(unknown)} is not configured; have {sorted(counts)}")
        jobs = [j for j in jobs if j.label in wanted or j.spec.name in wanted]
    return jobs


def preflight(config: RunConfig) -> None:
    """Check what a run needs before anything starts: raise ConfigError naming every problem.

    Every configured corpus must be a registered adapter that accepts its options, have a root
    that is a directory and a licence (the adapter's or ``corpora[].licence``); configured
    scripts must exist. Cheap: nothing is scanned or imported beyond the adapters.
    """
    from duetflow.corpora import get_adapter

    problems: list[str] = []
    for i, spec in enumerate(config.corpora):
        where = f"corpora[{i}] ({spec.name})"
        try:
            adapter = get_adapter(spec.name)(Path(spec.root), spec.options, config=config)
            adapter.resolve_licence(spec.licence)
        except ConfigError as e:
            problems.append(f"{where}: {e}")
            continue
        if not Path(spec.root).is_dir():
            problems.append(f"{where}: root {spec.root} is not a directory")
    scripts = config.synth.scripts
    if config.synth.enabled and scripts is not None and not Path(scripts).exists():
        problems.append(f"synth.scripts: {scripts} not found")
    if problems:
        raise ConfigError("\n".join(problems))


def ingest_key(job: CorpusJob, config: RunConfig) -> str:
    """Key of one corpus's ingest: adapter, options, licence and the tree's fingerprint, plus the
    resolved root as a locator (the intake tables point at its audio by absolute path, so an
    intake is valid only where it was read; no release records the root,
    :mod:`duetflow.records.locations`)."""
    from duetflow.corpora import get_adapter

    spec = job.spec
    options = convert.dumps(dict(sorted(spec.options.items())))
    return INGEST.key(
        config, spec.name, str(Path(spec.root).resolve()), options,
        tree_fingerprint(spec.root), spec.licence or "",
        plugins=(get_adapter(spec.name).__module__,),
    )  # fmt: skip


def run_ingest(job: CorpusJob, config: RunConfig, key: str | None = None) -> StepOutcome:
    """Ingest one corpus into its cache directory (or find it already ingested)."""
    key = key or ingest_key(job, config)

    def build(out: Path) -> StepOutcome:
        from duetflow.pipeline.ingest import ingest  # not imported when the step is reused

        spec = job.spec
        report = ingest(
            spec.name, spec.root, out, INGEST.scoped(config), dict(spec.options) or None,
            licence=spec.licence,
        )  # fmt: skip
        kept, rejected, by_reason = table_counts(out)
        found = int(getattr(report, "found", kept + rejected))
        log.info("ingest %s: %d found, %d kept, %d rejected", job.label, found, kept, rejected)
        return StepOutcome("ingest", job.label, key, str(out), found, kept, rejected, by_reason)

    return build_cached(cache_dir(config, "ingest", key), build)


# --- process ------------------------------------------------------------------------------------


def stable_chunks(items: Iterable[T], size: int, key: Callable[[T], str]) -> Iterator[list[T]]:
    """Cut a stream into shards of about ``size`` items whose borders depend on the items.

    A shard ends after an item whose key hashes to 0 mod ``size`` (or at ``2 * size`` items), so
    a new studio session inserted between old ones changes only the shard it lands in (two when
    it ends one); cutting every ``size`` items would shift every later shard and re-render
    them all.
    """
    batch: list[T] = []
    for item in items:
        batch.append(item)
        h = int.from_bytes(hashlib.sha256(key(item).encode()).digest()[:8], "big")
        if h % size == 0 or len(batch) >= 2 * size:
            yield batch
            batch = []
    if batch:
        yield batch


def _dialogue_key(d: Dialogue) -> str:
    return d.id


def _script_key(s: Script) -> str:
    return s.id


def plan_process_shards(
    label: str, intake_dir: str | Path | Sequence[str | Path], config: RunConfig
) -> Iterator[ProcessShard]:
    """Stream intake work directories (one, or several read one after the other) as shards of
    about ``runner.shard_size`` dialogues."""
    dirs = [intake_dir] if isinstance(intake_dir, str | Path) else list(intake_dir)
    dialogues = itertools.chain.from_iterable(manifest.iter_dialogues(d) for d in dirs)
    for i, batch in enumerate(stable_chunks(dialogues, config.runner.shard_size, _dialogue_key)):
        key = PROCESS.key(config, dialogues_fingerprint(batch))
        yield ProcessShard(label=label, index=i, key=key, dialogues=tuple(batch))


def run_process_shard(shard: ProcessShard, config: RunConfig) -> StepOutcome:
    """Window, filter and render one shard into its cache directory (or reuse it)."""

    def build(out: Path) -> StepOutcome:
        from duetflow.pipeline.process import process_dialogues  # the render stack: only to build

        res = process_dialogues(list(shard.dialogues), PROCESS.scoped(config), out)
        kept, rejected, by_reason = record_counts(len(res.dialogues), res.rejections)
        totals = {
            "windows": res.windows,
            "windowless": res.windowless,
            "audio_us": sum(micros(r.duration_s) for r in res.dialogues),
        }
        return StepOutcome(
            "process", shard.label, shard.key, str(out), len(shard.dialogues), kept, rejected,
            by_reason, shard.index, totals=totals,
        )  # fmt: skip

    return build_cached(cache_dir(config, "process", shard.key), build)


# --- synthesize ---------------------------------------------------------------------------------


def build_voices(
    config: RunConfig, voices_dirs: Sequence[str | Path], cache: Path | None = None
) -> VoicePoolLike:
    """One voice pool from every rendered work directory (references cached on disk, in
    ``cache``, default ``<workdir>/cache/voices``)."""
    from duetflow.tts.voices import VoicePool, build_voice_pool

    cache = cache or Path(config.workdir) / "cache" / "voices"
    config = SYNTH.scoped(config)
    voices: dict[str, Any] = {}
    problems: list[tuple[str, str, str]] = []
    lengths: list[tuple[str, float]] = []
    for d in voices_dirs:
        pool = build_voice_pool(d, config, cache)
        for v in pool.voices:
            voices.setdefault(v.speaker_id, v)
        problems.extend(pool.rejections)
        lengths.extend(pool.lengths)
    return VoicePool(
        tuple(voices[k] for k in sorted(voices)), tuple(problems), tuple(sorted(lengths))
    )


def voices_fingerprint(pool: VoicePoolLike) -> str:
    """What the synthesized audio depends on: each voice's clip, transcript and measurements."""
    payload: list[Any] = [dataclasses.asdict(v) for v in pool.voices]
    payload.append([list(x) for x in pool.lengths])  # PH lengths drawn from
    return hashlib.sha256(convert.dumps(payload).encode()).hexdigest()


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
            key = SYNTH.key(config, backend, text_digest(text), voices_fp)
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

        scoped = SYNTH.scoped(config)
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


def synth_wanted(config: RunConfig) -> bool:
    """Synthesis is on and has scripts to read (a file/folder, LLM scripts, HH transcripts)."""
    synth = config.synth
    return synth.enabled and (
        synth.scripts is not None or synth.from_hh_transcripts or scripts_wanted(config)
    )


# --- HH <-> HM matching -------------------------------------------------------------------------


def matched_dir(config: RunConfig, label: str) -> Path:
    return Path(config.workdir) / "matched" / label


def run_match(merged: Sequence[StepOutcome], config: RunConfig) -> list[StepOutcome]:
    """HH ↔ HM matching over the rendered work directories (``duetflow.turntaking.matching``).

    Returns the directories every later step reads, in the same order: a directory that loses
    no window is passed through as it is; one that does is rewritten (tables only, audio
    hard-linked) under ``<workdir>/matched/<label>``, reused while its inputs are unchanged.
    The plan's table goes to ``<workdir>/matched/match.json``.
    """
    from duetflow.turntaking.matching import apply_match, items_of, plan_match, write_plan

    dirs = [Path(m.path) for m in merged]
    plan = plan_match(items_of(dirs), config.match, config.seed)
    write_plan(plan, Path(config.workdir) / "matched" / "match.json")
    out: list[StepOutcome] = []
    for m, d in zip(merged, dirs, strict=True):
        ids = list(manifest.iter_column(d / manifest.DIALOGUES, "dialogue_id"))
        drop = {i: plan.dropped[i] for i in ids if i in plan.dropped}
        if not drop:
            out.append(m)
            continue
        key = MATCH.key(
            config, files_fingerprint([d / manifest.DIALOGUES, d / manifest.REJECTIONS]),
            convert.dumps(sorted(drop.items())),
        )  # fmt: skip
        target = matched_dir(config, m.label)
        done = load_outcome(target)
        if done is not None and done.key == key:
            out.append(done)
            continue
        apply_match(d, target, drop)
        kept, rejected, by_reason = table_counts(target)
        outcome = StepOutcome("match", m.label, key, str(target), m.found, kept, rejected,
                              by_reason, m.index)  # fmt: skip
        tmp = target / f".{RESULT}.tmp"
        tmp.write_text(json.dumps(outcome.to_json(), sort_keys=True), encoding="utf-8")
        os.replace(tmp, target / RESULT)
        out.append(outcome)
    log.info("match: %d HH window(s) left out to mirror the HM topics", len(plan.dropped))
    return out


# --- LLM scripts --------------------------------------------------------------------------------


def scripts_wanted(config: RunConfig) -> bool:
    """An LLM is configured and something is to be written with it."""
    sc = config.scripts
    return config.llm.configured and (sc.per_topic > 0 or sc.rewrite_hh)


def script_dirs(config: RunConfig) -> list[Path]:
    """Folders the LLM script step writes (``<workdir>/scripts/generated``, ``.../rewritten``)."""
    root = Path(config.workdir) / "scripts"
    return [root / "generated", root / "rewritten"]


def run_scripts(config: RunConfig, hh_dirs: Sequence[str | Path]) -> tuple[list[Path], list[Any]]:
    """Generate (``scripts.per_topic`` per topic and language) and rewrite (kept HH) scripts.

    Resumable by construction: each script is a file, and only missing ones are requested.
    Returns the folders to synthesize from and the rejections to carry into the PH tables.
    """
    from duetflow.scriptgen import generate_scripts, rewrite_scripts

    config = SCRIPTS.scoped(config)
    generated, rewritten = script_dirs(config)
    rejections: list[Any] = []
    sc = config.scripts
    if sc.per_topic > 0:
        for lang in sc.languages:
            rep = generate_scripts(sc.topics, sc.per_topic, lang, generated / lang, config)
            rejections.extend(rep.rejections)
    if sc.rewrite_hh:
        for d in hh_dirs:
            rep = rewrite_scripts(d, rewritten / Path(d).name, config)
            rejections.extend(rep.rejections)
    return [generated, rewritten], rejections


def voice_dirs(config: RunConfig, merged: Sequence[StepOutcome]) -> list[str]:
    """Rendered (and matched) work directories whose kept dialogues lend voices and HH text."""
    return [m.path for m in merged if m.stage in ("process", "match")]
