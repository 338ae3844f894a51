"""Typed records that flow through every stage.

All records are frozen dataclasses: a stage never mutates what it was given, it returns new
records. Times are seconds on the *source* dialogue's timeline unless a field says otherwise.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any, Literal, TypeAlias

from duetflow.errors import printable


class Category(StrEnum):
    """Who talks: human-human, human-machine, pseudo-human (voice-cloned TTS)."""

    HH = "HH"
    HM = "HM"
    PH = "PH"


class Role(StrEnum):
    HUMAN = "human"
    MACHINE = "machine"
    SYNTHETIC = "synthetic"


class TurnKind(StrEnum):
    TURN = "turn"
    BACKCHANNEL = "backchannel"
    NONSPEECH = "nonspeech"


class Stage(StrEnum):
    """Pipeline stage that produced a rejection."""

    INGEST = "ingest"
    SEGMENT = "segment"
    WINDOW = "window"
    FILTER = "filter"
    RENDER = "render"
    MATCH = "match"  # HH windows left out to match the HM topic distribution
    SCRIPT = "script"  # LLM script generation / rewriting
    SYNTHESIZE = "synthesize"
    PUBLISH = "publish"


@dataclass(frozen=True)
class Speaker:
    """A party of a dialogue. ``id`` is the corpus's own speaker id (``Ses01_F``, ``G0001``)."""

    id: str
    role: Role = Role.HUMAN
    gender: Literal["M", "F"] | None = None
    language: str | None = None


@dataclass(frozen=True)
class Turn:
    """One vocalisation of one speaker; ``start``/``end`` in seconds on the dialogue timeline."""

    speaker: str
    start: float
    end: float
    text: str = ""
    kind: TurnKind = TurnKind.TURN
    labels: Mapping[str, str] = field(default_factory=dict)
    #: the source's annotated ``(start, end)`` when ``start``/``end`` were re-timed from the
    #: audio (:mod:`duetflow.acoustics.timing`); None: ``start``/``end`` are the annotation
    annotated: tuple[float, float] | None = None

    @property
    def duration(self) -> float:
        return self.end - self.start

    @property
    def annotated_span(self) -> tuple[float, float]:
        """The source's own ``(start, end)`` for this turn, whatever re-timing did."""
        return self.annotated if self.annotated is not None else (self.start, self.end)


# --- where the samples live -------------------------------------------------------------------


@dataclass(frozen=True)
class MultichannelSource:
    """One file, one speaker per channel (IEMOCAP dialog wavs, studio stereo)."""

    path: str
    channels: Mapping[str, int]  # speaker id -> channel index
    kind: Literal["multichannel"] = "multichannel"


@dataclass(frozen=True)
class PerSpeakerSource:
    """One file per speaker (studio mic track + system line-out); same timeline for all."""

    paths: Mapping[str, str]  # speaker id -> file
    channels: Mapping[str, int] = field(default_factory=dict)  # optional channel inside each file
    kind: Literal["per_speaker"] = "per_speaker"


@dataclass(frozen=True)
class PerTurnSource:
    """One file per turn (DailyTalk, TTS output); ``paths[i]`` holds turn ``i``.

    The dialogue timeline is the clips laid end to end in turn order, so a turn's ``start`` is the
    sum of the previous clips' durations.
    """

    paths: tuple[str, ...]
    kind: Literal["per_turn"] = "per_turn"


@dataclass(frozen=True)
class MixedMonoSource:
    """Both speakers mixed in one channel (RAMC mono, studio mono mix)."""

    path: str
    channel: int | None = None  # None: downmix all channels
    kind: Literal["mixed_mono"] = "mixed_mono"


AudioSource: TypeAlias = MultichannelSource | PerSpeakerSource | PerTurnSource | MixedMonoSource


@dataclass(frozen=True)
class DesignFields:
    """Turing-test design facts of a dialogue, carried as manifest columns (None: not applicable).

    A listening test compares HH, HM and PH dialogues that should differ only in who speaks, so
    what each was made from must be queryable, not buried in provenance JSON:

    * ``source_topic``: the source's own topic label before mapping into the taxonomy
      (``Dialogue.topic``), e.g. a DailyDialog topic, a RAMC domain, an IEMOCAP scenario;
    * ``system_name`` / ``system_version`` / ``strategy`` / ``opening_line``: the studio
      sidecar's S2S system (HM), elicitation strategy and the fixed line the session starts from;
    * ``tts_backend``: the TTS backend that voiced a PH dialogue.
    """

    source_topic: str | None = None
    system_name: str | None = None
    system_version: str | None = None
    strategy: str | None = None
    opening_line: str | None = None
    tts_backend: str | None = None


