"""The whole configured pipeline as plain Python: shards, cache keys, resume, merge.

The one definition of a run: :func:`run_pipeline` runs the stage functions (``ingest_stage``,
``process_stage``, ``match_stage``, ``synth_stage``, ``publish_stage``, in the order of
:data:`duetflow.stages.STAGES`) on an executor (:mod:`duetflow.executors`): in this process by
default, or as Prefect tasks and subflows (``duetflow.flows.executor.PrefectExecutor``, what
``build_dataset`` passes). Both give byte-identical work directories and releases, which is
what makes the Prefect overhead measurable (``bench/flows.py``) and the flows thin.

Caching and resume are content-addressed directories in the work directory::

    <workdir>/cache/ingest/<key>/      intake tables of one corpus          + result.json
    <workdir>/cache/process/<key>/     rendered tables + audio of one shard + result.json
    <workdir>/cache/synth/<key>/       PH tables + audio of one script shard + result.json
    <workdir>/rendered/<label>/        merged work directory per corpus (audio hard-linked)
    <workdir>/matched/<label>/         the same without HH windows left out by HH ↔ HM matching
    <workdir>/scripts/{generated,rewritten}/   LLM scripts (one file each; resumable)
    <workdir>/rendered/ph/             merged PH work directory

A key is ``sha256(input fingerprint + hash of the config sections the stage reads + hash of
the code it imports)``, declared per stage in :mod:`duetflow.stages`. A step builds into
``<key>.partial`` and renames it when complete, so a killed run
leaves no half-written shard that looks finished; the re-run finds every finished shard by its
key and only computes the rest. Changing a threshold changes only the keys of the stages that
read its section.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import shutil
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow.parquet as pq

from duetflow import durable, manifest
from duetflow.config import CorpusSpec, RunConfig
from duetflow.errors import ConfigError
from duetflow.executors import Batch, Executor, PlainExecutor
from duetflow.keys import dialogues_fingerprint, files_fingerprint, text_digest, tree_fingerprint
from duetflow.model import Dialogue, Rejection, safe_id
from duetflow.stages import INGEST, MATCH, PROCESS, REPORT, SCRIPTS, SYNTH
from duetflow.turntaking.stats import mean_of, seconds_of

if TYPE_CHECKING:
    from duetflow.release.publish import ReportMaker, StagedRelease
    from duetflow.tts.script import Script
    from duetflow.tts.voices import VoicePool as VoicePoolLike

T = TypeVar("T")

log = logging.getLogger(__name__)

RESULT = "result.json"
PH_LABEL = "ph"


# --- records ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StepOutcome:
    """What one step (corpus ingest, process shard, synth shard, merge) produced.

    Persisted as ``result.json`` beside the step's tables; ``reused`` says whether this run
    found it finished instead of computing it.
    """

    stage: str
    label: str
    key: str
    path: str
    found: int = 0
    kept: int = 0
    rejected: int = 0
    by_reason: Mapping[str, int] = field(default_factory=dict)
    index: int = 0
    reused: bool = False

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data.pop("reused")
        data["by_reason"] = dict(sorted(self.by_reason.items()))
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, reused: bool = False) -> StepOutcome:
        return cls(
            stage=data["stage"],
            label=data["label"],
            key=data["key"],
            path=data["path"],
            found=int(data.get("found", 0)),
            kept=int(data.get("kept", 0)),
            rejected=int(data.get("rejected", 0)),
            by_reason=dict(data.get("by_reason", {})),
            index=int(data.get("index", 0)),
            reused=reused,
        )


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


@dataclass(frozen=True)
class ReleaseSummary:
    """A published release: its id, the store, publish's own record and the report step."""

    release_id: str
    store: str
    info: Mapping[str, Any]
    report: StepOutcome | None = None


