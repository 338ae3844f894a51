"""Sharded exports of a pulled release for large-scale training: WebDataset and lhotse Shar.

Both read a folder laid out by :func:`duetflow.release.pull.pull`, dialogue by dialogue, and
write shards of at most ``shard_size`` dialogues that stream without unpacking:

* **WebDataset** (:func:`export_webdataset`): ``<out>/webdataset/<split>-NNNNNN.tar``, one
  sample per dialogue: ``<key>.flac`` (the pulled FLAC, byte for byte; ``<key>.stereo.flac``
  the two-channel file where the dialogue has one) and ``<key>.json`` (the
  dialogue's columns as in the HF export — every release column but
  :data:`~duetflow.release.export_hf.HF_DROPPED_COLUMNS` — with its ``turns`` and ``events``).
  ``<key>`` is the dialogue id with characters WebDataset would split on replaced
  (:func:`sample_key`). Members are written with fixed metadata (mtime 0, uid/gid 0), so the
  same pull gives the same bytes.
* **lhotse Shar** (:func:`export_shar`): ``<out>/shar/<split>/cuts.NNNNNN.jsonl.gz`` +
  ``recording.NNNNNN.tar`` (``CutSet.to_shar`` over the cuts of :func:`export_lhotse`'s
  manifests, audio as FLAC: the same 16-bit samples, re-encoded by lhotse); read with
  ``lhotse.CutSet.from_shar(in_dir=...)``.

Every shard file is listed with its sha256 and size in ``<out>/SHARDS.json``
(:func:`write_shard_index`), which :func:`verify_shards` checks.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import re
import tarfile
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from duetflow.errors import ManifestError
from duetflow.hashing import sha256_file
from duetflow.release.events import EVENTS, EventWalk
from duetflow.release.export import iter_dialogues_with_turns, non_empty_splits, present_splits
from duetflow.release.export_hf import HF_DROPPED_COLUMNS, hf_event, hf_turn
from duetflow.release.export_lhotse import export_lhotse
from duetflow.release.pull import pulled_audio_path

#: the index of a sharded export's files (in the export's folder)
SHARD_INDEX = "SHARDS.json"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True)
class ShardFile:
    """One file of a sharded export: which format and split, its path relative to the
    export's folder, sha256, size and the dialogues in it."""

    format: str
    split: str
    path: str
    sha256: str
    size: int
    dialogues: int


def sample_key(dialogue_id: str) -> str:
    """A WebDataset sample key for a dialogue id: WebDataset splits a member name at its first
    dot, so everything but letters, digits, ``_`` and ``-`` becomes ``_``."""
    return _UNSAFE.sub("_", dialogue_id)


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), 0, 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    tar.addfile(info, io.BytesIO(data))


def _samples(src: Path, split: str) -> Iterator[tuple[str, bytes, bytes | None, dict[str, Any]]]:
    """(key, FLAC bytes, two-channel FLAC bytes or None, JSON record) of each dialogue of a
    pulled split, in manifest order."""
    walk = EventWalk(src / f"{EVENTS}.parquet")
    seen: set[str] = set()
    for row, turns in iter_dialogues_with_turns(src, split):
        key = sample_key(row.dialogue_id)
        if key in seen:
            raise ManifestError(f"{src}: two dialogues share the WebDataset key {key!r}")
        seen.add(key)
        values = {k: v for k, v in row.to_row().items() if k not in HF_DROPPED_COLUMNS}
        values["turns"] = [hf_turn(t) for t in turns]
        values["events"] = [hf_event(e) for e in walk.take(row.dialogue_id)]
        audio = pulled_audio_path(src, row.audio_key, row.sha256).read_bytes()
        stereo = (
            pulled_audio_path(src, row.stereo_path, row.stereo_sha256).read_bytes()
            if row.stereo_sha256 is not None
            else None
        )
        yield key, audio, stereo, values


