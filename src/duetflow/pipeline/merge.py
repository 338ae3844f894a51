"""Merging shard work directories into one per corpus (and PH), in shard order.

Shards are concatenated by ``index`` (their position in the intake stream), not by completion,
streaming row groups; audio is hard-linked; ``stats.json`` documents are folded exactly
(:func:`merge_stats`), so the merged directory is the same bytes whatever the shard borders,
the runner or a resume.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from duetflow.config import RunConfig
from duetflow.errors import DiskFullError, ManifestError
from duetflow.hashing import code_hash, files_fingerprint, text_digest
from duetflow.pipeline.cache import RESULT, StepOutcome, load_outcome
from duetflow.records import manifest
from duetflow.records.rows import RejectionRow
from duetflow.turntaking.stats import mean_of, seconds_of


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
    extra_rejections: Sequence[RejectionRow] = (),
    stage: str = "merge",
) -> StepOutcome:
    """Concatenate shard work directories into one, in shard order, streaming row groups.

    Shards are ordered by ``index`` (their position in the intake stream), not by completion, so
    threads, Dask and a resumed run write the same bytes. Audio files are hard-linked (copied
    across file systems); ``audio_path`` stays relative to the work directory. Rejections from
    earlier stages (``leading_rejections``) come first, then ``extra_rejections`` (records of
    rejections made outside the shards, e.g. scripts that failed to load), so inputs = kept +
    rejected holds for the merged directory alone.
    """
    out = Path(out_dir)
    extra = list(extra_rejections)
    ordered = sorted(parts, key=lambda p: p.index)
    key = merge_key(stage, label, ordered, leading_rejections, extra)
    done = load_outcome(out)
    if done is not None and done.key == key:  # the same shards merged before: nothing to do
        return done
    partial = out.with_name(f".{out.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        outcome = _merge_into(partial, label, ordered, out, leading_rejections, extra, stage, key)
    except BaseException as e:
        shutil.rmtree(partial, ignore_errors=True)
        full = DiskFullError.of(e, partial)
        if full is not None and full is not e:
            raise full from e
        raise
    if out.exists():
        shutil.rmtree(out)
    os.replace(partial, out)
    return outcome


def merge_key(
    stage: str,
    label: str,
    ordered: Sequence[StepOutcome],
    leading_rejections: Sequence[str | Path],
    extra_rejections: Sequence[RejectionRow],
) -> str:
    """What a merged directory is made of: the shards' keys in order (each content-addressed),
    the earlier stages' rejection tables, the extra rejection rows and this module's code.

    A re-run whose shards were all reused finds the merged directory with this key and keeps
    it, instead of rewriting every table of the corpus.
    """
    doc = {
        "stage": stage,
        "label": label,
        "shards": [p.key for p in ordered],
        "leading": files_fingerprint(leading_rejections),
        "extra": [r.to_row() for r in extra_rejections],
        "code": code_hash((__name__,)),
    }
    return text_digest(json.dumps(doc, sort_keys=True, default=str))


def _merge_into(
    partial: Path,
    label: str,
    parts: Sequence[StepOutcome],
    out: Path,
    leading_rejections: Sequence[str | Path],
    extra_rejections: Sequence[RejectionRow],
    stage: str,
    key: str,
) -> StepOutcome:
    ordered = sorted(parts, key=lambda p: p.index)
    tables = {
        manifest.DIALOGUES: manifest.RENDERED_DIALOGUE_SCHEMA,
        manifest.TURNS: manifest.RENDERED_TURN_SCHEMA,
    }
    for name, schema in tables.items():
        sources = [Path(p.path) / name for p in ordered if (Path(p.path) / name).exists()]
        with manifest.TableWriter(partial / name, schema) as w:
            for src in sources:
                _copy_row_groups(src, w)
    reasons: Counter[str] = Counter()

    totals: Counter[str] = Counter()
    for p in ordered:  # the shards' own counts, from their outcomes
        reasons.update(p.by_reason)
        totals.update(p.totals)
    with manifest.TableWriter(partial / manifest.REJECTIONS, manifest.REJECTION_SCHEMA) as w:
        for src in [*map(Path, leading_rejections)]:
            if src.exists():
                _copy_row_groups(src, w, reasons)
        reasons.update(f"{r.stage}:{r.reason}" for r in extra_rejections)
        w.write(r.to_row() for r in extra_rejections)
        for p in ordered:
            src = Path(p.path) / manifest.REJECTIONS
            if src.exists():
                _copy_row_groups(src, w)
    (partial / "audio").mkdir()  # a rendered work directory has one, if empty
    for p in ordered:
        for folder in ("audio", "stereo"):  # the mixes; two-channel files (issue 27)
            audio = Path(p.path) / folder
            if audio.is_dir():
                for f in sorted(audio.rglob("*")):
                    if f.is_file():
                        _link(f, partial / folder / f.relative_to(audio))
    _merge_stats(ordered, partial, [Path(p) for p in leading_rejections])
    kept, rejected = sum(p.kept for p in ordered), sum(reasons.values())
    by_reason = dict(sorted(reasons.items()))
    found = sum(p.found for p in ordered)
    outcome = StepOutcome(
        stage, label, key, str(out), found, kept, rejected, by_reason,
        totals=dict(sorted(totals.items())),
    )  # fmt: skip
    (partial / RESULT).write_text(json.dumps(outcome.to_json(), sort_keys=True), encoding="utf-8")
    return outcome


def _copy_row_groups(
    src: Path, writer: manifest.TableWriter, reasons: Counter[str] | None = None
) -> None:
    """Append the rows of ``src`` to ``writer`` as Arrow tables, one row group at a time
    (``reasons``: count the rejections copied by ``stage:reason``).

    Only the writer's columns are read; a table without one of them raises
    :class:`~duetflow.errors.ManifestError` naming the file and the missing column(s).
    """
    pf = pq.ParquetFile(src)
    names = set(pf.schema_arrow.names)
    missing = [c for c in writer.schema.names if c not in names]
    if missing:
        raise ManifestError(f"{src}: cannot merge: missing column(s) {', '.join(missing)}")
    for g in range(pf.num_row_groups):
        table = pf.read_row_group(g, columns=list(writer.schema.names))
        if reasons is not None:
            stages, why = table.column("stage").to_pylist(), table.column("reason").to_pylist()
            reasons.update(f"{s}:{r}" for s, r in zip(stages, why, strict=True))
        writer.write_arrow(table)


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
            for rejection in manifest.read_rejections(path):
                acc.add_rejection(rejection)
        docs.append(acc.to_dict())
    shard_docs = [Path(p.path) / "stats.json" for p in parts]
    docs.extend(json.loads(f.read_text(encoding="utf-8")) for f in shard_docs if f.exists())
    if any(f.exists() for f in shard_docs):
        text = json.dumps(merge_stats(docs), sort_keys=True, indent=1)
        (out / "stats.json").write_text(text, encoding="utf-8")


def rendered_dir(config: RunConfig, label: str) -> Path:
    return Path(config.workdir) / "rendered" / label
