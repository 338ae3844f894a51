"""``session.yaml``: the studio session sidecar's schema, reading and what it implies.

:class:`SessionSidecar` (documented with its JSON Schema in docs/studio-sessions.md) says who
spoke, on which file and channel, in which layout, and how the session was elicited.
:func:`load_sidecar` parses it bounded (size and YAML alias expansion) and turns validation
errors into :class:`~duetflow.errors.InputError` ``bad_sidecar`` naming the field.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from duetflow.bounded_yaml import load_yaml
from duetflow.corpora.adapter import read_bounded, read_text
from duetflow.errors import InputError, brief_repr
from duetflow.langtag import language_tag_problem
from duetflow.records.dialogue import (
    AudioSource,
    MixedMonoSource,
    MultichannelSource,
    PerSpeakerSource,
)

SIDECAR = "session.yaml"
MAX_SESSION_ID_CHARS = 128
AUDIO_SUFFIXES = frozenset({".wav", ".flac", ".ogg", ".mp3", ".opus", ".m4a", ".aiff", ".aif"})


class StrictModel(BaseModel):
    """A frozen model that rejects unknown fields (the sidecar and transcript entries)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class SpeakerEntry(StrictModel):
    """One party of the session and where its voice is recorded."""

    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9._-]+$", description="speaker id")
    role: Literal["human", "machine"] = Field(description="machine = the S2S system under test")
    gender: Literal["M", "F"] | None = None
    file: str = Field(min_length=1, description="audio file, relative to the session folder")
    channel: int | None = Field(
        None, ge=0, description="channel inside `file` (stereo layout: required)"
    )
    participant: str | None = Field(
        None,
        min_length=1,
        max_length=128,
        pattern=r"^[A-Za-z0-9._-]+$",
        description="the person's id across sessions (e.g. a consent-form id); without it the "
        "speaker is known only within this session (`<session_id>/<id>`)",
    )

    def person(self, session_id: str) -> str:
        """Who this speaker is beyond the session: the participant id, else session-scoped."""
        return self.participant or f"{session_id}/{self.id}"


class SystemInfo(StrictModel):
    """The speech-to-speech system an HM session talks to."""

    name: str = Field(min_length=1)
    version: str = Field(min_length=1)


class SessionSidecar(StrictModel):
    """``session.yaml``: everything known about one studio session."""

    session_id: str = Field(
        min_length=1,
        max_length=MAX_SESSION_ID_CHARS,
        description="unique id, stable across re-deliveries",
    )
    date: dt.date
    language: str = Field(min_length=2, description="BCP-47 code of the target language: en, zh")
    topic: str = ""
    category: Literal["HM", "HH"]
    strategy: Literal["human_guided_initiation", "role_playing", "human_likeness_prompting"] = (
        Field(description="how the session was elicited")
    )
    opening_line: str = Field(min_length=1, description="the fixed line the session starts from")
    layout: Literal["tracks", "stereo", "mono"] = Field(
        description="tracks: a file per speaker; stereo: a channel per speaker; mono: one mix"
    )
    system: SystemInfo | None = Field(None, description="required for HM, absent for HH")
    speakers: list[SpeakerEntry] = Field(
        min_length=2, max_length=2, description="the initiator (says the opening line) first"
    )
    transcript: str | None = Field(None, description="JSON transcript, see docs")
    rttm: str | None = Field(None, description="RTTM file with turn timings")

    @field_validator("language")
    @classmethod
    def _language_tag(cls, value: str) -> str:
        problem = language_tag_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _consistent(self) -> SessionSidecar:
        a, b = self.speakers
        if a.id == b.id:
            raise ValueError(f"speakers: both speakers have id {a.id!r}")
        roles = sorted((a.role, b.role))
        if self.category == "HM":
            if roles != ["human", "machine"]:
                raise ValueError("speakers: an HM session needs one human and one machine speaker")
            if self.system is None:
                raise ValueError("system: an HM session must name the S2S system (name, version)")
        elif roles != ["human", "human"]:
            raise ValueError("speakers: an HH session needs two human speakers")
        elif self.system is not None:
            raise ValueError("system: only HM sessions talk to a system")
        if self.layout == "tracks" and a.file == b.file:
            raise ValueError("speakers: layout 'tracks' needs a different file per speaker")
        if self.layout in ("stereo", "mono") and a.file != b.file:
            raise ValueError(f"speakers: layout {self.layout!r} needs both speakers in one file")
        if self.layout == "stereo" and (
            a.channel is None or b.channel is None or a.channel == b.channel
        ):
            raise ValueError("speakers: layout 'stereo' needs a distinct channel per speaker")
        if self.layout == "mono" and a.channel != b.channel:
            raise ValueError("speakers: layout 'mono' mixes both speakers in one channel")
        return self


