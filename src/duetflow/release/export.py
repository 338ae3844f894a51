"""Exports of a pulled release for the ecosystem: lhotse manifests and a HF datasets layout.

Both read a folder laid out by :func:`duetflow.release.pull.pull` (``<split>.parquet`` +
``turns.parquet`` + audio) and stream it dialogue by dialogue: dialogue rows and turn rows are
in the same order (the publish writes them in lockstep), so turns are attached with a merge
walk instead of an index held in memory.

* lhotse: ``<out>/duetflow_recordings_<split>.jsonl.gz`` (one recording per dialogue) and
  ``duetflow_supervisions_<split>.jsonl.gz`` (one supervision per turn, speaker / text /
  language; under ``custom`` every other field of the turn and dialogue records but those
  :data:`LHOTSE_DIALOGUE_EXCLUDED` names: kind, original timing, category, corpus, topic,
  licence, source sample rate, the design fields); load with ``lhotse.load_manifest``.
* Hugging Face: ``<out>/data/<split>-NNNNN-of-NNNNN.parquet`` with an ``audio`` column of
  ``{bytes, path}`` (the datasets ``Audio`` feature), every dialogue column of the release
  manifest but the store-internal ones (:data:`HF_DROPPED_COLUMNS`) and a ``turns`` list;
  ``<out>/README.md`` declares the splits and the licences, so ``datasets.load_dataset(str(out))``
  works. :func:`load_hf` loads it ready to use: audio decoded through ``torchcodec`` where it
  works, else ``Audio(decode=False)`` with :func:`hf_decode` (soundfile) to decode.

A split without dialogues is left out of both exports (a 0-row file breaks the loaders). Gzip
and Parquet output carry no timestamps: the same input gives the same bytes.
"""

from __future__ import annotations

import gzip
import io
import json
import logging
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import soundfile as sf

from duetflow.audio.io import audio_info
from duetflow.errors import ManifestError
from duetflow.licences import UNDECLARED, hf_licence, release_terms
from duetflow.records.manifest import iter_column, iter_records
from duetflow.records.rows import (
    ReleaseDialogueRow,
    RenderedDialogueRow,
    RenderedTurnRow,
    TurnEventRow,
    arrow_schema,
)
from duetflow.release.events import EVENTS, EventWalk
from duetflow.release.layout import RELEASE_DIALOGUE_SCHEMA
from duetflow.release.pull import pulled_audio_path
from duetflow.release.table_schemas import SPLITS

log = logging.getLogger(__name__)


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
) -> Iterator[tuple[ReleaseDialogueRow, list[RenderedTurnRow]]]:
    """(dialogue record, its turn records) of a pulled split, streaming both files in order.

    Falls back to scanning ``turns.parquet`` for a dialogue whose turns are not where the order
    says they should be (slow, but never wrong).
    """
    turns_path = pulled / "turns.parquet"
    walk = iter_records(turns_path, RenderedTurnRow)
    pending: RenderedTurnRow | None = None
    for row in iter_records(pulled / f"{split}.parquet", ReleaseDialogueRow):
        did = row.dialogue_id
        found: list[RenderedTurnRow] = []
        exhausted = False
        while True:
            t = pending if pending is not None else next(walk, None)
            pending = None
            if t is None:
                exhausted = True
                break
            if t.dialogue_id == did:
                found.append(t)
            elif found:
                pending = t
                break
        if exhausted and not found:
            log.warning("%s: turns of %s out of order; scanning", turns_path, did)
            found = [t for t in iter_records(turns_path, RenderedTurnRow) if t.dialogue_id == did]
            walk = iter_records(turns_path, RenderedTurnRow)
        yield row, sorted(found, key=lambda t: t.turn_index)


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


#: Turn fields a lhotse ``SupervisionSegment`` carries natively: ``id`` (dialogue id + turn
#: index), ``start``/``duration`` (from ``start_s``/``end_s``), ``text``, ``speaker``. Every
#: other :class:`~duetflow.records.RenderedTurnRow` field goes under ``custom``.
LHOTSE_TURN_NATIVE = ("dialogue_id", "turn_index", "start_s", "end_s", "text", "speaker")
#: Dialogue columns a supervision leaves out: the recording's id and the language are native
#: supervision fields; audio, checksum, length, rate and channels describe the recording; the
#: split is the manifest file; speakers are per turn; turn count, loudness, gains, gap range
#: and the provenance JSON describe the rendering of the whole dialogue (all in the pulled
#: manifest). Every other :class:`~duetflow.records.ReleaseDialogueRow` column goes under each
#: supervision's ``custom``, so a column added to the record reaches the export by itself.
LHOTSE_DIALOGUE_EXCLUDED = (
    "dialogue_id",
    "language",
    "source_id",
    "speaker_a",
    "speaker_b",
    "audio_path",
    "sha256",
    "split",
    "audio_key",
    "duration_s",
    "sample_rate",
    "num_channels",
    "n_turns",
    "loudness_lufs_a",
    "loudness_lufs_b",
    "gain_db_a",
    "gain_db_b",
    "gap_ms_min",
    "gap_ms_max",
    "provenance",
    "stereo_path",  # the two-channel file is its own recording (issue 27)
    "stereo_sha256",
)


