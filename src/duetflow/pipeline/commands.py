"""One stage into a directory of the caller's choosing: ``duetflow process`` and ``synthesize``.

These are not a second implementation of the stages: each runs the stage's own steps, the ones
:func:`duetflow.pipeline.driver.run_pipeline` runs (the stage's shards, its step on each, merged
in shard order: :mod:`duetflow.pipeline.stages.process`, :mod:`duetflow.pipeline.stages.synth`,
:func:`~duetflow.pipeline.merge.merge_workdirs`) on an executor, and merges into ``out_dir``
instead of ``<workdir>/rendered/<label>``. So the
tables, audio and ``stats.json`` a command writes are the bytes the same stage writes inside a
run (``tests/render/test_commands_are_the_stage.py``).

The shard steps build, and the merge writes, in a scratch work directory beside the output,
``.<out name>.steps/`` (``cache/<stage>/<key>/``, ``merged/``); the merged tables,
``stats.json`` and ``audio/`` then replace those names in ``out_dir`` (nothing else there is
touched) and the scratch directory is removed. A run that fails leaves it, so running the
command again reuses every finished shard (the same content-addressed cache as a pipeline
run).
"""

from __future__ import annotations

import logging
import os
import shutil
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from duetflow.config import RunConfig
from duetflow.errors import InputError
from duetflow.pipeline.cache import PH_LABEL, RESULT, StepOutcome
from duetflow.pipeline.executors import Batch, Executor, PlainExecutor
from duetflow.pipeline.merge import merge_workdirs
from duetflow.pipeline.stage import found
from duetflow.pipeline.stages import process, synth
from duetflow.records import convert, manifest
from duetflow.turntaking.stats import seconds_of

log = logging.getLogger(__name__)

#: where the voice references of ``synthesize`` are cached by default (inside its output)
VOICE_CACHE = "voice_cache"


@dataclass(frozen=True)
class ProcessReport:
    """Counts of one :func:`process_workdir` run."""

    out_dir: str
    sources: int  # intake dialogues read
    windows: int  # windows selection cut from them
    units: int  # windows + window-less sources
    rendered: int
    rejected: int  # rejections of this stage (filter, window, render)
    carried: int  # intake rejections carried over
    rejected_by_reason: dict[str, int]
    audio_s: float


@dataclass(frozen=True)
class SynthReport:
    """Counts of one :func:`synthesize` run."""

    out_dir: Path
    backend: str
    scripts: int  # synthesis jobs (script x backend) + scripts rejected before any
    kept: int
    rejected: int
    reasons: dict[str, int]
    voices: int
    audio_s: float
    synth_s: float  # seconds in TTS calls this run (0 for shards found finished)
    utterances: int

    @property
    def rtf(self) -> float:
        """Real-time factor of the TTS calls (synthesis seconds per second of output)."""
        return self.synth_s / self.audio_s if self.audio_s else 0.0


def _scratch(out: Path) -> Path:
    return out.with_name(f".{out.name}.steps")


def _in_scratch(config: RunConfig, out: Path) -> RunConfig:
    """``config`` with the shard steps' work directory beside ``out`` (where is in no key)."""
    return config.model_copy(update={"workdir": _scratch(out)})


def _merge_into_out(
    label: str, shards: Sequence[StepOutcome], out: Path, stage: str, **extra: Any
) -> StepOutcome:
    """Merge the shards in the scratch directory, then move the stage's outputs (tables,
    ``stats.json``, ``audio/``) into ``out``, replacing those names only: anything else the
    caller keeps there (a voice cache) stays, and the scratch directory goes."""
    scratch = _scratch(out)
    merged = merge_workdirs(label, shards, scratch / "merged", stage=stage, **extra)
    out.mkdir(parents=True, exist_ok=True)
    for entry in sorted(Path(merged.path).iterdir()):
        if entry.name == RESULT:
            continue
        dst = out / entry.name
        if dst.is_dir() and not dst.is_symlink():
            shutil.rmtree(dst)
        elif dst.exists() or dst.is_symlink():
            dst.unlink()
        os.replace(entry, dst)
    shutil.rmtree(scratch, ignore_errors=True)
    return merged


def _plain_reasons(by_reason: Mapping[str, int]) -> dict[str, int]:
    """``stage:reason`` counts → ``reason`` counts."""
    out: Counter[str] = Counter()
    for key, n in by_reason.items():
        out[key.split(":", 1)[-1]] += n
    return dict(sorted(out.items()))


def _check_intake(p: Path) -> None:
    if not (p / manifest.DIALOGUES).exists():
        raise InputError(
            p / manifest.DIALOGUES, "not an intake work directory", reason="missing_file"
        )
    missing = [n for n in (manifest.TURNS, manifest.REJECTIONS) if not (p / n).exists()]
    if missing:  # an ingest that died midway: its counts cannot add up
        raise InputError(
            p,
            f"incomplete intake work directory: {', '.join(missing)} missing; ingest again",
            reason="missing_file",
        )