def export_webdataset(
    pulled: str | Path,
    out_dir: str | Path,
    splits: Sequence[str] | None = None,
    *,
    shard_size: int = 1000,
) -> list[ShardFile]:
    """Write WebDataset tar shards of at most ``shard_size`` dialogues per split into
    ``<out>/webdataset/`` (module docstring); returns the shards, also indexed in
    ``SHARDS.json``."""
    if shard_size < 1:
        raise ValueError("shard_size must be at least 1")
    src, out = Path(pulled).resolve(), Path(out_dir)
    folder = out / "webdataset"
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.tar"):
        old.unlink()
    shards: list[ShardFile] = []
    for split in non_empty_splits(src, present_splits(src, splits)):
        samples = _samples(src, split)
        index = 0
        while (first := next(samples, None)) is not None:
            final = folder / f"{split}-{index:06d}.tar"
            tmp = folder / f".{final.name}.{os.getpid()}.tmp"
            n = 0
            with open(tmp, "wb") as raw, tarfile.open(fileobj=raw, mode="w") as tar:
                for key, audio, stereo, record in itertools.chain(
                    [first], itertools.islice(samples, shard_size - 1)
                ):
                    _add(tar, f"{key}.flac", audio)
                    if stereo is not None:  # issue 27: A left, B right
                        _add(tar, f"{key}.stereo.flac", stereo)
                    blob = json.dumps(record, ensure_ascii=False, sort_keys=True).encode()
                    _add(tar, f"{key}.json", blob)
                    n += 1
            os.replace(tmp, final)
            shards.append(ShardFile("webdataset", split, f"webdataset/{final.name}",
                                    sha256_file(final), final.stat().st_size, n))  # fmt: skip
            index += 1
    write_shard_index(out, [s for s in _read_index(out) if s.format != "webdataset"] + shards)
    return shards


def export_shar(
    pulled: str | Path,
    out_dir: str | Path,
    splits: Sequence[str] | None = None,
    *,
    shard_size: int = 1000,
) -> list[ShardFile]:
    """Write lhotse Shar shards of at most ``shard_size`` cuts (one per dialogue, its turns as
    supervisions) per split into ``<out>/shar/<split>/``; returns the shard files, also
    indexed in ``SHARDS.json``. Needs lhotse (``duetflow[export]``)."""
    import lhotse

    if shard_size < 1:
        raise ValueError("shard_size must be at least 1")
    src, out = Path(pulled).resolve(), Path(out_dir)
    shards: list[ShardFile] = []
    with tempfile.TemporaryDirectory(prefix="duetflow-shar-") as tmp:
        manifests = export_lhotse(src, Path(tmp), splits)
        for split, (rec_path, sup_path) in manifests.items():
            folder = out / "shar" / split
            if folder.exists():
                for old in folder.iterdir():
                    old.unlink()
            folder.mkdir(parents=True, exist_ok=True)
            cuts = lhotse.CutSet.from_manifests(
                recordings=lhotse.load_manifest(rec_path),
                supervisions=lhotse.load_manifest(sup_path),
            )
            written = cuts.to_shar(folder, fields={"recording": "flac"}, shard_size=shard_size)
            per_shard = _cuts_per_shard(written.get("cuts", []))
            for paths in written.values():
                for p in sorted(paths):
                    f = Path(p)
                    shards.append(
                        ShardFile("shar", split, f"shar/{split}/{f.name}", sha256_file(f),
                                  f.stat().st_size, per_shard.get(_shard_no(f.name), 0))
                    )  # fmt: skip
    keep = [s for s in _read_index(out) if s.format != "shar"]
    write_shard_index(out, keep + sorted(shards, key=lambda s: (s.split, s.path)))
    return shards


def _shard_no(name: str) -> str:
    m = re.search(r"\.(\d{6})\.", name)
    return m.group(1) if m else ""


def _cuts_per_shard(paths: Sequence[str]) -> dict[str, int]:
    import gzip

    out = {}
    for p in paths:
        with gzip.open(p, "rt", encoding="utf-8") as f:
            out[_shard_no(Path(p).name)] = sum(1 for line in f if line.strip())
    return out


def _read_index(out: Path) -> list[ShardFile]:
    path = out / SHARD_INDEX
    if not path.is_file():
        return []
    return [ShardFile(**s) for s in json.loads(path.read_text(encoding="utf-8"))["shards"]]


def write_shard_index(out: Path, shards: Sequence[ShardFile]) -> Path:
    """``<out>/SHARDS.json``: every shard file with its sha256, size and dialogues."""
    path = out / SHARD_INDEX
    doc = {"format": 1, "shards": [asdict(s) for s in shards]}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def verify_shards(out_dir: str | Path) -> list[str]:
    """Problems of a sharded export against its ``SHARDS.json`` (empty: every listed file is
    there with its recorded size and sha256)."""
    out = Path(out_dir)
    if not (out / SHARD_INDEX).is_file():
        return [f"{out / SHARD_INDEX}: missing"]
    problems = []
    for s in _read_index(out):
        f = out / s.path
        if not f.is_file():
            problems.append(f"{s.path}: missing")
        elif f.stat().st_size != s.size or sha256_file(f) != s.sha256:
            problems.append(f"{s.path}: sha256/size differ from {SHARD_INDEX}")
    return problems
