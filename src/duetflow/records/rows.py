"""Typed records: one frozen dataclass per manifest table, the tables' one declaration.

:class:`IntakeDialogueRow` / :class:`IntakeTurnRow` (an intake work directory, the row form of
:class:`duetflow.records.dialogue.Dialogue`), :class:`RejectionRow` (every ``rejections.parquet``),
:class:`RenderedDialogueRow` (``dialogues.parquet`` of a rendered work directory) and
:class:`RenderedTurnRow` (``turns.parquet``) are what the renderers build (``rendering/rows.py``,
``tts/assemble.py``). The Arrow schemas (:func:`arrow_schema`; ``manifest.RENDERED_*_SCHEMA``),
the column lists the pandera schemas check (:func:`columns`) and a release's manifests
(``release.layout``: these columns + split and audio key) are derived from them, so a column
is added in one place. A record becomes a plain row only where it is written
(:meth:`RenderedDialogueRow.to_row`, called by ``manifest.WorkdirWriter``) and is built from one
only where it is read (:func:`from_row`, called by the typed readers of
:mod:`duetflow.records.manifest`). A dialogue record of a
:class:`~duetflow.records.dialogue.Dialogue` takes its leading fields from it in one place
(``of_dialogue``). :class:`ReleaseDialogueRow` is a release manifest's dialogue row: the rendered
record plus its split and the store key of its audio; :class:`TurnEventRow` a release's
turn-taking event.

Column types follow the field annotations: ``str`` → string, ``int`` → int32, ``float`` →
float64, ``bool`` → bool, ``X | None`` → the same type, nullable by content. The ``design``
field expands into the design columns of :data:`duetflow.records.dialogue.DESIGN_COLUMNS` (all
strings) at its position.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Self, TypeVar, get_type_hints

import pyarrow as pa

from duetflow.records.dialogue import DESIGN_COLUMNS, DesignFields, Dialogue, design_to_row

_ARROW = {str: pa.string(), int: pa.int32(), float: pa.float64(), bool: pa.bool_()}


@dataclass(frozen=True)
class _Row:
    """What every record does: become a table row where it is written."""

    def to_row(self) -> dict[str, Any]:
        """The record as a table row (column → value; a design field as its columns)."""
        row: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, DesignFields):
                row.update(design_to_row(value))
            else:
                row[f.name] = value
        return row


@dataclass(frozen=True)
class _TurnSpan(_Row):
    """The leading columns of both turn tables: which turn, whose, what kind, when."""

    dialogue_id: str
    turn_index: int
    speaker: str
    kind: str
    start_s: float
    end_s: float


@dataclass(frozen=True)
class _DialogueHead(_Row):
    """The leading columns of both dialogue tables: the dialogue, its corpus and speakers."""

    dialogue_id: str
    source_id: str
    corpus: str
    category: str
    language: str
    topic: str
    speaker_a: str
    speaker_b: str
    design: DesignFields  # the design columns (duetflow.records.dialogue.DESIGN_COLUMNS)

    @classmethod
    def of_dialogue(cls, d: Dialogue, **rest: Any) -> Self:
        """The record of dialogue ``d``: these leading fields from ``d`` (its id, corpus,
        category, language, topic, the two speakers' ids and its design), the table's own
        fields from ``rest`` (a missing or unknown one is a TypeError, as for the class)."""
        return cls(
            dialogue_id=d.id,
            source_id=d.source_id,
            corpus=d.corpus,
            category=str(d.category),
            language=d.language,
            topic=d.topic,
            speaker_a=d.speaker_a.id,
            speaker_b=d.speaker_b.id,
            design=d.design,
            **rest,
        )


@dataclass(frozen=True)
class RenderedTurnRow(_TurnSpan):
    """One turn of a rendered dialogue, on the output timeline (``orig_*``: source timeline).

    ``kind`` is ``turn`` or ``backchannel``; ``turn_index`` counts turns in output order.
    """

    orig_start_s: float
    orig_end_s: float
    text: str


@dataclass(frozen=True)
class RenderedDialogueRow(_DialogueHead):
    """One rendered dialogue: what it is, where its audio lives and how it was rendered."""

    audio_path: str  # relative to the work directory
    sha256: str
    duration_s: float
    sample_rate: int
    num_channels: int
    n_turns: int
    loudness_lufs_a: float
    loudness_lufs_b: float
    gain_db_a: float
    gain_db_b: float
    gap_ms_min: float | None
    gap_ms_max: float | None
    provenance: str  # JSON object
    # -- trainers (issue 16): licence and source sample rate per dialogue --
    licence: str  # SPDX id / LicenseRef- name / AND expression
    source_sample_rate: int  # Hz of the source audio before resampling
    # -- trainers (issue 27): the two-channel file (A left, B right), null when mono only --
    #: relative to the work directory (in a release: the store key, like ``audio_path``)
    stereo_path: str | None = field(default=None, kw_only=True)
    stereo_sha256: str | None = field(default=None, kw_only=True)
    # -- issue 29: DNSMOS (1-5) of the mix and of each speaker's solo speech, null when
    # quality.dnsmos is off (duetflow.rendering.quality) --
    dnsmos_sig: float | None = field(default=None, kw_only=True)
    dnsmos_bak: float | None = field(default=None, kw_only=True)
    dnsmos_ovrl: float | None = field(default=None, kw_only=True)
    dnsmos_p808: float | None = field(default=None, kw_only=True)
    dnsmos_sig_a: float | None = field(default=None, kw_only=True)
    dnsmos_bak_a: float | None = field(default=None, kw_only=True)
    dnsmos_ovrl_a: float | None = field(default=None, kw_only=True)
    dnsmos_p808_a: float | None = field(default=None, kw_only=True)
    dnsmos_sig_b: float | None = field(default=None, kw_only=True)
    dnsmos_bak_b: float | None = field(default=None, kw_only=True)
    dnsmos_ovrl_b: float | None = field(default=None, kw_only=True)
    dnsmos_p808_b: float | None = field(default=None, kw_only=True)


#: The DNSMOS columns of a rendered dialogue (issue 29), in record order.
DNSMOS_COLUMNS: tuple[str, ...] = tuple(
    f.name for f in dataclasses.fields(RenderedDialogueRow) if f.name.startswith("dnsmos_")
)


@dataclass(frozen=True)
class ReleaseDialogueRow(RenderedDialogueRow):
    """A dialogue row of a release manifest (``release.layout``).

    The rendered record with ``audio_path`` rewritten to the audio's store key, plus the
    dialogue's ``split`` and ``audio_key`` (= that key; the manifests place both columns after
    ``sha256``), and what its voices are (issue 27, at the end of the row): ``voice_cloned``
    (a PH dialogue whose TTS backend cloned the reference voices; False for every other) and
    ``reference_speaker_a``/``_b`` (a PH dialogue's reference speakers, the voices each side
    was made from; null for HH and HM), read from the PH provenance
    (:func:`ph_voice_facts`).
    """

    split: str
    audio_key: str
    # -- trainers (issue 27): what the audio is --
    voice_cloned: bool
    reference_speaker_a: str | None
    reference_speaker_b: str | None

    @classmethod
    def released(
        cls, row: RenderedDialogueRow, split: str, audio_key: str, stereo_key: str | None = None
    ) -> Self:
        """``row`` as published: in ``split``, its audio at ``audio_key`` of the store (its
        two-channel file, if any, at ``stereo_key``)."""
        values = {f.name: getattr(row, f.name) for f in dataclasses.fields(RenderedDialogueRow)}
        values["audio_path"] = audio_key
        values["stereo_path"] = stereo_key if row.stereo_sha256 else None
        cloned, ref_a, ref_b = ph_voice_facts(row)
        return cls(
            **values,
            split=split,
            audio_key=audio_key,
            voice_cloned=cloned,
            reference_speaker_a=ref_a,
            reference_speaker_b=ref_b,
        )


def ph_voice_facts(row: RenderedDialogueRow) -> tuple[bool, str | None, str | None]:
    """(voice cloned, reference speaker of A, of B) of a rendered dialogue.

    Only a PH dialogue has references: its provenance's ``speakers`` (the voices, A then B,
    as ``tts.assemble`` writes them) and ``clones`` (what its backend declares: Dia and Spark
    clone, eSpeak NG does not). Anything else, or a provenance that says nothing: not cloned,
    no references.
    """
    if row.category != "PH":
        return False, None, None
    try:
        prov = json.loads(row.provenance or "{}")
    except json.JSONDecodeError:
        return False, None, None
    if not isinstance(prov, dict):
        return False, None, None
    ids: list[str | None] = []
    speakers = prov.get("speakers")
    for sp in speakers if isinstance(speakers, list) else []:
        ids.append(str(sp["id"]) if isinstance(sp, dict) and sp.get("id") else None)
    ids += [None, None]
    return prov.get("clones") is True, ids[0], ids[1]


@dataclass(frozen=True)
class IntakeDialogueRow(_DialogueHead):
    """One ingested dialogue (``dialogues.parquet`` of an intake work directory).

    The row form of a :class:`duetflow.records.dialogue.Dialogue` (``manifest.dialogue_to_rows`` /
    ``dialogue_from_rows`` convert): speakers, audio source and provenance as canonical JSON,
    the window as two nullable columns.
    """

    duration_s: float
    window_start_s: float | None
    window_end_s: float | None
    speakers: str  # JSON list of Speaker
    source: str  # JSON AudioSource
    provenance: str  # JSON object
    # -- trainers (issue 16): licence per dialogue --
    licence: str


@dataclass(frozen=True)
class IntakeTurnRow(_TurnSpan):
    """One turn of an ingested dialogue, on the source timeline (``labels``: JSON object)."""

    text: str
    labels: str


@dataclass(frozen=True)
class RejectionRow(_Row):
    """One rejection (``rejections.parquet`` of every work directory and release): the row
    form of a :class:`duetflow.records.dialogue.Rejection`."""

    item_id: str
    corpus: str
    source_path: str
    stage: str
    reason: str
    detail: str


@dataclass(frozen=True)
class TurnEventRow(_Row):
    """One turn-taking event of a released dialogue, on its rendered timeline (a release's
    ``events.parquet``; built by :func:`duetflow.turntaking.events.dialogue_events`).

    ``event`` is one of :data:`duetflow.turntaking.events.EVENT_KINDS`: ``turn`` (a turn that
    holds the floor), ``backchannel``, ``non_floor_interruption``, ``terminal_overlap``,
    ``interruption`` (a listener vocalisation overlapping the other party's turn, spanning the
    overlapped stretch), ``nonspeech`` (laughter and the like, where the turns mark it) and
    ``gap`` (a speaker change of the floor, from the floor's end to the next speaker's start;
    ``offset_s`` the signed floor-transfer offset, negative for an overlapping change).
    ``turn_index`` is the event's own turn (``turns.parquet``: the listener's, the next
    speaker's); ``other_turn_index`` the turn it overlaps or follows (null for a turn).
    """

    dialogue_id: str
    event_index: int
    event: str
    speaker: str
    start_s: float
    end_s: float
    turn_index: int
    other_turn_index: int | None
    offset_s: float | None


Record = (
    RenderedTurnRow
    | RenderedDialogueRow
    | IntakeDialogueRow
    | IntakeTurnRow
    | RejectionRow
    | TurnEventRow
)
RecordType = type[Record]
#: A record type (a table's row).
R = TypeVar("R", bound=Record)


@cache
def _design_field(record: RecordType) -> str | None:
    """The name of the record's :class:`DesignFields` field (expanded into design columns)."""
    hints = get_type_hints(record)
    return next((f.name for f in dataclasses.fields(record) if hints[f.name] is DesignFields), None)