def process_workdir(
    in_dir: str | Path | Sequence[str | Path],
    out_dir: str | Path,
    config: RunConfig,
    *,
    executor: Executor | None = None,
) -> ProcessReport:
    """The process stage over one or more intake work directories into one rendered directory.

    The intake directories are read one after the other as one stream of source dialogues,
    cut into the pipeline's shards, each processed by the pipeline's shard step and merged into
    ``out_dir``: intake rejections first (so inputs = kept + rejected holds for the output
    alone), then each shard's tables, audio and statistics in order.
    """
    ins = [Path(in_dir)] if isinstance(in_dir, str | Path) else [Path(p) for p in in_dir]
    for p in ins:
        _check_intake(p)
    out = Path(out_dir)
    run = _in_scratch(config, out)
    ex: Executor = executor or PlainExecutor()
    total = sum(pq.ParquetFile(p / manifest.DIALOGUES).metadata.num_rows for p in ins)
    shards = ex.map(
        process.STAGE,
        process.plan_process_shards(out.name, ins, run),
        run,
        batch=Batch("process", out.name, total),
        size=found,
    )
    leading = [p / manifest.REJECTIONS for p in ins]
    carried = sum(pq.ParquetFile(p).metadata.num_rows for p in leading)
    merged = _merge_into_out(out.name, shards, out, "process", leading_rejections=leading)
    stage_reasons: Counter[str] = Counter()
    for s in shards:
        stage_reasons.update(_plain_reasons(s.by_reason))
    windows = merged.totals.get("windows", 0)
    audio_s = seconds_of(merged.totals.get("audio_us", 0))
    report = ProcessReport(
        out_dir=str(out),
        sources=merged.found,
        windows=windows,
        units=windows + merged.totals.get("windowless", 0),
        rendered=merged.kept,
        rejected=sum(s.rejected for s in shards),
        carried=carried,
        rejected_by_reason=dict(sorted(stage_reasons.items())),
        audio_s=round(audio_s, 3),
    )
    log.info(
        "process: %d sources, %d windows, %d rendered, %d rejected (+%d carried), %.1f s audio",
        report.sources, windows, report.rendered, report.rejected, carried, audio_s,
    )  # fmt: skip
    return report


def _synth_config(
    config: RunConfig, scripts: Path | None, backend: str | None, qa: bool | None
) -> RunConfig:
    """The command's options as the synth section they stand for (so they are in its keys)."""
    update: dict[str, Any] = {}
    if scripts is not None:
        update["scripts"] = scripts
    if backend:  # one backend for every language
        update.update(backend=backend, backends=None)
    if qa is not None:
        update["clone_qa"] = qa
    if not update:
        return config
    return config.model_copy(update={"synth": config.synth.model_copy(update=update)})


def synthesize(
    scripts: Path | None,
    voices_workdir: Path,
    config: RunConfig,
    out_dir: Path,
    backend: str | None = None,
    *,
    qa: bool | None = None,
    cache_dir: Path | None = None,
    executor: Executor | None = None,
) -> SynthReport:
    """The synthesize stage into ``out_dir``: every script spoken in ``voices_workdir``'s voices.

    Each script is voiced by every backend ``synth.backends`` lists for its language (one PH
    dialogue per script and backend, ids ``ph__<backend>__<script id>``); ``backend``
    overrides that with one backend for all (``synth.backend``). ``scripts`` overrides
    ``synth.scripts``, ``qa`` ``synth.clone_qa``. Voice references are cached in ``cache_dir``
    (default ``out_dir/voice_cache``). The scripts are cut into the pipeline's shards, backend
    after backend, each synthesized by the pipeline's shard step and merged into ``out_dir``.
    The report's ``scripts`` counts synthesis jobs (script x backend) plus scripts rejected
    before any.
    """
    out = Path(out_dir)
    cfg = _in_scratch(_synth_config(config, scripts, backend, qa), out)
    ex: Executor = executor or PlainExecutor()
    pool = synth.build_voices(cfg, [voices_workdir], cache_dir or out / VOICE_CACHE)
    rejected: list[Any] = []
    shards: list[StepOutcome] = ex.map(
        synth.STAGE,
        synth.plan_synth_shards(cfg, [voices_workdir], pool, rejected),
        pool,
        cfg,
        batch=Batch("synthesize", out.name, synth.count_synth_jobs(cfg, [voices_workdir])),
        size=found,
    )
    records = [convert.rejection_record(r) for r in rejected]
    merged = _merge_into_out(PH_LABEL, shards, out, "synth", extra_rejections=records)
    report = SynthReport(
        out_dir=out,
        backend=",".join(cfg.synth.all_backends()),
        scripts=merged.found + len(records),
        kept=merged.kept,
        rejected=merged.rejected,
        reasons=_plain_reasons(merged.by_reason),
        voices=len(pool.voices),
        audio_s=round(seconds_of(merged.totals.get("audio_us", 0)), 3),
        synth_s=round(sum(s.work_s for s in shards), 3),
        utterances=merged.totals.get("utterances", 0),
    )
    log.info("synthesize: %d jobs → %d kept, %d rejected", report.scripts, report.kept,
             report.rejected)  # fmt: skip
    return report