@dataclass(frozen=True)
class PipelineResult:
    """Everything a run did, per stage; ``computed``/``reused`` count steps."""

    steps: tuple[StepOutcome, ...]
    merged: tuple[StepOutcome, ...]  # what was published: corpora after matching, then PH
    release: ReleaseSummary | None
    processed: tuple[StepOutcome, ...] = ()  # each corpus as processed, before matching

    def computed(self, stage: str) -> int:
        return sum(1 for s in self.steps if s.stage == stage and not s.reused)

    def reused(self, stage: str) -> int:
        return sum(1 for s in self.steps if s.stage == stage and s.reused)


# --- cache directories --------------------------------------------------------------------------


def cache_dir(config: RunConfig, stage: str, key: str) -> Path:
    return Path(config.workdir) / "cache" / stage / key


def load_outcome(path: Path) -> StepOutcome | None:
    """The finished step at ``path``, or None when it was never completed."""
    try:
        data = json.loads((path / RESULT).read_text(encoding="utf-8"))
    except (FileNotFoundError, NotADirectoryError, json.JSONDecodeError):
        return None
    return StepOutcome.from_json(data, reused=True)


def _build_cached(final: Path, build: Callable[[Path], StepOutcome]) -> StepOutcome:
    """Reuse ``final`` when complete, else build into ``final.partial`` and rename it in place."""
    done = load_outcome(final)
    if done is not None:
        return done
    partial = final.with_name(final.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    if final.exists():  # a directory without result.json is not a result
        shutil.rmtree(final)
    partial.mkdir(parents=True)
    try:
        outcome = build(partial)
        outcome = dataclasses.replace(outcome, path=str(final), reused=False)
        text = json.dumps(outcome.to_json(), sort_keys=True)
        durable.sync_tree(partial)  # one sync per step, then its commit marker
        durable.write_marker(partial / RESULT, text)
    except BaseException:  # a failed step leaves nothing behind, not even its .partial folder
        shutil.rmtree(partial, ignore_errors=True)
        raise
    try:
        os.replace(partial, final)
        durable.sync_dir(final.parent)
    except OSError:  # another run finished the same key first: its result is as good
        shutil.rmtree(partial, ignore_errors=True)
        again = load_outcome(final)
        if again is None:
            raise
        return again
    return outcome


def _record_counts(kept: int, rejections: Iterable[Rejection]) -> tuple[int, int, dict[str, int]]:
    """(kept, rejections, rejections by ``stage:reason``) of a step, from its own records."""
    by_reason = Counter(f"{r.stage}:{r.reason}" for r in rejections)
    return kept, sum(by_reason.values()), dict(sorted(by_reason.items()))


def _table_counts(workdir: Path) -> tuple[int, int, dict[str, int]]:
    """(kept dialogues, rejections, rejections by ``stage:reason``) of a work directory.

    For steps whose records are not in hand (an ingest, a matched copy); shard steps and merges
    count their own records (:func:`_record_counts`, the parts' outcomes).
    """
    kept = 0
    dpath = workdir / manifest.DIALOGUES
    if dpath.exists():
        kept = pq.ParquetFile(dpath).metadata.num_rows
    by_reason: Counter[str] = Counter()
    rpath = workdir / manifest.REJECTIONS
    if rpath.exists():
        for row in manifest.iter_rows(rpath, columns=["stage", "reason"]):
            by_reason[f"{row['stage']}:{row['reason']}"] += 1
    return kept, sum(by_reason.values()), dict(sorted(by_reason.items()))


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
    from duetflow.corpora import get_adapter

    spec = job.spec
    options = manifest.dumps(dict(sorted(spec.options.items())))
    return INGEST.key(
        config, spec.name, str(Path(spec.root).resolve()), options,
        tree_fingerprint(spec.root), spec.licence or "",
        plugins=(get_adapter(spec.name).__module__,),
    )  # fmt: skip


def run_ingest(job: CorpusJob, config: RunConfig, key: str | None = None) -> StepOutcome:
    """Ingest one corpus into its cache directory (or find it already ingested)."""
    from duetflow.ingest import ingest

    key = key or ingest_key(job, config)

    def build(out: Path) -> StepOutcome:
        spec = job.spec
        report = ingest(
            spec.name, spec.root, out, INGEST.scoped(config), dict(spec.options) or None,
            licence=spec.licence,
        )  # fmt: skip
        kept, rejected, by_reason = _table_counts(out)
        found = int(getattr(report, "found", kept + rejected))
        log.info("ingest %s: %d found, %d kept, %d rejected", job.label, found, kept, rejected)
        return StepOutcome("ingest", job.label, key, str(out), found, kept, rejected, by_reason)

    return _build_cached(cache_dir(config, "ingest", key), build)


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
    label: str, intake_dir: str | Path, config: RunConfig
) -> Iterator[ProcessShard]:
    """Stream an intake work directory as shards of about ``runner.shard_size`` dialogues."""
    dialogues = manifest.iter_dialogues(intake_dir)
    for i, batch in enumerate(stable_chunks(dialogues, config.runner.shard_size, _dialogue_key)):
        key = PROCESS.key(config, dialogues_fingerprint(batch))
        yield ProcessShard(label=label, index=i, key=key, dialogues=tuple(batch))