#: The design columns of every dialogue table, in order (declared once, by :class:`DesignFields`).
DESIGN_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(DesignFields))


def design_to_row(design: DesignFields) -> dict[str, str | None]:
    """The design columns of one dialogue row."""
    return {name: getattr(design, name) for name in DESIGN_COLUMNS}


def design_from_row(row: Mapping[str, Any]) -> DesignFields:
    """Design fields from a dialogue row; absent columns (older tables) read as None."""
    return DesignFields(**{name: row.get(name) or None for name in DESIGN_COLUMNS})


@dataclass(frozen=True)
class Dialogue:
    """A two-party dialogue (or a window of one) with its turns and where its audio lives.

    ``speakers[0]`` is speaker A (the initiator), ``speakers[1]`` speaker B (the responder a judge
    listens to). ``window`` is the excerpt's ``(start, end)`` on the source timeline; ``None``
    means the whole source. ``topic`` is a taxonomy topic (``duetflow.topics``); ``design`` holds
    the source topic and the HM/PH design fields. ``licence`` is what the source's licence says
    about it.
    """

    id: str
    corpus: str
    source_id: str
    category: Category
    language: str
    topic: str
    speakers: tuple[Speaker, Speaker]
    turns: tuple[Turn, ...]
    source: AudioSource
    duration_s: float
    window: tuple[float, float] | None = None
    provenance: Mapping[str, Any] = field(default_factory=dict)
    #: SPDX id, ``LicenseRef-`` name or ``AND`` expression (see :mod:`duetflow.licences`);
    #: empty until ingest stamps the adapter's (or the config's) licence on it
    licence: str = ""
    design: DesignFields = field(default_factory=DesignFields)

    @property
    def speaker_a(self) -> Speaker:
        return self.speakers[0]

    @property
    def speaker_b(self) -> Speaker:
        return self.speakers[1]

    def speaker(self, speaker_id: str) -> Speaker:
        for s in self.speakers:
            if s.id == speaker_id:
                return s
        raise KeyError(speaker_id)


#: Longest ``Rejection.detail`` kept (a readable line or two, never a dump of the input).
MAX_DETAIL_CHARS = 2000

#: Dialogue provenance key: speaker id -> who the speaker is beyond this dialogue. Corpus speaker
#: ids (``Ses01_F``, ``G00001002``) name people corpus-wide; an adapter whose ids only name roles
#: within one recording (studio sidecars: ``user``, ``system``) maps them to person ids here, so
#: a voice pool never takes two people for one.
PARTICIPANTS = "participants"


@dataclass(frozen=True)
class Rejection:
    """Why an item was dropped; kept forever so that inputs = kept + rejected."""

    item_id: str
    stage: Stage
    reason: str
    detail: str = ""
    corpus: str = ""
    source_path: str = ""

    def __post_init__(self) -> None:
        # every rejection lands in a table readers scroll through: bound what hostile input
        # can put there (the full story is in the log), and keep it valid UTF-8 (a file name
        # with undecodable bytes is shown escaped, never a crash of the table writer)
        for name in ("item_id", "reason", "detail", "corpus", "source_path"):
            object.__setattr__(self, name, printable(getattr(self, name)))
        for name, limit in (("detail", MAX_DETAIL_CHARS), ("source_path", 1000)):
            text = getattr(self, name)
            if len(text) > limit:
                cut = f"{text[:limit]}… [{len(text) - limit} more characters cut]"
                object.__setattr__(self, name, cut)


# --- stable ids -------------------------------------------------------------------------------

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_id(text: str) -> str:
    """Make ``text`` usable as a file name, keeping it readable; add a hash if anything changed."""
    cleaned = _UNSAFE.sub("-", text).strip("-.") or "x"
    if cleaned != text:
        # surrogatepass: a name with undecodable bytes still gets a stable id (same bytes as
        # plain UTF-8 for any valid text)
        cleaned += "-" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:6]
    return cleaned


def dialogue_id(corpus: str, original_id: str) -> str:
    """Stable id of a source dialogue: derived from corpus and its own id, never random."""
    return f"{safe_id(corpus)}__{safe_id(original_id)}"


def window_id(source_dialogue_id: str, index: int, start_s: float) -> str:
    """Stable id of an excerpt: source id + window index + start offset in milliseconds."""
    return f"{source_dialogue_id}__w{index:03d}_{round(start_s * 1000):08d}"
