"""Writing a game: the packet judges receive and the answer key kept apart from it.

``export_game`` lays out::

    OUT/packet/rounds.csv                 round, item, file: the only index judges get
    OUT/packet/round-01/<opaque id>.flac  five per round
    OUT/answer_key.csv                    round, item, file + dialogue id, category, system, ...
    OUT/game.json                         the game's parameters and counts (no answers)

Nothing in the packet tells the categories apart (tests/game check each point):

* **names**: opaque ids (:func:`duetflow.game.plan.opaque_id`), the same ``round-NN`` folders
  for everyone, items listed in opaque-id order;
* **tags**: every file is re-encoded from samples (FLAC, 16-bit), so no tag, comment, picture or
  application block of the release's file carries over; the encoder's vendor string is the same
  for every file;
* **sample rate and channels**: one rate for all (``sample_rate``, resampled with soxr), mono;
* **lengths**: each file is padded with digital silence to the next multiple of
  ``length_step`` seconds, so a file's length does not give away the release row (whose
  ``duration_s`` is exact) and the lengths of every category fall on the same grid; the
  duration bins are balanced by the plan.

Loudness is the release's own (rendering levels every dialogue the same way).
"""

from __future__ import annotations

import csv
import json
import math
import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from duetflow.audio.io import read_frames, resample, to_mono, write_audio
from duetflow.config import RunConfig
from duetflow.errors import ConfigError
from duetflow.game.plan import (
    DEFAULT_BIN_EDGES,
    PER_ROUND,
    GameItem,
    Slot,
    plan_rounds,
    shared_source_rounds,
)
from duetflow.records.manifest import iter_records
from duetflow.records.rows import ReleaseDialogueRow
from duetflow.release.layout import manifest_key, read_release_json, resolve_release
from duetflow.release.table_schemas import SPLITS
from duetflow.storage import open_store

#: Columns of ``packet/rounds.csv`` (all a judge sees).
PACKET_COLUMNS = ("round", "item", "file")
#: Columns of ``answer_key.csv``.
KEY_COLUMNS = (
    "round",
    "item",
    "file",
    "dialogue_id",
    "category",
    "system",
    "language",
    "duration_bin",
    "duration_s",
    "corpus",
    "topic",
)


@dataclass(frozen=True)
class GameExport:
    """Where a game was written and what it holds."""

    release_id: str
    out: Path
    packet: Path
    answer_key: Path
    rounds: int
    items: int
    candidates: int


def system_of(row: ReleaseDialogueRow) -> str:
    """Who speaks as B: the S2S system (HM), the TTS backend (PH), ``human`` (HH)."""
    if row.category == "HM":
        return row.design.system_name or "unknown"
    if row.category == "PH":
        return row.design.tts_backend or "unknown"
    return "human"


def _candidates(path: Path, language: str) -> Iterator[GameItem]:
    for row in iter_records(path, ReleaseDialogueRow):
        if row.language != language:
            continue
        yield GameItem(
            dialogue_id=row.dialogue_id,
            source_id=row.source_id,
            category=row.category,
            system=system_of(row),
            language=row.language,
            duration_s=row.duration_s,
            corpus=row.corpus,
            topic=row.topic,
            audio_key=row.audio_key,
            sha256=row.sha256,
        )


def blinded_samples(path: Path, sample_rate: int, length_step: float) -> np.ndarray:
    """The samples a packet file holds: mono, at ``sample_rate``, padded with silence to a
    multiple of ``length_step`` seconds (at least one step)."""
    data, sr = read_frames(path)
    mono = resample(to_mono(data), sr, sample_rate)
    step = max(1, int(round(length_step * sample_rate)))
    frames = max(step, math.ceil(mono.shape[0] / step) * step)
    out = np.zeros(frames, dtype=np.float32)
    out[: mono.shape[0]] = mono
    return out