def run_process_shard(shard: ProcessShard, config: RunConfig) -> StepOutcome:
    """Window, filter and render one shard into its cache directory (or reuse it)."""
    from duetflow.process import process_dialogues

    def build(out: Path) -> StepOutcome:
        res = process_dialogues(list(shard.dialogues), PROCESS.scoped(config), out)
        kept, rejected, by_reason = _record_counts(len(res.dialogues), res.rejections)
        return StepOutcome(
            "process", shard.label, shard.key, str(out), len(shard.dialogues), kept, rejected,
            by_reason, shard.index,
        )  # fmt: skip

    return _build_cached(cache_dir(config, "process", shard.key), build)


# --- synthesize ---------------------------------------------------------------------------------


def build_voices(config: RunConfig, voices_dirs: Sequence[str | Path]) -> VoicePoolLike:
    """One voice pool from every rendered work directory (references cached on disk)."""
    from duetflow.tts.voices import VoicePool, build_voice_pool

    config = SYNTH.scoped(config)
    cache = Path(config.workdir) / "cache" / "voices"
    voices: dict[str, Any] = {}
    problems: list[tuple[str, str, str]] = []
    for d in voices_dirs:
        pool = build_voice_pool(d, config, cache)
        for v in pool.voices:
            voices.setdefault(v.speaker_id, v)
        problems.extend(pool.rejections)
    return VoicePool(tuple(voices[k] for k in sorted(voices)), tuple(problems))


def voices_fingerprint(pool: VoicePoolLike) -> str:
    """What the synthesized audio depends on: each voice's clip, transcript and measurements."""
    payload = [dataclasses.asdict(v) for v in pool.voices]
    return hashlib.sha256(manifest.dumps(payload).encode()).hexdigest()


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
    from duetflow.model import Rejection
    from duetflow.tts.pipeline import backend_rejection
    from duetflow.tts.script import load_scripts, scripts_from_workdir

    def scripts() -> Iterator[Any]:
        if config.synth.scripts is not None:
            yield from load_scripts(config.synth.scripts)
        for d in script_dirs:
            if Path(d).is_dir():
                yield from load_scripts(d)
        if config.synth.from_hh_transcripts:
            for d in voices_dirs:
                yield from scripts_from_workdir(d)

    voices_fp = voices_fingerprint(pool)
    index = 0
    for k, backend in enumerate(config.synth.all_backends()):

        def good(first: bool = k == 0, name: str = backend) -> Iterator[Any]:
            for item in scripts():
                if isinstance(item, Rejection):
                    if first:
                        rejected.append(item)
                elif name in config.synth.backends_for(item.language):
                    yield item
                elif first and (rej := backend_rejection(item, config)) is not None:
                    rejected.append(rej)

        for batch in stable_chunks(good(), config.runner.shard_size, _script_key):
            text = manifest.dumps([s.to_json() for s in batch])
            key = SYNTH.key(config, backend, text_digest(text), voices_fp)
            yield SynthShard(PH_LABEL, index, key, tuple(batch), backend)
            index += 1


