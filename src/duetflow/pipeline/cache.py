"""Step results in the work directory: content-addressed, committed once, reused on resume.

Caching and resume are content-addressed directories in the work directory::

    <workdir>/cache/ingest/<key>/      intake tables of one corpus          + result.json
    <workdir>/cache/process/<key>/     rendered tables + audio of one shard + result.json
    <workdir>/cache/synth/<key>/       PH tables + audio of one script shard + result.json
    <workdir>/cache/report/<key>/      the report of one staged release      + result.json

A key is ``sha256(input fingerprint + hash of the config sections the stage reads + hash of
the code it imports)``, declared per stage in :mod:`duetflow.pipeline.stages`. A step builds
into ``<key>.partial`` and renames it when complete (:func:`build_cached`), so a killed run
leaves no half-written shard that looks finished; the re-run finds every finished shard by its
key and only computes the rest. Changing a threshold changes only the keys of the stages that
read its section.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from duetflow.config import RunConfig
from duetflow.errors import DiskFullError
from duetflow.pipeline import durable
from duetflow.records import manifest
from duetflow.records.dialogue import Rejection
from duetflow.records.rows import RejectionRow

log = logging.getLogger(__name__)

#: the commit marker of a finished step (its :class:`StepOutcome` as JSON)
RESULT = "result.json"
#: the label (folder name) of the synthesized PH work directory
PH_LABEL = "ph"


# --- records ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StepOutcome:
    """What one step (corpus ingest, process shard, synth shard, merge) produced.

    Persisted as ``result.json`` beside the step's tables; ``reused`` says whether this run
    found it finished instead of computing it. ``totals`` are the step's own deterministic
    counts beyond kept/rejected (a process shard's ``windows``, ``windowless``, ``audio_us``; a
    synth shard's ``utterances``, ``audio_us``), summed by a merge; ``work_s`` is the seconds
    this run spent in the step's slow calls (the TTS calls of a synth shard), not persisted
    (0 when reused, and never part of a work directory's bytes).
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
    totals: Mapping[str, int] = field(default_factory=dict)
    work_s: float = field(default=0.0, compare=False)

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data.pop("reused")
        data.pop("work_s")
        data["by_reason"] = dict(sorted(self.by_reason.items()))
        data["totals"] = dict(sorted(self.totals.items()))
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
            totals={k: int(v) for k, v in data.get("totals", {}).items()},
        )


# --- cache directories --------------------------------------------------------------------------


def cache_dir(config: RunConfig, stage: str, key: str) -> Path:
    return Path(config.workdir) / "cache" / stage / key


def load_outcome(path: Path) -> StepOutcome | None:
    """The finished step at ``path``, or None when it was never completed."""
    try:
        data = json.loads((path / RESULT).read_text(encoding="utf-8"))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except ValueError as e:  # not JSON, or not UTF-8: the step is built again
        log.warning("ignoring %s: %s; rebuilding the step", path / RESULT, e)
        return None
    try:
        if not isinstance(data, dict):
            raise TypeError(f"a JSON {type(data).__name__}, not an object")
        outcome = StepOutcome.from_json(data, reused=True)
        if not all(isinstance(v, str) for v in (outcome.stage, outcome.label, outcome.path)):
            raise TypeError("stage, label and path must be strings")
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        log.warning("ignoring %s: wrong shape (%s); rebuilding the step", path / RESULT, e)
        return None
    return outcome


def build_cached(final: Path, build: Callable[[Path], StepOutcome]) -> StepOutcome:
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
    except BaseException as e:  # a failed step leaves nothing behind, not even its .partial
        shutil.rmtree(partial, ignore_errors=True)
        full = DiskFullError.of(e, partial)
        if full is not None and full is not e:
            raise full from e
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


def record_counts(kept: int, rejections: Iterable[Rejection]) -> tuple[int, int, dict[str, int]]:
    """(kept, rejections, rejections by ``stage:reason``) of a step, from its own records."""
    by_reason = Counter(f"{r.stage}:{r.reason}" for r in rejections)
    return kept, sum(by_reason.values()), dict(sorted(by_reason.items()))


def table_counts(workdir: Path) -> tuple[int, int, dict[str, int]]:
    """(kept dialogues, rejections, rejections by ``stage:reason``) of a work directory.

    For steps whose records are not in hand (an ingest, a matched copy); shard steps and merges
    count their own records (:func:`record_counts`, the parts' outcomes).
    """
    kept = 0
    dpath = workdir / manifest.DIALOGUES
    if dpath.exists():
        kept = pq.ParquetFile(dpath).metadata.num_rows
    by_reason: Counter[str] = Counter()
    rpath = workdir / manifest.REJECTIONS
    if rpath.exists():
        by_reason.update(
            f"{r.stage}:{r.reason}" for r in manifest.iter_records(rpath, RejectionRow)
        )
    return kept, sum(by_reason.values()), dict(sorted(by_reason.items()))