def sidecar_json_schema() -> dict[str, Any]:
    """JSON Schema of ``session.yaml`` (published in docs/studio-sessions.md)."""
    return SessionSidecar.model_json_schema()


def validation_error(path: Path, err: ValidationError, reason: str) -> InputError:
    """One InputError naming every field a pydantic validation rejected (the first as ``field``)."""
    parts = []
    first_loc: str | None = None
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "<root>"
        first_loc = first_loc or loc
        if e["type"] == "extra_forbidden":
            parts.append(f"unknown field '{loc}'")
        elif e["type"] == "missing":
            parts.append(f"missing field '{loc}'")
        else:
            msg = str(e["msg"]).removeprefix("Value error, ")
            parts.append(f"'{loc}': {msg} (got {brief_repr(e.get('input'))})")
    return InputError(path, "; ".join(parts), reason=reason, field=first_loc)


#: A sidecar is a few hundred bytes; anything near this is not one.
MAX_SIDECAR_BYTES = 256 * 1024
#: YAML nodes a sidecar may expand to (aliases included): a real one has a few dozen.
MAX_SIDECAR_NODES = 10_000


def load_sidecar(path: Path) -> SessionSidecar:
    """Parse and validate ``session.yaml``; InputError ``bad_sidecar`` names the field or line.

    The file is bounded (:data:`MAX_SIDECAR_BYTES`) and so is what YAML aliases may expand to
    (:data:`MAX_SIDECAR_NODES`), so an alias bomb is a rejection, not an out-of-memory crash.
    """
    text = read_text(path, max_bytes=MAX_SIDECAR_BYTES)
    try:
        data = load_yaml(text, max_nodes=MAX_SIDECAR_NODES)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise InputError(path, f"invalid YAML: {e}", reason="bad_sidecar", line=line) from None
    if not isinstance(data, dict):
        raise InputError(path, "top level must be a mapping", reason="bad_sidecar")
    try:
        return SessionSidecar.model_validate(data)
    except ValidationError as e:
        raise validation_error(path, e, "bad_sidecar") from None


def peek_session_id(path: Path) -> str | None:
    """The ``session_id`` of a sidecar that failed validation, when it can still be read."""
    try:
        data = load_yaml(read_bounded(path, MAX_SIDECAR_BYTES).decode("utf-8"),
                         max_nodes=MAX_SIDECAR_NODES)  # fmt: skip
    except (InputError, UnicodeDecodeError, yaml.YAMLError):
        return None
    sid = data.get("session_id") if isinstance(data, dict) else None
    if not isinstance(sid, str) or not sid.strip() or len(sid) > MAX_SESSION_ID_CHARS:
        return None
    return sid


def audio_source(meta: SessionSidecar, files: Mapping[str, Path]) -> AudioSource:
    """The audio source the sidecar's layout describes (``files``: speaker id → resolved file)."""
    a, b = meta.speakers
    if meta.layout == "tracks":
        return PerSpeakerSource(
            paths={sp.id: str(files[sp.id]) for sp in meta.speakers},
            channels={sp.id: sp.channel for sp in meta.speakers if sp.channel is not None},
        )
    if meta.layout == "stereo":
        assert a.channel is not None and b.channel is not None  # sidecar validator
        return MultichannelSource(
            path=str(files[a.id]), channels={a.id: a.channel, b.id: b.channel}
        )
    return MixedMonoSource(path=str(files[a.id]), channel=a.channel)