def run_synth_shard(shard: SynthShard, pool: VoicePoolLike, config: RunConfig) -> StepOutcome:
    """Synthesize one shard of scripts into its cache directory (or reuse it)."""
    from duetflow.tts.pipeline import synthesize_scripts

    def build(out: Path) -> StepOutcome:
        res = synthesize_scripts(
            list(shard.scripts), pool, shard.backend, SYNTH.scoped(config), out
        )
        with (
            manifest.TableWriter(out / manifest.DIALOGUES, manifest.RENDERED_DIALOGUE_SCHEMA) as dw,
            manifest.TableWriter(out / manifest.TURNS, manifest.RENDERED_TURN_SCHEMA) as tw,
            manifest.TableWriter(out / manifest.REJECTIONS, manifest.REJECTION_SCHEMA) as rw,
        ):
            for row, turns in zip(res.dialogues, res.turns, strict=True):
                dw.write([row.to_row()])
                tw.write(t.to_row() for t in turns)
            rw.write(manifest.rejection_to_row(r) for r in res.rejections)
        kept, rejected, by_reason = _record_counts(len(res.dialogues), res.rejections)
        return StepOutcome(
            "synth", shard.label, shard.key, str(out), len(shard.scripts), kept, rejected,
            by_reason, shard.index,
        )  # fmt: skip

    return _build_cached(cache_dir(config, "synth", shard.key), build)


# --- merge --------------------------------------------------------------------------------------