def export_game(
    store_uri: str,
    release: str,
    language: str,
    rounds: int,
    out: str | Path,
    *,
    seed: int,
    split: str = "test",
    sample_rate: int = 16000,
    length_step: float = 1.0,
    edges: Sequence[float] = DEFAULT_BIN_EDGES,
    per_round: int = PER_ROUND,
    config: RunConfig | None = None,
) -> GameExport:
    """Write a blinded game of a release's ``split`` (or ``all``) in ``language``.

    Refuses an ``out`` that already holds a packet or a key (a second game must not overwrite
    the key of the first). The packet and the key are built in a scratch folder inside ``out``
    and renamed into place when complete: a failed export leaves neither. See the module
    docstring for the layout and the blinding.
    """
    if split != "all" and split not in SPLITS:
        raise ConfigError(f"unknown split {split!r}: choose one of {', '.join(SPLITS)} or all")
    if not 8000 <= sample_rate <= 192_000:
        raise ConfigError(f"sample rate {sample_rate} Hz is outside 8000-192000")
    if not (math.isfinite(length_step) and 0 < length_step <= 60):
        raise ConfigError(f"length step {length_step} s must be in (0, 60]")
    dest = Path(out)
    packet = dest / "packet"
    key_path = dest / "answer_key.csv"
    if packet.exists() or key_path.exists():
        raise ConfigError(f"{dest} already holds a game (packet/ or answer_key.csv): pick another")
    cfg = config or RunConfig()
    store = open_store(store_uri, cfg.release)
    rid = resolve_release(store, release)
    doc = read_release_json(store, rid)
    objects = {o["key"]: o["sha256"] for o in doc["objects"]}
    mkey = manifest_key(rid, "dialogues" if split == "all" else split)
    if mkey not in objects:
        raise ConfigError(f"release {rid} has no {split} manifest ({mkey})")
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".game-", dir=dest) as tmp:
        manifest = store.get_file(mkey, Path(tmp) / "dialogues.parquet", objects[mkey])
        items = list(_candidates(manifest, language))
        if not items:
            raise ConfigError(f"release {rid} has no {split} dialogues in language {language!r}")
        slots = plan_rounds(
            items, rounds, seed=seed, release_id=rid, edges=edges, per_round=per_round
        )
        staged = Path(tmp) / "packet"  # renamed into place when complete
        for s in slots:
            local = store.get_file(s.source.audio_key, Path(tmp) / "audio.flac", s.source.sha256)
            samples = blinded_samples(local, sample_rate, length_step)
            write_audio(staged / _file(s), samples, sample_rate, audio_format="FLAC")
        rows = ([s.round, s.item, _file(s)] for s in slots)
        _write_csv(staged / "rounds.csv", PACKET_COLUMNS, rows)
        _write_csv(Path(tmp) / "answer_key.csv", KEY_COLUMNS, (_key_row(s) for s in slots))
        os.replace(staged, packet)
        os.replace(Path(tmp) / "answer_key.csv", key_path)
    meta = {
        "release_id": rid,
        "split": split,
        "language": language,
        "rounds": rounds,
        "per_round": per_round,
        "sample_rate": sample_rate,
        "length_step_s": length_step,
        "bin_edges_s": list(edges),
        "candidates": len(items),
        "items": len(slots),
        "per_category": _counts(s.source.category for s in slots),
        "per_bin": _counts(s.duration_bin for s in slots),
        "rounds_sharing_a_source": shared_source_rounds(slots),
    }
    (dest / "game.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return GameExport(rid, dest, packet, key_path, rounds, len(slots), len(items))


def _file(s: Slot) -> str:
    return f"round-{s.round:02d}/{s.opaque_id}.flac"


def _key_row(s: Slot) -> list[object]:
    it = s.source
    return [
        s.round,
        s.item,
        _file(s),
        it.dialogue_id,
        it.category,
        it.system,
        it.language,
        s.duration_bin,
        f"{it.duration_s:.3f}",
        it.corpus,
        it.topic,
    ]


def _counts(values: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items()))


def _write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
