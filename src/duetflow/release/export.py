"""Exports of a pulled release for the ecosystem: lhotse manifests and a HF datasets layout.

Both read a folder laid out by :func:`duetflow.release.pull.pull` (``<split>.parquet`` +
``turns.parquet`` + audio) and stream it dialogue by dialogue: dialogue rows and turn rows are
in the same order (the publish writes them in lockstep), so turns are attached with a merge
walk instead of an index held in memory.

* lhotse: ``<out>/duetflow_recordings_<split>.jsonl.gz`` (one recording per dialogue) and
  ``duetflow_supervisions_<split>.jsonl.gz`` (one supervision per turn, speaker / text /
  language, kind and original timing under ``custom``); load with ``lhotse.load_manifest``.
* Hugging Face: ``<out>/data/<split>-NNNNN-of-NNNNN.parquet`` with an ``audio`` column of
  ``{bytes, path}`` (the datasets ``Audio`` feature), the dialogue columns and a ``turns``
  list; ``<out>/README.md`` declares the splits so ``datasets.load_dataset(str(out))`` works.
Gzip and Parquet output carry no timestamps: the same input gives the same bytes.
"""

from __future__ import annotations

import gzip
import json
import logging
import math
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import pyarrow as pa
import pyarrow.parquet as pq

from duetflow.audio.io import audio_info
from duetflow.errors import ManifestError
from duetflow.manifest import iter_rows
from duetflow.release.pull import pulled_audio_path
from duetflow.schemas.tables import SPLITS

log = logging.getLogger(__name__)

_TURN_FIELDS = ["turn_index", "speaker", "kind", "start_s", "end_s", "text"]


def _present_splits(pulled: Path, splits: Sequence[str] | None) -> list[str]:
    wanted = list(splits) if splits else [s for s in SPLITS if (pulled / f"{s}.parquet").is_file()]
    missing = [s for s in wanted if not (pulled / f"{s}.parquet").is_file()]
    if missing or not wanted:
        raise ManifestError(
            f"{pulled}: no pulled manifest for split(s) {missing or list(SPLITS)}; "
            "run `duetflow pull` first"
        )
    return wanted


def iter_dialogues_with_turns(
    pulled: Path, split: str
) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """(dialogue row, its turn rows) of a pulled split, streaming both files in order.

    Falls back to scanning ``turns.parquet`` for a dialogue whose turns are not where the order
    says they should be (slow, but never wrong).
    """
    turns_path = pulled / "turns.parquet"
    walk = iter_rows(turns_path)
    pending: dict[str, Any] | None = None
    for row in iter_rows(pulled / f"{split}.parquet"):
        did = row["dialogue_id"]
        found: list[dict[str, Any]] = []
        exhausted = False
        while True:
            t = pending if pending is not None else next(walk, None)
            pending = None
            if t is None:
                exhausted = True
                break
            if t["dialogue_id"] == did:
                found.append(t)
            elif found:
                pending = t
                break
        if exhausted and not found:
            log.warning("%s: turns of %s out of order; scanning", turns_path, did)
            found = [t for t in iter_rows(turns_path) if t["dialogue_id"] == did]
            walk = iter_rows(turns_path)
        yield row, sorted(found, key=lambda t: int(t["turn_index"]))


