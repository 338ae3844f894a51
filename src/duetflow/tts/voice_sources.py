"""The human speakers whose voices PH dialogues clone: their audio read from a work directory.

Which speakers of a dialogue record are human (:func:`human_speakers`) and who they are across
dialogues (:func:`person_key`), the track a speaker's turns are cut from (mono, the speaker's
channel or file; :func:`load_track`), the files it reads and their content hash (the voice
cache's key, :func:`content_hash`). :mod:`duetflow.tts.voices` scores and selects the clips.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from duetflow.audio.io import Audio, read_frames, resample
from duetflow.errors import InputError
from duetflow.hashing import sha256_file
from duetflow.records.convert import source_from_json
from duetflow.records.dialogue import (
    PARTICIPANTS,
    Category,
    MixedMonoSource,
    MultichannelSource,
    PerSpeakerSource,
    PerTurnSource,
    Role,
)
from duetflow.records.manifest import DIALOGUES, DialogueRecord
from duetflow.records.rows import IntakeDialogueRow, RenderedDialogueRow


@dataclass(frozen=True)
class DialogueAudio:
    """A speaker's track on the dialogue's timeline (the mix for single-file sources)."""

    samples: Audio
    sr: int
    offset_s: float  # timeline time of samples[0]


def _resolve(path: str, workdir: Path) -> Path:
    p = Path(path)
    return p if p.is_absolute() else workdir / p


def _audio_files(row: DialogueRecord, workdir: Path) -> list[Path]:
    if isinstance(row, RenderedDialogueRow):
        return [_resolve(row.audio_path, workdir)]
    src = source_from_json(row.source)
    if isinstance(src, MultichannelSource | MixedMonoSource):
        return [_resolve(src.path, workdir)]
    if isinstance(src, PerSpeakerSource):
        return [_resolve(p, workdir) for _, p in sorted(src.paths.items())]
    return [_resolve(p, workdir) for p in src.paths]


def content_hash(row: DialogueRecord, workdir: Path) -> str:
    if isinstance(row, RenderedDialogueRow) and row.sha256:
        return row.sha256
    h = hashlib.sha256()
    for f in _audio_files(row, workdir):
        if not f.exists():
            raise InputError(f, "reference audio not found", reason="missing_file")
        h.update(sha256_file(f).encode())
    return h.hexdigest()


def load_track(row: DialogueRecord, speaker: str, workdir: Path) -> DialogueAudio:
    """The audio a speaker's turns are cut from (mono)."""
    if isinstance(row, RenderedDialogueRow):
        x, sr = read_frames(_resolve(row.audio_path, workdir), mono=True)
        return DialogueAudio(x, sr, 0.0)
    src = source_from_json(row.source)  # turn times are on the source's own timeline
    if isinstance(src, MultichannelSource):
        ch = src.channels.get(speaker)
        x, sr = read_frames(_resolve(src.path, workdir), channel=ch, mono=ch is None)
        return DialogueAudio(x, sr, 0.0)
    if isinstance(src, PerSpeakerSource):
        path = src.paths.get(speaker)
        if path is None:
            raise InputError(workdir / DIALOGUES, f"no audio file for speaker {speaker!r}")
        ch = src.channels.get(speaker)
        x, sr = read_frames(_resolve(path, workdir), channel=ch, mono=ch is None)
        return DialogueAudio(x, sr, 0.0)
    if isinstance(src, MixedMonoSource):
        x, sr = read_frames(_resolve(src.path, workdir), channel=src.channel, mono=True)
        return DialogueAudio(x, sr, 0.0)
    assert isinstance(src, PerTurnSource)
    pieces: list[Audio] = []
    sr = 0
    for p in src.paths:
        y, sr_i = read_frames(_resolve(p, workdir), mono=True)
        if sr and sr_i != sr:
            y = resample(y, sr_i, sr)
        sr = sr or sr_i
        pieces.append(y)
    return DialogueAudio(np.concatenate(pieces).astype(np.float32), sr, 0.0)


def _speaker_records(row: DialogueRecord) -> list[Mapping[str, Any]]:
    """Speaker dicts from the intake ``speakers`` column or ``provenance.speakers``."""
    out: list[Mapping[str, Any]] = []
    if isinstance(row, IntakeDialogueRow) and row.speakers:
        out.extend(s for s in json.loads(row.speakers) if isinstance(s, dict))
    prov = json.loads(row.provenance) if row.provenance else {}
    if isinstance(prov, dict) and isinstance(prov.get("speakers"), list):
        out.extend(s for s in prov["speakers"] if isinstance(s, dict))
    return out


def speaker_gender(row: DialogueRecord, speaker: str) -> Literal["M", "F"] | None:
    for s in _speaker_records(row):
        if s.get("id") == speaker and s.get("gender") in ("M", "F"):
            g: Literal["M", "F"] = s["gender"]
            return g
    return None


class _Owned(Protocol):
    """What :func:`person_key` reads of a dialogue record (intake or rendered)."""

    @property
    def corpus(self) -> str: ...
    @property
    def provenance(self) -> str: ...


def person_key(row: _Owned, speaker: str) -> str:
    """Who ``speaker`` of ``row`` is beyond the dialogue: the pool holds one voice per person.

    The adapter's participant map (:data:`~duetflow.records.dialogue.PARTICIPANTS` in the dialogue's
    provenance, or in a rendered row's ``input`` provenance) when it has one, else the corpus
    speaker id qualified by the corpus (corpus ids name people corpus-wide).
    """
    prov = json.loads(row.provenance) if row.provenance else {}
    for where in (prov, prov.get("input") if isinstance(prov, dict) else None):
        if isinstance(where, dict) and isinstance(where.get(PARTICIPANTS), dict):
            person = where[PARTICIPANTS].get(speaker)
            if isinstance(person, str) and person:
                return f"{row.corpus}:{person}"
    return f"{row.corpus}:{speaker}"


def human_speakers(row: DialogueRecord) -> list[str]:
    """Speakers of a dialogue that may be cloned: humans only, never a machine.

    Roles come from the manifest when it has them; a rendered HM row without roles follows the
    model's convention that speaker B (the responder a judge listens to) is the machine.
    """
    roles = {s.get("id"): s.get("role") for s in _speaker_records(row) if s.get("role")}
    speakers = [row.speaker_a, row.speaker_b]
    if roles:
        return [s for s in speakers if roles.get(s, str(Role.HUMAN)) == str(Role.HUMAN)]
    if row.category == str(Category.HM):
        return [row.speaker_a]
    return speakers
