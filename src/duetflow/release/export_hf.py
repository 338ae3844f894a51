"""The Hugging Face datasets export of a pulled release, and loading it back.

``<out>/data/<split>-NNNNN-of-NNNNN.parquet`` with an ``audio`` column of ``{bytes, path}`` (the
datasets ``Audio`` feature), every dialogue column of the release manifest but the
store-internal ones (:data:`HF_DROPPED_COLUMNS`) and a ``turns`` list; ``<out>/README.md``
declares the splits and the licences, so ``datasets.load_dataset(str(out))`` works.
:func:`load_hf` loads it ready to use: audio decoded through ``torchcodec`` where it works, else
``Audio(decode=False)`` with :func:`hf_decode` (soundfile) to decode. Parquet output carries no
timestamps: the same input gives the same bytes.
"""

from __future__ import annotations

import io
import json
import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import soundfile as sf

from duetflow.errors import ManifestError
from duetflow.licences import UNDECLARED, hf_licence, release_terms
from duetflow.records.manifest import iter_column
from duetflow.records.rows import (
    ReleaseDialogueRow,
    RenderedTurnRow,
    TurnEventRow,
    arrow_schema,
)
from duetflow.release.events import EVENTS, EventWalk
from duetflow.release.export import iter_dialogues_with_turns, non_empty_splits, present_splits
from duetflow.release.layout import RELEASE_DIALOGUE_SCHEMA
from duetflow.release.pull import pulled_audio_path

log = logging.getLogger(__name__)


#: Turn fields the HF ``turns`` list leaves out: the dialogue id (the row's own) and the
#: source-timeline times (meaningless without the source audio; in the pulled manifest).
#: Every other :class:`~duetflow.records.rows.RenderedTurnRow` field is a field of each turn.
HF_TURN_DROPPED_FIELDS = ("dialogue_id", "orig_start_s", "orig_end_s")


_HF_TURN = pa.struct(
    [f for f in arrow_schema(RenderedTurnRow) if f.name not in HF_TURN_DROPPED_FIELDS]
)


#: Event fields the HF ``events`` list leaves out: the dialogue id (the row's own).
HF_EVENT_DROPPED_FIELDS = ("dialogue_id",)


_HF_EVENT = pa.struct(
    [f for f in arrow_schema(TurnEventRow) if f.name not in HF_EVENT_DROPPED_FIELDS]
)


#: Release columns that only make sense inside a store or a pulled folder (the audio itself is
#: embedded; the split is the file), and the bulky per-dialogue provenance JSON (in the pulled
#: manifest). Every other dialogue column is exported as is, so a column added to the manifests
#: reaches the HF layout without touching this module.
HF_DROPPED_COLUMNS = ("audio_path", "audio_key", "split", "provenance", "stereo_path")


#: The HF column of the two-channel file (issue 27; null for a dialogue without one).
HF_STEREO = "audio_stereo"


def hf_turn(turn: RenderedTurnRow) -> dict[str, Any]:
    values = turn.to_row()
    return {name: values[name] for name in _HF_TURN.names}


def _hf_stereo(src: Path, row: ReleaseDialogueRow) -> dict[str, Any] | None:
    """The ``audio_stereo`` value of a row: its two-channel FLAC, or None (mono only)."""
    if row.stereo_sha256 is None:
        return None
    path = pulled_audio_path(src, row.stereo_path, row.stereo_sha256)
    return {"bytes": path.read_bytes(), "path": path.name}


def hf_event(event: TurnEventRow) -> dict[str, Any]:
    values = event.to_row()
    return {name: values[name] for name in _HF_EVENT.names}


def _hf_value(name: str, t: pa.DataType) -> dict[str, Any]:
    """The ``datasets`` feature of a primitive Arrow column."""
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        dtype = "string"
    elif pa.types.is_floating(t):
        dtype = {16: "float16", 32: "float32", 64: "float64"}[t.bit_width]
    elif pa.types.is_integer(t) or pa.types.is_boolean(t):
        dtype = str(t)
    else:
        raise ManifestError(f"HF export: column {name!r} has type {t}, not a plain value")
    return {"dtype": dtype, "_type": "Value"}