def _link(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def merge_workdirs(
    label: str,
    parts: Sequence[StepOutcome],
    out_dir: str | Path,
    *,
    leading_rejections: Sequence[str | Path] = (),
    extra_rejections: Iterable[Mapping[str, Any]] = (),
    stage: str = "merge",
) -> StepOutcome:
    """Concatenate shard work directories into one, in shard order, streaming row groups.

    Shards are ordered by ``index`` (their position in the intake stream), not by completion, so
    threads, Dask and a resumed run write the same bytes. Audio files are hard-linked (copied
    across file systems); ``audio_path`` stays relative to the work directory. Rejections from
    earlier stages (``leading_rejections``) come first, so inputs = kept + rejected holds for the
    merged directory alone.
    """
    out = Path(out_dir)
    partial = out.with_name(f".{out.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        outcome = _merge_into(
            partial, label, parts, out, leading_rejections, extra_rejections, stage
        )
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    if out.exists():
        shutil.rmtree(out)
    os.replace(partial, out)
    return outcome


def _merge_into(
    partial: Path,
    label: str,
    parts: Sequence[StepOutcome],
    out: Path,
    leading_rejections: Sequence[str | Path],
    extra_rejections: Iterable[Mapping[str, Any]],
    stage: str,
) -> StepOutcome:
    ordered = sorted(parts, key=lambda p: p.index)
    tables = {
        manifest.DIALOGUES: manifest.RENDERED_DIALOGUE_SCHEMA,
        manifest.TURNS: manifest.RENDERED_TURN_SCHEMA,
    }
    for name, default_schema in tables.items():
        sources = [Path(p.path) / name for p in ordered if (Path(p.path) / name).exists()]
        schema = pq.read_schema(sources[0]) if sources else default_schema
        with manifest.TableWriter(partial / name, schema) as w:
            for src in sources:
                pf = pq.ParquetFile(src)
                for g in range(pf.num_row_groups):
                    w.write(pf.read_row_group(g).to_pylist())
    reasons: Counter[str] = Counter()

    def counted(rows: Iterable[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
        for row in rows:
            reasons[f"{row['stage']}:{row['reason']}"] += 1
            yield row

    for p in ordered:  # the shards' own counts, from their outcomes
        reasons.update(p.by_reason)
    with manifest.TableWriter(partial / manifest.REJECTIONS, manifest.REJECTION_SCHEMA) as w:
        for src in [*map(Path, leading_rejections)]:
            if src.exists():
                w.write(counted(manifest.iter_rows(src)))
        w.write(counted(extra_rejections))
        for p in ordered:
            src = Path(p.path) / manifest.REJECTIONS
            if src.exists():
                w.write(manifest.iter_rows(src))
    for p in ordered:
        audio = Path(p.path) / "audio"
        if audio.is_dir():
            for f in sorted(audio.rglob("*")):
                if f.is_file():
                    _link(f, partial / "audio" / f.relative_to(audio))
    _merge_stats(ordered, partial, [Path(p) for p in leading_rejections])
    kept, rejected = sum(p.kept for p in ordered), sum(reasons.values())
    by_reason = dict(sorted(reasons.items()))
    found = sum(p.found for p in ordered)
    outcome = StepOutcome(stage, label, "", str(out), found, kept, rejected, by_reason)
    (partial / RESULT).write_text(json.dumps(outcome.to_json(), sort_keys=True), encoding="utf-8")
    return outcome


def merge_stats(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Fold ``stats.json`` documents of shards into one, as if one run had counted them all.

    Counts add up, histogram ``counts`` add bin by bin, ``edges`` stay, ``min``/``max`` take
    the extreme; sums kept in integer microseconds (``sum_us``, ``*_duration_us``) add exactly
    and the means and durations derived from them are recomputed, so the merged document is
    the same bytes whatever the shard borders. A ``mean`` without ``sum_us`` is re-weighted by
    ``n``; anything else keeps the first value.
    """
    out: dict[str, Any] = {}
    for part in parts:
        for k, v in part.items():
            cur = out.get(k)
            if cur is None:
                out[k] = json.loads(json.dumps(v))
            elif isinstance(v, Mapping) and isinstance(cur, dict):
                out[k] = _merge_hist(cur, v) if "n" in v and "mean" in v else merge_stats([cur, v])
            elif isinstance(v, bool) or k == "edges":
                continue
            elif k in ("min", "max") and isinstance(v, int | float):
                out[k] = min(cur, v) if k == "min" else max(cur, v)
            elif isinstance(v, int | float) and isinstance(cur, int | float):
                total = cur + v
                out[k] = round(total, 6) if isinstance(total, float) else total
            elif isinstance(v, list) and isinstance(cur, list) and len(v) == len(cur):
                out[k] = [a + b for a, b in zip(cur, v, strict=True)]
    for k in list(out):
        if k.endswith("_duration_us") and isinstance(out[k], int):
            out[k.removesuffix("_us") + "_s"] = seconds_of(out[k])
    return out


def _merge_hist(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    merged = merge_stats([{k: v for k, v in a.items() if k != "mean"},
                          {k: v for k, v in b.items() if k != "mean"}])  # fmt: skip
    if isinstance(merged.get("sum_us"), int):
        merged["mean"] = mean_of(merged["sum_us"], merged["n"])
        return merged
    weighted = [
        (m, n) for m, n in ((a.get("mean"), a["n"]), (b.get("mean"), b["n"])) if m is not None
    ]
    n = sum(n for _, n in weighted)
    merged["mean"] = sum(m * n for m, n in weighted) / n if n else None
    return merged


def _merge_stats(
    parts: Sequence[StepOutcome], out: Path, leading_rejections: Sequence[Path]
) -> None:
    """``stats.json`` of the merged directory: the shards' plus the carried rejections."""
    docs: list[Mapping[str, Any]] = []
    carried = [p for p in leading_rejections if p.exists()]
    if carried:
        from duetflow.turntaking.stats import CorpusStats

        acc = CorpusStats()
        for path in carried:
            for row in manifest.iter_rows(path):
                acc.add_rejection(manifest.rejection_from_row(row))
        docs.append(acc.to_dict())
    shard_docs = [Path(p.path) / "stats.json" for p in parts]
    docs.extend(json.loads(f.read_text(encoding="utf-8")) for f in shard_docs if f.exists())
    if any(f.exists() for f in shard_docs):
        text = json.dumps(merge_stats(docs), sort_keys=True, indent=1)
        (out / "stats.json").write_text(text, encoding="utf-8")


def rendered_dir(config: RunConfig, label: str) -> Path:
    return Path(config.workdir) / "rendered" / label


def merge_process(
    job: CorpusJob, intake: StepOutcome, shards: Sequence[StepOutcome], config: RunConfig
) -> StepOutcome:
    """The corpus's rendered work directory: intake rejections + every shard, in order."""
    merged = merge_workdirs(
        job.label,
        shards,
        rendered_dir(config, job.label),
        leading_rejections=[Path(intake.path) / manifest.REJECTIONS],
        stage="process",
    )
    return dataclasses.replace(merged, found=intake.found)


def merge_synth(
    shards: Sequence[StepOutcome], script_rejections: Sequence[Any], config: RunConfig
) -> StepOutcome:
    rows = [manifest.rejection_to_row(r) for r in script_rejections]
    merged = merge_workdirs(
        PH_LABEL, shards, rendered_dir(config, PH_LABEL), extra_rejections=rows, stage="synth"
    )
    return dataclasses.replace(merged, found=merged.found + len(rows))


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
        ids = [
            r["dialogue_id"] for r in manifest.iter_rows(d / manifest.DIALOGUES, ["dialogue_id"])
        ]
        drop = {i: plan.dropped[i] for i in ids if i in plan.dropped}
        if not drop:
            out.append(m)
            continue
        key = MATCH.key(
            config, files_fingerprint([d / manifest.DIALOGUES, d / manifest.REJECTIONS]),
            manifest.dumps(sorted(drop.items())),
        )  # fmt: skip
        target = matched_dir(config, m.label)
        done = load_outcome(target)
        if done is not None and done.key == key:
            out.append(done)
            continue
        apply_match(d, target, drop)
        kept, rejected, by_reason = _table_counts(target)
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


# --- publish ------------------------------------------------------------------------------------


def report_key(staged: StagedRelease) -> str:
    """Key of a release's report: its work directories' tables, its id and its split plan."""
    dirs = staged.workdirs
    names = (manifest.DIALOGUES, manifest.TURNS, manifest.REJECTIONS, "stats.json")
    fp = files_fingerprint(d / n for d in dirs for n in names)
    splits = text_digest(manifest.dumps(sorted(staged.splits.items())))
    return REPORT.key(staged.config, fp, staged.release_id, splits, *(d.name for d in dirs))


def cached_report(config: RunConfig, done: list[StepOutcome]) -> ReportMaker:
    """A :data:`~duetflow.release.publish.ReportMaker` that reuses a finished report.

    The report is drawn from the staged release (its splits and id) into
    ``<workdir>/cache/report/<key>/report``; re-publishing the same release re-measures
    nothing. Each report step's outcome is appended to ``done``.
    """

    def make(staged: StagedRelease) -> Path:
        from duetflow.report import release_report

        key = report_key(staged)

        def build(out: Path) -> StepOutcome:
            release_report(dataclasses.replace(staged, staging=out))
            return StepOutcome("report", "report", key, str(out))

        outcome = _build_cached(cache_dir(config, "report", key), build)
        done.append(outcome)
        return Path(outcome.path) / "report"

    return make


def run_publish(
    workdirs: Sequence[str | Path],
    config: RunConfig,
    release_id: str | None = None,
) -> ReleaseSummary:
    """Validate, split and publish the rendered work directories with the release's report.

    Idempotent for equal content. The report is drawn from the staged release (splits, id) and
    copied to ``<workdir>/report`` as well, a stable place to open it from.
    """
    from duetflow.release.publish import publish

    reports: list[StepOutcome] = []
    info = publish(
        [Path(w) for w in workdirs],
        config.release.store,
        config,
        release_id=release_id or config.release.release_id,
        report=cached_report(config, reports),
    )
    report = reports[-1] if reports else None
    if report is not None:
        expose_report(config, report)
    return ReleaseSummary(info.release_id, str(config.release.store), _as_dict(info), report)


def expose_report(config: RunConfig, step: StepOutcome) -> Path:
    """Copy a cached report to ``<workdir>/report`` (a stable place to open it from)."""
    dest = Path(config.workdir) / "report"
    partial = dest.with_name(".report.partial")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        shutil.copytree(Path(step.path) / "report", partial)
        shutil.rmtree(dest, ignore_errors=True)
        partial.rename(dest)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return dest


def _as_dict(obj: Any) -> dict[str, Any]:
    data: Any = {"value": str(obj)}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        data = json.loads(json.dumps(dataclasses.asdict(obj), default=str))
    elif isinstance(obj, Mapping):
        data = json.loads(json.dumps(dict(obj), default=str))
    return dict(data)


# --- the stages, run on an executor -----------------------------------------------------------


def _found(outcome: StepOutcome) -> int:
    return outcome.found


def ingest_stage(
    config: RunConfig, ex: Executor, corpora: Sequence[str] | None = None
) -> list[StepOutcome]:
    """Ingest every configured corpus (or only ``corpora``): one step per corpus."""
    jobs = corpus_jobs(config, corpora)
    done = ex.map(run_ingest, jobs, config, batch=Batch("ingest", total=len(jobs)))
    for r in done:
        log.info(
            "ingest %s: %d found, %d kept, %d rejected (%s)", r.label, r.found, r.kept,
            r.rejected, "reused" if r.reused else "computed",
        )  # fmt: skip
    return done


def find_intakes(config: RunConfig, corpora: Sequence[str] | None = None) -> list[StepOutcome]:
    """The finished ingests of the current corpus files and config (ConfigError if missing)."""
    found = []
    for job in corpus_jobs(config, corpora):
        done = load_outcome(cache_dir(config, "ingest", ingest_key(job, config)))
        if done is None:
            raise ConfigError(
                f"corpus {job.label!r} has no finished ingest for its current files and config "
                f"in {config.workdir}: run the ingest stage first"
            )
        found.append(done)
    return found


def process_stage(
    config: RunConfig,
    ex: Executor,
    intakes: Sequence[StepOutcome],
    corpora: Sequence[str] | None = None,
) -> tuple[list[StepOutcome], list[StepOutcome]]:
    """Window, filter and render every corpus shard by shard; merge into ``rendered/<corpus>``.

    Returns (shard outcomes, merged outcome per corpus).
    """
    by_label = {i.label: i for i in intakes}
    shards: list[StepOutcome] = []
    merged: list[StepOutcome] = []
    for job in corpus_jobs(config, corpora):
        intake = by_label[job.label]
        done = ex.map(
            run_process_shard,
            plan_process_shards(job.label, intake.path, config),
            config,
            batch=Batch("process", job.label, intake.kept, window=process_window(config)),
            size=_found,
        )
        shards.extend(done)
        m = merge_process(job, intake, done, config)
        merged.append(m)
        log.info(
            "process %s: %d shards (%d reused), %d kept, %d rejected -> %s", job.label, len(done),
            sum(s.reused for s in done), m.kept, m.rejected, m.path,
        )  # fmt: skip
    return shards, merged


def process_window(config: RunConfig) -> int:
    """Shards in flight at once: two per worker, so memory follows the shard size."""
    r = config.runner
    workers = r.max_workers if r.kind == "threads" else r.dask_workers * max(1, r.max_workers)
    return 2 * workers


def match_stage(
    config: RunConfig, ex: Executor, merged: Sequence[StepOutcome]
) -> list[StepOutcome]:
    """HH ↔ HM matching over the rendered work directories (one step)."""
    return ex.call(run_match, list(merged), config)


def rendered_outcomes(config: RunConfig, *, with_ph: bool) -> list[StepOutcome]:
    """The corpora's merged work directories found in the work directory (+ PH when asked)."""
    found = [
        o
        for j in corpus_jobs(config)
        if (o := load_outcome(rendered_dir(config, j.label))) is not None
    ]
    ph = load_outcome(rendered_dir(config, PH_LABEL)) if with_ph else None
    return found + ([ph] if ph is not None else [])


def synth_stage(
    config: RunConfig, ex: Executor, voices: Sequence[str]
) -> tuple[list[StepOutcome], StepOutcome | None]:
    """LLM scripts (when configured), then PH synthesis shard by shard, merged into ``ph``.

    ``voices``: the (matched) rendered work directories that lend voices and HH transcripts.
    Returns (shard outcomes, the merged PH outcome or None when synthesis is off).
    """
    if not synth_wanted(config):
        log.info("synthesis disabled or no scripts configured: nothing to do")
        return [], None
    rejected: list[Any] = []
    llm_dirs: list[Path] = []
    if scripts_wanted(config):
        llm_dirs, rejected = ex.call(run_scripts, config, list(voices))
        log.info("LLM scripts in %s (%d rejected)", [str(d) for d in llm_dirs], len(rejected))
    pool = build_voices(config, voices)
    log.info("voice pool: %d speakers from %d work directories", len(pool.voices), len(voices))
    done = ex.map(
        run_synth_shard,
        plan_synth_shards(config, voices, pool, rejected, llm_dirs),
        pool,
        config,
        batch=Batch("synth", PH_LABEL, window=config.synth.concurrency),
        size=_found,
    )
    merged = merge_synth(done, rejected, config)
    log.info(
        "synthesize: %d shards (%d reused), %d kept, %d rejected -> %s", len(done),
        sum(s.reused for s in done), merged.kept, merged.rejected, merged.path,
    )  # fmt: skip
    return done, merged


def publish_stage(
    config: RunConfig, ex: Executor, workdirs: Sequence[str], release_id: str | None = None
) -> ReleaseSummary:
    """Validate, split, draw the report from the staged release and publish (one step)."""
    if not workdirs:
        raise ConfigError(f"nothing to publish: no rendered work directories in {config.workdir}")
    summary = ex.call(run_publish, list(workdirs), config, release_id)
    if summary.report is not None:
        state = "reused" if summary.report.reused else "built"
        log.info("report %s: %s", state, summary.report.path)
    log.info("published release %s to %s", summary.release_id, summary.store)
    return summary


# --- the whole run ------------------------------------------------------------------------------


def run_pipeline(
    config: RunConfig,
    *,
    executor: Executor | None = None,
    corpora: Sequence[str] | None = None,
    synthesize: bool = True,
    publish: bool = True,
    release_id: str | None = None,
) -> PipelineResult:
    """Run the configured pipeline: ingest → process → match → (scripts →) synth → publish.

    The one definition of a run. ``executor`` decides where steps run: in this process
    (default, :class:`~duetflow.executors.PlainExecutor`) or as Prefect tasks
    (``duetflow.flows.executor.PrefectExecutor``, what ``build_dataset`` passes); both give
    byte-identical work directories and releases.
    """
    ex: Executor = executor or PlainExecutor()
    steps: list[StepOutcome] = []
    intakes = ex.stage("ingest", lambda: ingest_stage(config, ex, corpora))
    steps.extend(intakes)
    shard_steps, corpus_merged = ex.stage(
        "process", lambda: process_stage(config, ex, intakes, corpora)
    )
    steps.extend(shard_steps)
    merged = match_stage(config, ex, corpus_merged)
    if synthesize and synth_wanted(config):
        voices = voice_dirs(config, merged)
        synth_steps, ph = ex.stage("synthesize", lambda: synth_stage(config, ex, voices))
        steps.extend(synth_steps)
        if ph is not None:
            merged.append(ph)
    release = None
    if publish:
        dirs = [m.path for m in merged]
        release = ex.stage("publish", lambda: publish_stage(config, ex, dirs, release_id))
        if release.report is not None:
            steps.append(release.report)
    return PipelineResult(tuple(steps), tuple(merged), release, tuple(corpus_merged))