def lhotse_dialogue_custom(row: RenderedDialogueRow) -> dict[str, Any]:
    """The dialogue columns every supervision of ``row`` carries under ``custom``.

    Not :data:`LHOTSE_DIALOGUE_EXCLUDED`; an empty licence reads as :data:`UNDECLARED`.
    """
    custom = {k: v for k, v in row.to_row().items() if k not in LHOTSE_DIALOGUE_EXCLUDED}
    if "licence" in custom:
        custom["licence"] = custom["licence"] or UNDECLARED
    return custom


#: Event fields a turn's ``turn_events`` entry leaves out: the dialogue (the supervision's
#: recording), the event's number and its turn (this supervision's turn).
EVENT_TURN_DROPPED_FIELDS = ("dialogue_id", "event_index", "turn_index")


def turn_events(turn_index: int, events: Sequence[TurnEventRow]) -> list[dict[str, Any]]:
    """The events whose own turn is ``turn_index`` (:class:`~duetflow.records.TurnEventRow`:
    its class — ``turn``, ``backchannel``, an interruption... — and the ``gap`` it took the
    floor after), as plain dicts without :data:`EVENT_TURN_DROPPED_FIELDS`."""
    return [
        {k: v for k, v in e.to_row().items() if k not in EVENT_TURN_DROPPED_FIELDS}
        for e in events
        if e.turn_index == turn_index
    ]


def lhotse_supervision(
    turn: RenderedTurnRow,
    dialogue_custom: Mapping[str, Any],
    *,
    language: str,
    channel: int,
    duration: float,
    events: Sequence[TurnEventRow] = (),
) -> dict[str, Any]:
    """One lhotse supervision dict: the turn's native fields, its other fields,
    ``dialogue_custom`` (:func:`lhotse_dialogue_custom`) and the turn's ``turn_events``
    (:func:`turn_events` of the dialogue's ``events``) under ``custom``; the end is clipped
    to the recording's ``duration``."""
    own = {k: v for k, v in turn.to_row().items() if k not in LHOTSE_TURN_NATIVE}
    own["turn_events"] = turn_events(int(turn.turn_index), events)
    clash = sorted(set(own) & set(dialogue_custom))
    if clash:
        raise ManifestError(f"lhotse export: {clash} are both turn and dialogue columns")
    start = float(turn.start_s)
    end = min(float(turn.end_s), duration)
    return {
        "id": f"{turn.dialogue_id}-{int(turn.turn_index):04d}",
        "recording_id": turn.dialogue_id,
        "start": round(start, 6),
        "duration": round(max(end - start, 0.0), 6),
        "channel": channel,
        "text": turn.text or "",
        "language": language,
        "speaker": turn.speaker,
        "custom": {**own, **dialogue_custom},
    }


def _lhotse_recordings(
    src: Path, split: str, sup_file: IO[str], stereo: bool = False
) -> Iterator[dict[str, Any]]:
    """Recording dicts of a split; supervision lines go to ``sup_file`` as a side stream.

    ``stereo``: the two-channel files instead (dialogues without one are left out), each
    supervision on its speaker's channel (A 0, B 1)."""
    walk = EventWalk(src / f"{EVENTS}.parquet")
    for row, turns in iter_dialogues_with_turns(src, split):
        events = walk.take(row.dialogue_id)
        if stereo and row.stereo_sha256 is None:
            continue
        path = (
            pulled_audio_path(src, row.stereo_path, row.stereo_sha256)
            if stereo
            else pulled_audio_path(src, row.audio_key, row.sha256)
        )
        info = audio_info(path)
        duration = info.frames / info.sample_rate
        channels = list(range(info.channels))
        speakers = [row.speaker_a, row.speaker_b]
        dialogue_custom = lhotse_dialogue_custom(row)
        for t in turns:
            channel = (
                speakers.index(t.speaker) if info.channels == 2 and t.speaker in speakers else 0
            )
            sup = lhotse_supervision(
                t,
                dialogue_custom,
                language=row.language,
                channel=channel,
                duration=duration,
                events=events,
            )
            sup_file.write(json.dumps(sup, ensure_ascii=False, sort_keys=True) + "\n")
        yield {
            "id": row.dialogue_id,
            "sources": [{"type": "file", "channels": channels, "source": str(path)}],
            "sampling_rate": info.sample_rate,
            "num_samples": info.frames,
            "duration": duration,
            "channel_ids": channels,
        }