def hf_schema(manifest: pa.Schema = RELEASE_DIALOGUE_SCHEMA) -> tuple[pa.Schema, dict[str, Any]]:
    """Arrow schema and ``datasets`` features of the HF layout of a release's split manifest."""
    columns = [f for f in manifest if f.name not in HF_DROPPED_COLUMNS]
    schema = pa.schema(
        [
            ("audio", pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
            (HF_STEREO, pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
            *[(f.name, f.type) for f in columns],
            ("turns", pa.list_(_HF_TURN)),
            ("events", pa.list_(_HF_EVENT)),
        ]
    )
    features: dict[str, Any] = {"audio": {"_type": "Audio"}, HF_STEREO: {"_type": "Audio"}}
    features.update({f.name: _hf_value(f.name, f.type) for f in columns})
    features["turns"] = {
        "_type": "List",
        "feature": {f.name: _hf_value(f.name, f.type) for f in _HF_TURN},
    }
    features["events"] = {
        "_type": "List",
        "feature": {f.name: _hf_value(f.name, f.type) for f in _HF_EVENT},
    }
    return schema, features


def _licence_counts(pulled: Path, splits: Sequence[str]) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = {}
    for split in splits:
        for value in iter_column(pulled / f"{split}.parquet", "licence"):
            cell = counts.setdefault(str(value or UNDECLARED), dict.fromkeys(splits, 0))
            cell[split] += 1
    return dict(sorted(counts.items()))


def hf_decode(audio: Mapping[str, Any]) -> tuple[np.ndarray, int]:
    """Decode one undecoded HF ``audio`` value (``{"bytes", "path"}``) with soundfile.

    For ``datasets`` without a working ``torchcodec``: ``cast_column("audio",
    Audio(decode=False))`` then ``hf_decode(example["audio"])`` → (float32 samples, rate).
    """
    data = audio.get("bytes")
    if data is None:
        raise ManifestError(f"HF audio value without bytes (path {audio.get('path')!r})")
    samples, sr = sf.read(io.BytesIO(data), dtype="float32")
    return samples, int(sr)


def torchcodec_decodes() -> bool:
    """Whether ``datasets`` can decode audio here: ``torchcodec`` imports *and* loads its
    native decoder (the PyPI wheel is linked against CUDA and fails to load next to a CPU
    torch, or without FFmpeg's libraries, at first use rather than at ``import torchcodec``)."""
    try:
        from torchcodec.decoders import AudioDecoder

        buf = io.BytesIO()
        sf.write(buf, np.zeros(160, dtype=np.float32), 16000, format="FLAC")
        AudioDecoder(buf.getvalue()).get_all_samples()
    except Exception as e:  # ImportError, OSError (a missing .so), RuntimeError (FFmpeg)
        log.debug("torchcodec cannot decode here: %s", e)
        return False
    return True


def load_hf(dest: str | Path, *, decode: bool | None = None) -> Any:
    """The HF export at ``dest`` as a ``datasets.DatasetDict`` ready to use.

    ``decode=None`` (default): audio columns decode through ``torchcodec`` when it works here
    (:func:`torchcodec_decodes`), else they are cast to ``Audio(decode=False)`` (``{"bytes",
    "path"}`` values; decode one with :func:`hf_decode`, soundfile), so ``filter``/``map``/
    indexing never hit torchcodec's ImportError. ``True``/``False`` force either view.
    """
    import datasets

    ds = datasets.load_dataset(str(dest))
    use = torchcodec_decodes() if decode is None else decode
    if not use:
        for split in ds:
            for name, feature in ds[split].features.items():
                if isinstance(feature, datasets.Audio):
                    ds[split] = ds[split].cast_column(name, datasets.Audio(decode=False))
    return ds


def _hf_readme(pulled: Path, splits: Sequence[str], release_id: str | None) -> str:
    files = "\n".join(f"  - split: {s}\n    path: data/{s}-*" for s in splits)
    licences = _licence_counts(pulled, splits)
    table = ["| licence | " + " | ".join(splits) + " |", "| --- |" + " ---: |" * len(splits)]
    table += [f"| {lic} | " + " | ".join(str(n[s]) for s in splits) + " |"
              for lic, n in licences.items()]  # fmt: skip
    title = f"duetflow release {release_id}" if release_id else "duetflow release"
    return (
        f"---\nlicense: {hf_licence(licences)}\nconfigs:\n- config_name: default\n"
        "  data_files:\n" + files + "\n---\n\n"
        f"# {title} (Hugging Face datasets layout)\n\n"
        "Two-speaker dialogues: `audio` holds the FLAC bytes, `audio_stereo` the two-channel file "
        "(speaker A left, B right; null where the source is a mono mix or the release was "
        "rendered mono), `turns` the rendered turn timing, `events` the turn-taking events, "
        "every other column is the release manifest's (`corpus`, `category`, `licence`, "
        "`source_sample_rate`, ...). The full dataset card is `report/README.md` of the pulled "
        "release.\n\n"
        "Load it with `duetflow.release.export_hf.load_hf(path)`: a `DatasetDict` whose audio "
        "decodes through `torchcodec` where torchcodec works with your torch and FFmpeg, and "
        "is otherwise left undecoded (`Audio(decode=False)`: `{bytes, path}`), decoded with "
        '`soundfile` by `hf_decode(example["audio"])`. torchcodec is not part of '
        "`duetflow[export]`: its PyPI wheel is built against CUDA and does not load next to a "
        "CPU torch. Plain `datasets.load_dataset(path)` works too, but then reading `audio` "
        "without torchcodec raises an ImportError; see docs/releases.md of duetflow.\n\n"
        "## Licences\n\nEach dialogue's licence is its `licence` column; dialogues per split:\n\n"
        + "\n".join(table)
        + "\n\n"
        + "\n".join(f"- {t}" for t in release_terms(licences))
        + "\n"
    )


def _release_id(pulled: Path) -> str | None:
    try:
        rid = json.loads((pulled / "RELEASE.json").read_text(encoding="utf-8")).get("release_id")
    except (FileNotFoundError, json.JSONDecodeError, AttributeError):
        return None
    return str(rid) if rid else None


def export_hf(
    pulled: str | Path,
    out_dir: str | Path,
    splits: Sequence[str] | None = None,
    *,
    shard_rows: int = 256,
) -> Path:
    """Write a ``datasets``-loadable Parquet layout (audio bytes embedded); returns ``out``.

    Empty splits are left out (see :func:`non_empty_splits`); the README declares the others, the
    licence(s) the dialogues carry and what they imply.
    """
    src = Path(pulled).resolve()
    out = Path(out_dir)
    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    names = non_empty_splits(src, present_splits(src, splits))
    for old in data.glob("*.parquet"):
        old.unlink()
    for split in names:
        manifest = pq.ParquetFile(src / f"{split}.parquet")
        total = manifest.metadata.num_rows
        schema, features = hf_schema()
        meta = {b"huggingface": json.dumps({"info": {"features": features}}).encode()}
        schema = schema.with_metadata(meta)
        keep = [n for n in schema.names if n not in ("audio", HF_STEREO, "turns", "events")]
        walk = EventWalk(src / f"{EVENTS}.parquet")
        n_shards = max(1, math.ceil(total / shard_rows))
        rows = iter_dialogues_with_turns(src, split)
        for shard in range(n_shards):
            batch = []
            for row, turns in rows:
                path = pulled_audio_path(src, row.audio_key, row.sha256)
                values = row.to_row()
                batch.append(
                    {
                        "audio": {"bytes": path.read_bytes(), "path": Path(path).name},
                        HF_STEREO: _hf_stereo(src, row),
                        **{k: values[k] for k in keep},
                        "turns": [hf_turn(t) for t in turns],
                        "events": [hf_event(e) for e in walk.take(row.dialogue_id)],
                    }
                )
                if len(batch) >= shard_rows:
                    break
            dest = data / f"{split}-{shard:05d}-of-{n_shards:05d}.parquet"
            pq.write_table(pa.Table.from_pylist(batch, schema=schema), dest, compression="zstd")
    (out / "README.md").write_text(_hf_readme(src, names, _release_id(src)), encoding="utf-8")
    log.info("HF datasets layout for %s written to %s", ", ".join(names), out)
    return out
