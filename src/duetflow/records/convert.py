"""A dialogue and a rejection to and from their table rows; canonical JSON.

The conversions the manifest writers and readers (:mod:`duetflow.records.manifest`) apply at
the table boundary, and the canonical JSON (:func:`dumps`: equal content, equal bytes) that
sources, provenance and hashed payloads are written in. Plain functions over the records of
:mod:`duetflow.records.dialogue` and :mod:`duetflow.records.rows`; no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from duetflow.errors import ManifestError
from duetflow.records.dialogue import (
    AudioSource,
    Category,
    DesignFields,
    Dialogue,
    MixedMonoSource,
    MultichannelSource,
    PerSpeakerSource,
    PerTurnSource,
    Rejection,
    Role,
    Speaker,
    Stage,
    Turn,
    TurnKind,
    design_to_row,
)
from duetflow.records.rows import IntakeDialogueRow, IntakeTurnRow, RejectionRow


def dumps(obj: Any) -> str:
    """Canonical JSON (sorted keys, no spaces) so that equal content gives equal bytes."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# --- model <-> rows -----------------------------------------------------------------------------


def source_to_json(source: AudioSource) -> str:
    data = asdict(source)
    if isinstance(source, PerTurnSource):
        data["paths"] = list(source.paths)
    return dumps(data)


def source_from_json(text: str) -> AudioSource:
    data = json.loads(text)
    kind = data.pop("kind")
    if kind == "multichannel":
        return MultichannelSource(path=data["path"], channels=dict(data["channels"]))
    if kind == "per_speaker":
        return PerSpeakerSource(paths=dict(data["paths"]), channels=dict(data.get("channels", {})))
    if kind == "per_turn":
        return PerTurnSource(paths=tuple(data["paths"]))
    if kind == "mixed_mono":
        return MixedMonoSource(path=data["path"], channel=data.get("channel"))
    raise ManifestError(f"unknown audio source kind {kind!r}")


def dialogue_to_rows(d: Dialogue) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Intake rows (one dialogue row, its turn rows) for a dialogue: :func:`dialogue_records`
    as table rows."""
    record, turns = dialogue_records(d)
    return record.to_row(), [t.to_row() for t in turns]


def dialogue_records(d: Dialogue) -> tuple[IntakeDialogueRow, list[IntakeTurnRow]]:
    """The intake records (dialogue, its turns) of a dialogue; :func:`dialogue_from_rows`
    inverts it."""
    record = IntakeDialogueRow.of_dialogue(
        d,
        duration_s=float(d.duration_s),
        window_start_s=d.window[0] if d.window else None,
        window_end_s=d.window[1] if d.window else None,
        speakers=dumps([asdict(s) for s in d.speakers]),
        source=source_to_json(d.source),
        provenance=dumps(dict(d.provenance)),
        licence=d.licence,
    )
    turns = [
        IntakeTurnRow(
            dialogue_id=d.id,
            turn_index=i,
            speaker=t.speaker,
            kind=str(t.kind),
            start_s=float(t.start),
            end_s=float(t.end),
            text=t.text,
            labels=dumps(dict(t.labels)),
        )
        for i, t in enumerate(d.turns)
    ]
    return record, turns


def dialogue_from_rows(row: IntakeDialogueRow, turn_rows: Sequence[IntakeTurnRow]) -> Dialogue:
    """The dialogue of an intake dialogue record and its turn records."""
    speakers = [
        Speaker(
            id=s["id"],
            role=Role(s.get("role", "human")),
            gender=s.get("gender"),
            language=s.get("language"),
        )
        for s in json.loads(row.speakers)
    ]
    turns = tuple(
        Turn(
            speaker=t.speaker,
            start=float(t.start_s),
            end=float(t.end_s),
            text=t.text or "",
            kind=TurnKind(t.kind),
            labels=json.loads(t.labels) if t.labels else {},
        )
        for t in sorted(turn_rows, key=lambda t: int(t.turn_index))
    )
    ws, we = row.window_start_s, row.window_end_s
    return Dialogue(
        id=row.dialogue_id,
        corpus=row.corpus,
        source_id=row.source_id,
        category=Category(row.category),
        language=row.language,
        topic=row.topic or "",
        speakers=(speakers[0], speakers[1]),
        turns=turns,
        source=source_from_json(row.source),
        duration_s=float(row.duration_s),
        window=(float(ws), float(we)) if ws is not None and we is not None else None,
        provenance=json.loads(row.provenance) if row.provenance else {},
        design=DesignFields(**{k: v or None for k, v in design_to_row(row.design).items()}),
        licence=row.licence or "",
    )


def rejection_record(r: Rejection) -> RejectionRow:
    """The rejections-table record of a rejection; :func:`rejection_from_row` inverts it."""
    return RejectionRow(
        item_id=r.item_id,
        corpus=r.corpus,
        source_path=r.source_path,
        stage=str(r.stage),
        reason=r.reason,
        detail=r.detail,
    )


def rejection_to_row(r: Rejection) -> dict[str, Any]:
    """The rejections-table row of a rejection (:func:`rejection_record` as a table row)."""
    return rejection_record(r).to_row()


def rejection_from_row(row: RejectionRow) -> Rejection:
    """The rejection of a rejections-table record."""
    return Rejection(
        item_id=row.item_id,
        stage=Stage(row.stage),
        reason=row.reason,
        detail=row.detail or "",
        corpus=row.corpus or "",
        source_path=row.source_path or "",
    )