def from_row(record: type[R], row: Mapping[str, Any]) -> R:
    """The ``record`` of a table row: columns by field name, the design field from its columns.

    Values are kept exactly as read (``None`` stays ``None``): a record read and written back
    gives the same row. KeyError on a missing column.
    """
    design = _design_field(record)  # type: ignore[arg-type]  # classes hash
    values = {f.name: row[f.name] for f in dataclasses.fields(record) if f.name != design}
    if design is not None:
        values[design] = DesignFields(**{name: row[name] for name in DESIGN_COLUMNS})
    return record(**values)


@cache
def arrow_schema(record: RecordType) -> pa.Schema:
    """The Arrow schema of a record type's table, column by column in field order."""
    hints = get_type_hints(record)
    out: list[tuple[str, pa.DataType]] = []
    for f in dataclasses.fields(record):
        hint = hints[f.name]
        if hint is DesignFields:
            out.extend((name, pa.string()) for name in DESIGN_COLUMNS)
            continue
        base = next((t for t in getattr(hint, "__args__", (hint,)) if t is not type(None)), hint)
        if base not in _ARROW:
            raise TypeError(f"{record.__name__}.{f.name}: no Arrow type for {hint!r}")
        out.append((f.name, _ARROW[base]))
    return pa.schema(out)


def columns(record: type[R]) -> tuple[str, ...]:
    """The column names of a record type's table, in order."""
    schema: pa.Schema = arrow_schema(record)  # type: ignore[arg-type]  # classes hash
    return tuple(schema.names)