def export_lhotse(
    pulled: str | Path, out_dir: str | Path, splits: Sequence[str] | None = None
) -> dict[str, tuple[Path, Path]]:
    """Write lhotse recordings + supervisions manifests per split; returns their paths.

    A split with two-channel files (issue 27) also gets ``duetflow_{recordings,
    supervisions}_<split>_stereo.jsonl.gz``: one two-channel recording per such dialogue,
    each supervision on its speaker's channel; returned under ``<split>_stereo``.
    """
    src = Path(pulled).resolve()
    out = Path(out_dir)
    result: dict[str, tuple[Path, Path]] = {}
    for split in _non_empty(src, _present_splits(src, splits)):
        has_stereo = any(
            v is not None for v in iter_column(src / f"{split}.parquet", "stereo_sha256")
        )
        for name, stereo in ((split, False), (f"{split}_stereo", True)):
            if stereo and not has_stereo:
                continue
            rec_path = out / f"duetflow_recordings_{name}.jsonl.gz"
            sup_path = out / f"duetflow_supervisions_{name}.jsonl.gz"
            tmp_sup = out / f".duetflow_supervisions_{name}.jsonl"
            out.mkdir(parents=True, exist_ok=True)

            with open(tmp_sup, "w", encoding="utf-8") as sup_file:
                _gzip_jsonl(rec_path, _lhotse_recordings(src, split, sup_file, stereo))
            with open(tmp_sup, encoding="utf-8") as f:
                _gzip_jsonl(sup_path, (json.loads(line) for line in f))
            tmp_sup.unlink()
            result[name] = (rec_path, sup_path)
            log.info("lhotse manifests for %s written to %s", name, out)
    return result


#: Turn fields the HF ``turns`` list leaves out: the dialogue id (the row's own) and the
#: source-timeline times (meaningless without the source audio; in the pulled manifest).
#: Every other :class:`~duetflow.records.RenderedTurnRow` field is a field of each turn.
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


def _hf_turn(turn: RenderedTurnRow) -> dict[str, Any]:
    values = turn.to_row()
    return {name: values[name] for name in _HF_TURN.names}


def _hf_stereo(src: Path, row: ReleaseDialogueRow) -> dict[str, Any] | None:
    """The ``audio_stereo`` value of a row: its two-channel FLAC, or None (mono only)."""
    if row.stereo_sha256 is None:
        return None
    path = pulled_audio_path(src, row.stereo_path, row.stereo_sha256)
    return {"bytes": path.read_bytes(), "path": path.name}


def _hf_event(event: TurnEventRow) -> dict[str, Any]:
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
        "Load it with `duetflow.release.export.load_hf(path)`: a `DatasetDict` whose audio "
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


def _non_empty(pulled: Path, names: Sequence[str]) -> list[str]:
    """The splits of ``names`` with at least one dialogue (an empty split is left out: a
    0-row Parquet file breaks ``datasets.load_dataset`` and lhotse's manifest loader)."""
    keep = [s for s in names if pq.ParquetFile(pulled / f"{s}.parquet").metadata.num_rows > 0]
    for s in names:
        if s not in keep:
            log.warning("%s: split %s has no dialogues; not exported", pulled, s)
    if not keep:
        raise ManifestError(
            f"{pulled}: split(s) {list(names)} hold no dialogues; nothing to export"
        )
    return keep


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

    Empty splits are left out (see :func:`_non_empty`); the README declares the others, the
    licence(s) the dialogues carry and what they imply.
    """
    src = Path(pulled).resolve()
    out = Path(out_dir)
    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    names = _non_empty(src, _present_splits(src, splits))
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
                        "turns": [_hf_turn(t) for t in turns],
                        "events": [_hf_event(e) for e in walk.take(row.dialogue_id)],
                    }
                )
                if len(batch) >= shard_rows:
                    break
            dest = data / f"{split}-{shard:05d}-of-{n_shards:05d}.parquet"
            pq.write_table(pa.Table.from_pylist(batch, schema=schema), dest, compression="zstd")
    (out / "README.md").write_text(_hf_readme(src, names, _release_id(src)), encoding="utf-8")
    log.info("HF datasets layout for %s written to %s", ", ".join(names), out)
    return out