def _gzip_jsonl(path: Path, records: Iterator[dict[str, Any]]) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    n = 0
    with open(tmp, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
        for rec in records:
            gz.write((json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n").encode())
            n += 1
    os.replace(tmp, path)
    return n


def _lhotse_recordings(src: Path, split: str, sup_file: IO[str]) -> Iterator[dict[str, Any]]:
    """Recording dicts of a split; supervision lines go to ``sup_file`` as a side stream."""
    for row, turns in iter_dialogues_with_turns(src, split):
        path = pulled_audio_path(src, row)
        info = audio_info(path)
        duration = info.frames / info.sample_rate
        channels = list(range(info.channels))
        speakers = [row["speaker_a"], row["speaker_b"]]
        for t in turns:
            start = float(t["start_s"])
            end = min(float(t["end_s"]), duration)
            channel = (
                speakers.index(t["speaker"])
                if info.channels == 2 and t["speaker"] in speakers
                else 0
            )
            sup = {
                "id": f"{row['dialogue_id']}-{int(t['turn_index']):04d}",
                "recording_id": row["dialogue_id"],
                "start": round(start, 6),
                "duration": round(max(end - start, 0.0), 6),
                "channel": channel,
                "text": t["text"] or "",
                "language": row["language"],
                "speaker": t["speaker"],
                "custom": {
                    "kind": t["kind"],
                    "category": row["category"],
                    "orig_start_s": t.get("orig_start_s"),
                    "orig_end_s": t.get("orig_end_s"),
                },
            }
            sup_file.write(json.dumps(sup, ensure_ascii=False, sort_keys=True) + "\n")
        yield {
            "id": row["dialogue_id"],
            "sources": [{"type": "file", "channels": channels, "source": str(path)}],
            "sampling_rate": info.sample_rate,
            "num_samples": info.frames,
            "duration": duration,
            "channel_ids": channels,
        }


def export_lhotse(
    pulled: str | Path, out_dir: str | Path, splits: Sequence[str] | None = None
) -> dict[str, tuple[Path, Path]]:
    """Write lhotse recordings + supervisions manifests per split; returns their paths."""
    src = Path(pulled).resolve()
    out = Path(out_dir)
    result: dict[str, tuple[Path, Path]] = {}
    for split in _present_splits(src, splits):
        rec_path = out / f"duetflow_recordings_{split}.jsonl.gz"
        sup_path = out / f"duetflow_supervisions_{split}.jsonl.gz"
        tmp_sup = out / f".duetflow_supervisions_{split}.jsonl"
        out.mkdir(parents=True, exist_ok=True)

        with open(tmp_sup, "w", encoding="utf-8") as sup_file:
            _gzip_jsonl(rec_path, _lhotse_recordings(src, split, sup_file))
        with open(tmp_sup, encoding="utf-8") as f:
            _gzip_jsonl(sup_path, (json.loads(line) for line in f))
        tmp_sup.unlink()
        result[split] = (rec_path, sup_path)
        log.info("lhotse manifests for %s written to %s", split, out)
    return result


_HF_TURN = pa.struct(
    [
        ("turn_index", pa.int32()),
        ("speaker", pa.string()),
        ("kind", pa.string()),
        ("start_s", pa.float64()),
        ("end_s", pa.float64()),
        ("text", pa.string()),
    ]
)
_HF_SCHEMA = pa.schema(
    [
        ("audio", pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
        ("dialogue_id", pa.string()),
        ("category", pa.string()),
        ("language", pa.string()),
        ("topic", pa.string()),
        ("speaker_a", pa.string()),
        ("speaker_b", pa.string()),
        ("duration_s", pa.float64()),
        ("sample_rate", pa.int32()),
        ("sha256", pa.string()),
        ("turns", pa.list_(_HF_TURN)),
    ]
)
_HF_FEATURES = {
    "audio": {"_type": "Audio"},
    "dialogue_id": {"dtype": "string", "_type": "Value"},
    "category": {"dtype": "string", "_type": "Value"},
    "language": {"dtype": "string", "_type": "Value"},
    "topic": {"dtype": "string", "_type": "Value"},
    "speaker_a": {"dtype": "string", "_type": "Value"},
    "speaker_b": {"dtype": "string", "_type": "Value"},
    "duration_s": {"dtype": "float64", "_type": "Value"},
    "sample_rate": {"dtype": "int32", "_type": "Value"},
    "sha256": {"dtype": "string", "_type": "Value"},
    "turns": {
        "_type": "List",
        "feature": {
            "turn_index": {"dtype": "int32", "_type": "Value"},
            "speaker": {"dtype": "string", "_type": "Value"},
            "kind": {"dtype": "string", "_type": "Value"},
            "start_s": {"dtype": "float64", "_type": "Value"},
            "end_s": {"dtype": "float64", "_type": "Value"},
            "text": {"dtype": "string", "_type": "Value"},
        },
    },
}


def _hf_readme(splits: Sequence[str]) -> str:
    files = "\n".join(f"  - split: {s}\n    path: data/{s}-*" for s in splits)
    return (
        "---\nconfigs:\n- config_name: default\n  data_files:\n"
        + files
        + "\n---\n\n# duetflow release (Hugging Face datasets layout)\n\n"
        "Two-speaker dialogues: `audio` holds the FLAC bytes, `turns` the rendered turn timing.\n"
    )


def export_hf(
    pulled: str | Path,
    out_dir: str | Path,
    splits: Sequence[str] | None = None,
    *,
    shard_rows: int = 256,
) -> Path:
    """Write a ``datasets``-loadable Parquet layout (audio bytes embedded); returns ``out``."""
    src = Path(pulled).resolve()
    out = Path(out_dir)
    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    meta = {b"huggingface": json.dumps({"info": {"features": _HF_FEATURES}}).encode()}
    schema = _HF_SCHEMA.with_metadata(meta)
    names = _present_splits(src, splits)
    for split in names:
        total = pq.ParquetFile(src / f"{split}.parquet").metadata.num_rows
        n_shards = max(1, math.ceil(total / shard_rows))
        for old in data.glob(f"{split}-*.parquet"):
            old.unlink()
        rows = iter_dialogues_with_turns(src, split)
        for shard in range(n_shards):
            batch = []
            for row, turns in rows:
                path = pulled_audio_path(src, row)
                batch.append(
                    {
                        "audio": {"bytes": path.read_bytes(), "path": Path(path).name},
                        **{k: row[k] for k in _HF_SCHEMA.names if k not in ("audio", "turns")},
                        "turns": [{k: t[k] for k in _TURN_FIELDS} for t in turns],
                    }
                )
                if len(batch) >= shard_rows:
                    break
            dest = data / f"{split}-{shard:05d}-of-{n_shards:05d}.parquet"
            pq.write_table(pa.Table.from_pylist(batch, schema=schema), dest, compression="zstd")
    (out / "README.md").write_text(_hf_readme(names), encoding="utf-8")
    log.info("HF datasets layout for %s written to %s", ", ".join(names), out)
    return out
