"""The lhotse export of a pulled release: recordings and supervisions, one JSONL.gz each per split.

``<out>/duetflow_recordings_<split>.jsonl.gz`` (one recording per dialogue) and
``duetflow_supervisions_<split>.jsonl.gz`` (one supervision per turn, speaker / text /
language; under ``custom`` every other field of the turn and dialogue records but those
:data:`LHOTSE_DIALOGUE_EXCLUDED` names: kind, original timing, category, corpus, topic,
licence, source sample rate, the design fields); load with ``lhotse.load_manifest``. Read
dialogue by dialogue through :func:`duetflow.release.export.iter_dialogues_with_turns`; gzip
output carries no timestamp, so the same input gives the same bytes.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from duetflow.audio.io import audio_info
from duetflow.errors import ManifestError
from duetflow.licences import UNDECLARED
from duetflow.records.manifest import iter_column
from duetflow.records.rows import (
    RenderedDialogueRow,
    RenderedTurnRow,
    TurnEventRow,
)
from duetflow.release.events import EVENTS, EventWalk
from duetflow.release.export import iter_dialogues_with_turns, non_empty_splits, present_splits
from duetflow.release.pull import pulled_audio_path

log = logging.getLogger(__name__)


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
#: other :class:`~duetflow.records.rows.RenderedTurnRow` field goes under ``custom``.
LHOTSE_TURN_NATIVE = ("dialogue_id", "turn_index", "start_s", "end_s", "text", "speaker")


#: Dialogue columns a supervision leaves out: the recording's id and the language are native
#: supervision fields; audio, checksum, length, rate and channels describe the recording; the
#: split is the manifest file; speakers are per turn; turn count, loudness, gains, gap range
#: and the provenance JSON describe the rendering of the whole dialogue (all in the pulled
#: manifest). Every other :class:`~duetflow.records.rows.ReleaseDialogueRow` column goes under each
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
    """The events whose own turn is ``turn_index`` (:class:`~duetflow.records.rows.TurnEventRow`:
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
    for split in non_empty_splits(src, present_splits(src, splits)):
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
