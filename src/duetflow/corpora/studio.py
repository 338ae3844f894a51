"""Studio sessions: the sidecar format, the adapter, and the HM transcript checks.

A studio root holds one folder per recorded session (at any depth) with a ``session.yaml``
sidecar (:class:`SessionSidecar`, documented with its JSON Schema in docs/studio-sessions.md)
and its audio in one of three layouts:

* ``tracks`` — one file per speaker (a mic track, the S2S system's line-out) →
  :class:`~duetflow.model.PerSpeakerSource`;
* ``stereo`` — one file, one speaker per channel → :class:`~duetflow.model.MultichannelSource`;
* ``mono`` — one mixed file → :class:`~duetflow.model.MixedMonoSource`.

Turns come, in this order of preference, from a transcript with timings (JSON), an RTTM file,
VAD per track with crosstalk attribution (:mod:`duetflow.segment`, tracks/stereo), or a
diarisation backend (:mod:`duetflow.diarize`, mono). A mono session with none of these is
rejected ``mono_without_diarization``: turns are never guessed.

Every session folder yields exactly one ``Dialogue`` or ``Rejection``. Unchanged sessions are
re-emitted from the incremental state (option ``state_dir``, by default
``<config.workdir>/studio_state/<root key>``) without reading audio
(:mod:`duetflow.studio_state`); :attr:`StudioAdapter.counters` says what was done.
"""

from __future__ import annotations

import datetime as dt
import difflib
import hashlib
import json
import logging
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

import duetflow
from duetflow.audio.io import Audio, AudioInfo, read_frames, to_mono
from duetflow.bounded_yaml import load_yaml
from duetflow.corpora.base import (
    CorpusAdapter,
    DuplicateGuard,
    check_turn_timing,
    checked_audio_info,
    merge_same_speaker_duplicates,
    read_bounded,
    read_text,
    safe_path,
)
from duetflow.diarize import DiarizationBackend, get_backend, segments_to_turns
from duetflow.errors import BackendError, ConfigError, InputError, brief_repr
from duetflow.model import (
    PARTICIPANTS,
    AudioSource,
    Category,
    DesignFields,
    Dialogue,
    MixedMonoSource,
    MultichannelSource,
    PerSpeakerSource,
    Rejection,
    Role,
    Speaker,
    Turn,
    TurnKind,
    safe_id,
)
from duetflow.pipeline import keys
from duetflow.segment import TrackSource, detect_turns_in_files
from duetflow.studio_state import (
    STATE_VERSION,
    SessionRecord,
    StudioState,
    cacheable,
    content_hash,
    fingerprint,
    result_of,
    session_files,
)
from duetflow.topics import TopicMatch

log = logging.getLogger(__name__)


def code_hash() -> str:
    """Hash of the code behind a session's output (so a bug fix re-processes old sessions).

    The source of every module this adapter imports inside ``duetflow``, transitively
    (:func:`duetflow.pipeline.keys.code_hash`); a module without a source file is an error.
    """
    return f"{duetflow.__version__}-{keys.code_hash((__name__,))}"


SIDECAR = "session.yaml"
MAX_SESSION_ID_CHARS = 128
#: Sample rates a studio recording may have (a header outside is corrupt or hostile).
MIN_SAMPLE_RATE, MAX_SAMPLE_RATE = 8000, 384_000
AUDIO_SUFFIXES = frozenset({".wav", ".flac", ".ogg", ".mp3", ".opus", ".m4a", ".aiff", ".aif"})

# --- the sidecar --------------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SpeakerEntry(_Strict):
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


class SystemInfo(_Strict):
    """The speech-to-speech system an HM session talks to."""

    name: str = Field(min_length=1)
    version: str = Field(min_length=1)


class SessionSidecar(_Strict):
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


class TranscriptTurn(_Strict):
    """One transcript entry; ``start``/``end`` (seconds) on all entries or on none."""

    speaker: str
    text: str
    start: float | None = Field(None, ge=0)
    end: float | None = Field(None, ge=0)
    kind: TurnKind = TurnKind.TURN


class Transcript(_Strict):
    """``transcript.json``: ``{"turns": [...]}`` in spoken order."""

    turns: list[TranscriptTurn]


def sidecar_json_schema() -> dict[str, Any]:
    """JSON Schema of ``session.yaml`` (published in docs/studio-sessions.md)."""
    return SessionSidecar.model_json_schema()


def _validation_error(path: Path, err: ValidationError, reason: str) -> InputError:
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
        raise _validation_error(path, e, "bad_sidecar") from None


def load_transcript(path: Path, speakers: Sequence[str]) -> list[TranscriptTurn]:
    """Parse ``transcript.json``; speakers must be the sidecar's, timings all-or-none."""
    try:
        data = json.loads(read_text(path))
    except json.JSONDecodeError as e:
        raise InputError(
            path, f"invalid JSON: {e.msg}", reason="bad_transcript", line=e.lineno
        ) from None
    except RecursionError:
        raise InputError(path, "JSON nested too deeply", reason="bad_transcript") from None
    if isinstance(data, list):
        data = {"turns": data}
    try:
        turns = Transcript.model_validate(data).turns
    except ValidationError as e:
        raise _validation_error(path, e, "bad_transcript") from None
    for i, t in enumerate(turns):
        if t.speaker not in speakers:
            raise InputError(
                path,
                f"unknown speaker {t.speaker!r}; the sidecar has {list(speakers)}",
                reason="bad_transcript",
                field=f"turns.{i}.speaker",
            )
    timed = [t.start is not None and t.end is not None for t in turns]
    partial = [t.start is not None or t.end is not None for t in turns]
    if any(partial) and not all(timed):
        i = timed.index(False)
        raise InputError(
            path,
            "timings must be given on every turn or on none",
            reason="bad_transcript",
            field=f"turns.{i}",
        )
    for i, t in enumerate(turns):
        if t.start is not None and t.end is not None and t.end <= t.start:
            raise InputError(
                path,
                f"end {t.end} is not after start {t.start}",
                reason="bad_timing",
                field=f"turns.{i}",
            )
    return turns


def load_rttm(path: Path, speakers: Sequence[str]) -> list[Turn]:
    """Turns of an RTTM file (``SPEAKER <file> <chan> <start> <dur> <NA> <NA> <spk> ...``)."""
    turns: list[Turn] = []
    for lineno, line in enumerate(read_text(path).splitlines(), 1):
        fields = line.split()
        if not fields or fields[0].startswith(("#", ";")) or fields[0] != "SPEAKER":
            continue
        if len(fields) < 8:
            raise InputError(
                path, f"expected >= 8 fields, got {len(fields)}", reason="bad_rttm", line=lineno
            )
        try:
            start, dur = float(fields[3]), float(fields[4])
        except ValueError:
            raise InputError(
                path,
                f"bad start/duration {fields[3]!r} {fields[4]!r}",
                reason="bad_rttm",
                line=lineno,
            ) from None
        spk = fields[7]
        if spk not in speakers:
            raise InputError(
                path,
                f"unknown speaker {spk!r}; the sidecar has {list(speakers)}",
                reason="bad_rttm",
                line=lineno,
            )
        if dur <= 0 or start < 0:
            raise InputError(
                path, f"bad timing start={start} duration={dur}", reason="bad_timing", line=lineno
            )
        turns.append(Turn(speaker=spk, start=round(start, 3), end=round(start + dur, 3)))
    if not turns:
        raise InputError(path, "no SPEAKER lines", reason="bad_rttm")
    return turns


# --- HM checks -----------------------------------------------------------------------------------

_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "`": "'"})
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")


def _normalise(text: str) -> str:
    return " ".join(text.translate(_APOSTROPHES).lower().split())


def find_disclosure(text: str, phrases: Mapping[str, Sequence[str]]) -> str | None:
    """The first identity-disclosure phrase in ``text`` (any language's list), or None.

    Matching is case-insensitive on whole words for alphabetic phrases; phrases with CJK
    characters are matched with all whitespace removed (CJK text has no word spaces).
    """
    norm = _normalise(text)
    squeezed = norm.replace(" ", "")
    for lang in sorted(phrases):
        for phrase in phrases[lang]:
            p = _normalise(phrase)
            if not p:
                continue
            if _CJK.search(p):
                if p.replace(" ", "") in squeezed:
                    return phrase
            elif re.search(r"(?<!\w)" + re.escape(p) + r"(?!\w)", norm):
                return phrase
    return None


_SCRIPT_RANGES: tuple[tuple[str, str], ...] = (
    ("han", r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"),
    ("kana", r"\u3040-\u30ff"),
    ("hangul", r"\uac00-\ud7af\u1100-\u11ff"),
    ("cyrillic", r"\u0400-\u04ff"),
    ("arabic", r"\u0600-\u06ff"),
    ("latin", r"A-Za-z\u00c0-\u024f"),
)
_SYLLABIC = {"han", "kana", "hangul"}  # one character = one unit; else one word = one unit
_UNIT = re.compile(
    "|".join(f"(?P<{n}>[{r}]{'' if n in _SYLLABIC else '+'})" for n, r in _SCRIPT_RANGES)
)
_EXPECTED_SCRIPTS: Mapping[str, frozenset[str]] = {
    "zh": frozenset({"han"}),
    "yue": frozenset({"han"}),
    "ja": frozenset({"han", "kana"}),
    "ko": frozenset({"hangul", "han"}),
    "ru": frozenset({"cyrillic"}),
    "uk": frozenset({"cyrillic"}),
    "bg": frozenset({"cyrillic"}),
    "ar": frozenset({"arabic"}),
    "fa": frozenset({"arabic"}),
}


def script_units(text: str) -> dict[str, int]:
    """Count writing-system units: CJK/kana/hangul characters, alphabetic words."""
    counts: dict[str, int] = {}
    for m in _UNIT.finditer(text):
        name = m.lastgroup or ""
        counts[name] = counts.get(name, 0) + 1
    return counts


def non_target_language(text: str, language: str, min_units: int = 3) -> str | None:
    """The dominant foreign script of ``text`` when most of it is not in ``language``'s script.

    A script-level check (no language model is available offline): it tells Chinese from
    English, not English from German. Text with fewer than ``min_units`` units is not judged,
    so a lone "OK" in a Chinese dialogue passes.
    """
    primary = language.split("-")[0].split("_")[0].lower()
    expected = _EXPECTED_SCRIPTS.get(primary, frozenset({"latin"}))
    units = script_units(text)
    total = sum(units.values())
    if total < min_units:
        return None
    foreign = {k: v for k, v in units.items() if k not in expected}
    if sum(foreign.values()) * 2 > total:
        return max(sorted(foreign), key=lambda k: foreign[k])
    return None


_PUNCT_SPACE = re.compile(r"[\W_]+", re.UNICODE)


def _plain(text: str) -> str:
    """Text reduced to lower-case letters/digits, one space between words (none around CJK)."""
    words = _PUNCT_SPACE.sub(" ", _normalise(text)).split()
    out = ""
    for w in words:
        if out and not (_CJK.search(out[-1]) or _CJK.search(w[0])):
            out += " "
        out += w
    return out


def opening_line_similarity(opening_line: str, first_turn: str) -> float:
    """How well a first turn says the opening line, in [0, 1] (1: same words).

    Both are reduced to lower-case words without punctuation; the turn may go on after the
    line, so the score is the better of the whole turn and its prefix of the line's length
    (difflib's ratio: 2 × matching characters / total characters).
    """
    line, turn = _plain(opening_line), _plain(first_turn)
    if not line or not turn:
        return 0.0
    whole = difflib.SequenceMatcher(None, line, turn, autojunk=False).ratio()
    prefix = difflib.SequenceMatcher(None, line, turn[: len(line)], autojunk=False).ratio()
    return max(whole, prefix)


def _snippet(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- the adapter ---------------------------------------------------------------------------------


@dataclass
class StudioCounters:
    """What one scan did; the incremental-ingest tests assert on these."""

    sessions: int = 0
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    processed: int = 0
    audio_reads: int = 0
    bytes_hashed: int = 0
    pruned: int = 0


@dataclass(frozen=True)
class _Session:
    folder: Path
    rel: str


@dataclass(frozen=True)
class _Plan:
    """A parsed sidecar and the files it names, each proven a regular file inside the folder."""

    meta: SessionSidecar
    files: Mapping[str, Path]  # speaker id -> audio file (resolved)
    transcript: Path | None
    rttm: Path | None

    def read(self) -> list[str]:
        """What the content hash reads: the sidecar and every referenced file (as named)."""
        names = [SIDECAR, *(sp.file for sp in self.meta.speakers)]
        return names + [n for n in (self.meta.transcript, self.meta.rttm) if n]


class StudioAdapter(CorpusAdapter):
    """Studio session folders → dialogues (see the module docstring)."""

    name: ClassVar[str] = "studio"
    default_options: ClassVar[Mapping[str, Any]] = {
        # incremental-ingest state: "auto" = <config.workdir>/studio_state/<root key>;
        # a path = that directory; None / false = off (every session processed every time)
        "state_dir": "auto",
        "force": False,  # re-process every session even when unchanged (state is rewritten)
    }

    def __init__(
        self,
        root: Path,
        options: Mapping[str, Any] | None = None,
        *,
        config: Any = None,
    ) -> None:
        super().__init__(root, options, config=config)
        self.state = StudioState(state_dir) if (state_dir := self.state_dir()) else None
        self.counters = StudioCounters()
        self._backend: DiarizationBackend | None = None
        # the resolved root is part of the key: dialogues record absolute audio paths
        root_key = hashlib.sha256(str(self.real_root).encode()).hexdigest()[:12]
        sections = self.config.section_hash("segment", "studio", "topics")
        self._config_hash = f"v{STATE_VERSION}-{code_hash()}-{sections}-{root_key}"

    def default_licence(self) -> str | None:
        """Studio sessions are yours: their licence comes from the config (``studio.licence``)."""
        return str(self.config.studio.licence)

    def state_dir(self) -> Path | None:
        """Where the incremental state of this root lives (None: incremental ingest is off)."""
        opt = self.options.get("state_dir")
        if not opt:
            return None
        if opt == "auto":
            key = hashlib.sha256(str(self.real_root).encode()).hexdigest()[:12]
            return Path(self.config.workdir) / "studio_state" / f"{safe_id(self.root.name)}-{key}"
        return Path(opt)

    # -- discovery ------------------------------------------------------------------------------

    def _sessions(self) -> Iterator[_Session | Rejection]:
        """Every session folder (and every folder that cannot be one) in sorted order.

        The walk runs over the resolved root, so relative roots and symlinked roots give the
        same paths. A folder with a sidecar is a session; an audio folder without one is a
        ``missing_sidecar`` rejection; a symlinked folder is never followed: one pointing out of
        the root is a ``path_escape`` rejection, one pointing inside it (scanned on its own) a
        ``symlinked_folder`` rejection when it holds a session. Nothing is silently skipped.
        """
        root = self.real_root
        unlisted: list[OSError] = []  # folders the walk could not open: counted, not skipped
        for dirpath, dirnames, filenames in os.walk(root, onerror=unlisted.append):
            yield from self._unlisted(unlisted)
            folder = Path(dirpath)
            rel = folder.relative_to(root).as_posix()
            visible = sorted(d for d in dirnames if not d.startswith("."))
            links = [d for d in visible if (folder / d).is_symlink()]
            dirnames[:] = [d for d in visible if d not in links]
            if SIDECAR in filenames:
                dirnames[:] = []  # a session folder is a leaf; links inside it are its content
                yield _Session(folder, rel if rel != "." else folder.name)
                continue
            for d in links:
                linked = self._linked_folder(folder / d)
                if linked is not None:
                    yield linked
            if not dirnames and any(Path(f).suffix.lower() in AUDIO_SUFFIXES for f in filenames):
                err = InputError(
                    folder / SIDECAR, "audio without a session.yaml", reason="missing_sidecar"
                )
                yield self.reject(rel, err, folder)
        yield from self._unlisted(unlisted)

    def _unlisted(self, errors: list[OSError]) -> Iterator[Rejection]:
        """Rejections of folders that could not be listed (permissions, vanished), once each."""
        while errors:
            e = errors.pop(0)
            where = Path(e.filename) if e.filename else self.real_root
            try:
                rel = where.relative_to(self.real_root).as_posix()
            except ValueError:
                rel = str(where)
            if where == self.real_root:
                raise ConfigError(f"corpus {self.name!r}: cannot list the root {where}: {e}")
            err = InputError(where, f"cannot list folder: {e.strerror or e}", reason="missing_file")
            yield self.reject(rel, err, where)

    def _linked_folder(self, link: Path) -> Rejection | None:
        """The rejection of a symlinked folder (None: a link inside the root to a non-session)."""
        rel = link.relative_to(self.real_root).as_posix()
        try:
            target = link.resolve(strict=True)
        except (OSError, RuntimeError) as e:
            err = InputError(link, f"cannot resolve folder link: {e}", reason="path_escape")
            return self.reject(rel, err, link)
        if target != self.real_root and self.real_root not in target.parents:
            err = InputError(
                link,
                f"links to {target}, outside the studio root {self.real_root}; refusing to "
                "follow it",
                reason="path_escape",
            )
            return self.reject(rel, err, link)
        try:
            names = os.listdir(target)
        except OSError:
            names = []
        if SIDECAR not in names and not any(
            Path(n).suffix.lower() in AUDIO_SUFFIXES for n in names
        ):
            return None
        err = InputError(
            link,
            f"links to {target.relative_to(self.real_root).as_posix() or '.'} inside the root, "
            "which is scanned on its own; a session is counted once",
            reason="symlinked_folder",
        )
        return self.reject(rel, err, link)

    def count_sources(self) -> int | None:
        return sum(1 for _ in self._sessions())

    # -- scan -----------------------------------------------------------------------------------

    def scan(self) -> Iterator[Dialogue | Rejection]:
        self.check_root()
        self.counters = StudioCounters()
        guard = DuplicateGuard()
        entries = list(self._sessions())  # paths only: a few bytes per folder
        live = {e.rel for e in entries if isinstance(e, _Session)}
        for entry in entries:
            self.counters.sessions += 1
            if isinstance(entry, Rejection):
                yield entry
                continue
            item = self._session_item(entry)
            if isinstance(item, Dialogue):
                item = self._claim(entry, item, live)
            try:
                guard.check(
                    item.item_id if isinstance(item, Rejection) else item.id, entry.folder / SIDECAR
                )
            except InputError as e:
                item = self.reject(entry.rel, e, entry.folder / SIDECAR)
            yield item
        if self.state is not None:
            self.counters.pruned = self.state.prune(live)
        log.info("studio scan of %s: %s", self.root, asdict(self.counters))

    def _claim(self, s: _Session, d: Dialogue, live: set[str]) -> Dialogue | Rejection:
        """Keep dialogue ids with the folder that first produced them (see studio_state)."""
        if self.state is None:
            return d
        owner = self.state.owner(d.id)
        if owner is not None and owner != s.rel and owner in live:
            record = self.state.get(owner)
            if (
                record is not None
                and record.result.get("kind") == "dialogue"
                and (record.result["row"].get("dialogue_id") == d.id)
            ):
                err = InputError(
                    s.folder / SIDECAR,
                    f"session_id {d.source_id!r} (dialogue {d.id}) already belongs to session "
                    f"folder {owner!r}; give this session its own id",
                    reason="duplicate_id",
                    field="session_id",
                )
                return self.reject(s.rel, err, s.folder / SIDECAR)
        if owner != s.rel:
            self.state.claim(d.id, s.rel)
        return d

    def _session_item(self, s: _Session) -> Dialogue | Rejection:
        """The session's output: from the state when unchanged, else freshly processed."""
        try:
            fp = fingerprint(s.folder)
        except OSError as e:
            return self.reject(
                s.rel, InputError(s.folder, f"cannot list: {e}", reason="missing_file"), s.folder
            )
        record = self.state.get(s.rel) if self.state is not None else None
        force = bool(self.options.get("force"))
        fresh = record is not None and record.config_hash == self._config_hash and not force
        if record is not None and fresh and record.fingerprint == fp:
            self.counters.unchanged += 1
            return record.item()
        plan = self._plan(s)
        digest, nbytes = content_hash(
            s.folder, plan.read() if isinstance(plan, _Plan) else [SIDECAR]
        )
        self.counters.bytes_hashed += nbytes
        if record is not None and fresh and record.content_hash == digest:
            self.counters.unchanged += 1
            assert self.state is not None  # a record comes from the state
            self.state.put(SessionRecord(s.rel, digest, self._config_hash, fp, record.result))
            return record.item()
        if record is None:
            self.counters.new += 1
        else:
            self.counters.changed += 1
        self.counters.processed += 1
        item = self._process(s, plan, digest)
        if self.state is not None:
            if cacheable(item):
                self.state.put(SessionRecord(s.rel, digest, self._config_hash, fp, result_of(item)))
            else:
                self.state.forget(s.rel)
        return item

    # -- one session ----------------------------------------------------------------------------

    def _file(self, s: _Session, rel: str, what: str) -> Path:
        """``rel`` (from the sidecar) resolved: a regular file inside the session folder."""
        p = safe_path(self.real_root, s.folder / rel)
        folder = s.folder.resolve()
        if folder not in p.parents:
            raise InputError(
                s.folder / rel, f"{what} must be inside the session folder", reason="path_escape"
            )
        if not p.exists():
            raise InputError(s.folder / rel, f"{what} not found", reason="missing_file")
        if not p.is_file():
            raise InputError(
                s.folder / rel, f"{what} is not a regular file (a folder, FIFO or device)",
                reason="bad_file",
            )  # fmt: skip
        return p

    def _plan(self, s: _Session) -> _Plan | Rejection:
        """Parse the sidecar and check every file it names, before anything else is read."""
        sidecar_path = s.folder / SIDECAR
        try:
            sidecar = self._file(s, SIDECAR, SIDECAR)
        except InputError as e:
            return self.reject(s.rel, e, sidecar_path)
        try:
            meta = load_sidecar(sidecar)
        except InputError as e:
            return self.reject(_peek_session_id(sidecar) or s.rel, e, sidecar_path)
        try:
            files = {
                sp.id: self._file(s, sp.file, f"audio file of speaker {sp.id!r}")
                for sp in meta.speakers
            }
            tpath = self._file(s, meta.transcript, "transcript") if meta.transcript else None
            rttm = self._file(s, meta.rttm, "rttm") if meta.rttm else None
            referenced = {*files.values(), tpath, rttm}
            for p in session_files(s.folder):
                if p.suffix.lower() not in AUDIO_SUFFIXES:
                    continue
                try:
                    real: Path | None = p.resolve()
                except (OSError, RuntimeError):
                    real = None
                if real not in referenced:
                    raise InputError(
                        p, "audio file not referenced by session.yaml", reason="unknown_file"
                    )
        except InputError as e:
            return self.reject(meta.session_id, e)
        return _Plan(meta, files, tpath, rttm)

    def _read(self, path: Path, channel: int | None) -> tuple[Audio, int]:
        """A whole track (mono): only for a diarisation backend, which needs the recording."""
        self.counters.audio_reads += 1
        x, sr = read_frames(path, channel=channel, mono=channel is None)
        return to_mono(x), sr

    def _process(self, s: _Session, plan: _Plan | Rejection, digest: str) -> Dialogue | Rejection:
        if isinstance(plan, Rejection):
            return plan
        meta = plan.meta
        try:
            return self._build(s, plan, digest)
        except InputError as e:
            return self.reject(meta.session_id, e)
        except BackendError as e:
            err = InputError(
                s.folder / SIDECAR, f"diarisation failed: {e}", reason="diarization_failed"
            )
            return self.reject(meta.session_id, err)
        except Exception as e:  # an adapter bug must not stop the scan: one rejection
            log.exception("studio: unexpected error on %s", s.rel)
            err = InputError(s.folder, f"{type(e).__name__}: {e}", reason="internal_error")
            return self.reject(meta.session_id, err, s.folder)

    def _build(self, s: _Session, plan: _Plan, digest: str | None) -> Dialogue | Rejection:
        scfg = self.config.studio
        meta, files, tpath, rttm_path = plan.meta, plan.files, plan.transcript, plan.rttm
        topic = self._topic(meta, s.folder / SIDECAR)
        ids = [sp.id for sp in meta.speakers]
        transcript: list[TranscriptTurn] | None = None
        given: list[Turn] | None = None
        turn_source = ""
        if tpath is not None:
            transcript = load_transcript(tpath, ids)
        folder = s.folder.resolve()

        infos: dict[Path, AudioInfo] = {
            p: checked_audio_info(p) for p in sorted(set(files.values()))
        }
        for p, info in infos.items():  # a 1 Hz header would make resampling 16,000x the data
            if not MIN_SAMPLE_RATE <= info.sample_rate <= MAX_SAMPLE_RATE:
                raise InputError(
                    p,
                    f"sample rate {info.sample_rate} Hz outside {MIN_SAMPLE_RATE}.."
                    f"{MAX_SAMPLE_RATE} Hz",
                    reason="wrong_sample_rate",
                )
        for sp in meta.speakers:
            info = infos[files[sp.id]]
            if sp.channel is not None and sp.channel >= info.channels:
                raise InputError(
                    files[sp.id],
                    f"speaker {sp.id!r} on channel {sp.channel}, file has {info.channels}",
                    reason="wrong_channels",
                    field=f"speakers.{ids.index(sp.id)}.channel",
                )
        durations = [i.duration_s for i in infos.values()]
        duration = max(durations)
        if max(durations) - min(durations) > scfg.max_track_length_diff_s:
            raise InputError(
                folder,
                f"track lengths differ by {max(durations) - min(durations):.2f} s "
                f"(> studio.max_track_length_diff_s = {scfg.max_track_length_diff_s})",
                reason="track_length_mismatch",
            )

        provenance: dict[str, Any] = {
            "session_folder": s.rel,
            "date": meta.date.isoformat(),
            "strategy": meta.strategy,
            "opening_line": meta.opening_line,
            "layout": meta.layout,
            "system": meta.system.model_dump() if meta.system else None,
            # sidecar ids ("user", "system") name roles within a session, not people
            PARTICIPANTS: {sp.id: sp.person(meta.session_id) for sp in meta.speakers},
        }
        if digest is not None:
            provenance["content_hash"] = digest

        # HM checks need only the transcript: decide before any audio is decoded
        checks = self._hm_checks(meta, transcript)
        provenance["hm_checks"] = checks["status"]
        if checks.get("rejection") is not None:
            reason, detail = checks["rejection"]
            raise InputError(tpath, detail, reason=reason)

        source = self._source(meta, files)
        if transcript is not None and transcript and transcript[0].start is not None:
            given = [
                Turn(
                    t.speaker,
                    round(float(t.start or 0), 3),
                    round(float(t.end or 0), 3),
                    t.text,
                    t.kind,
                )
                for t in transcript
            ]
            turn_source = "transcript"
        elif rttm_path is not None:
            given = load_rttm(rttm_path, ids)
            turn_source = "rttm"
        if given is not None:
            timing_file = rttm_path if turn_source == "rttm" else tpath
            assert timing_file is not None  # given timings come from one of the two files
            for t in given:
                if t.end <= t.start:
                    raise InputError(
                        timing_file,
                        f"turn {t.speaker} {t.start}..{t.end} has no duration",
                        reason="bad_timing",
                    )
            check_turn_timing(given, duration, timing_file, scfg.timing_tolerance_s)
            given, fixes = merge_same_speaker_duplicates(given, timing_file)
            provenance.update(fixes.provenance())
            turns = sorted(given, key=lambda t: (t.start, ids.index(t.speaker)))
        elif meta.layout in ("tracks", "stereo"):
            # streamed block by block: memory does not grow with the session's length
            self.counters.audio_reads += len(meta.speakers)
            result = detect_turns_in_files(
                {sp.id: TrackSource(files[sp.id], sp.channel) for sp in meta.speakers},
                self.config.segment,
            )
            turns = list(result.turns)
            turn_source = "vad"
            provenance["segmentation"] = result.provenance()
        else:
            backend_name = self.config.segment.diarization_backend
            if not backend_name:
                raise InputError(
                    files[ids[0]],
                    "mono mix without transcript timings or RTTM and no diarisation backend "
                    "(set segment.diarization_backend, e.g. 'pyannote')",
                    reason="mono_without_diarization",
                )
            backend = self._diarizer(backend_name)
            x, sr = self._read(files[ids[0]], meta.speakers[0].channel)
            segs = backend.diarize(x, sr, num_speakers=2)
            cfg = self.config.segment
            try:
                turns, dinfo = segments_to_turns(
                    segs,
                    ids,
                    min_speech_s=cfg.min_speech_ms / 1000,
                    min_silence_s=cfg.min_silence_ms / 1000,
                )
            except ValueError as e:
                raise InputError(files[ids[0]], str(e), reason="diarization_speakers") from None
            turn_source = f"diarization:{backend_name}"
            provenance["diarization"] = dinfo
        if not turns:
            raise InputError(folder, "no speech found in any track", reason="no_speech")
        provenance["turn_source"] = turn_source

        if transcript is not None and turn_source != "transcript":
            turns, aligned = _attach_text(turns, transcript, ids)
            provenance["transcript_alignment"] = aligned
        lang = meta.language
        speakers = tuple(
            Speaker(sp.id, Role.MACHINE if sp.role == "machine" else Role.HUMAN, sp.gender, lang)
            for sp in meta.speakers
        )
        return Dialogue(
            id=self.dialogue_id(meta.session_id),
            corpus=self.name,
            source_id=meta.session_id,
            category=Category(meta.category),
            language=lang,
            topic=topic.topic,
            speakers=(speakers[0], speakers[1]),
            turns=tuple(turns),
            source=source,
            duration_s=round(duration, 6),
            provenance=provenance,
            design=DesignFields(
                source_topic=topic.source_topic,
                system_name=meta.system.name if meta.system else None,
                system_version=meta.system.version if meta.system else None,
                strategy=meta.strategy,
                opening_line=meta.opening_line,
            ),
        )

    def _topic(self, meta: SessionSidecar, sidecar: Path) -> TopicMatch:
        """The sidecar topic, which must name a taxonomy topic (or a configured alias)."""
        match = self.map_topic(meta.topic)
        if meta.topic.strip() and not match.mapped:
            cfg = self.config.topics
            raise InputError(
                sidecar,
                f"topic {meta.topic!r} is not in topics.taxonomy {cfg.taxonomy} "
                f"(or topics.aliases.{self.name})",
                reason="unknown_topic",
                field="topic",
            )
        return match

    def _source(self, meta: SessionSidecar, files: Mapping[str, Path]) -> AudioSource:
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

    def _diarizer(self, name: str) -> DiarizationBackend:
        if self._backend is None:
            self._backend = get_backend(name, self.config.segment.diarization_model)
        return self._backend

    def _hm_checks(
        self, meta: SessionSidecar, transcript: list[TranscriptTurn] | None
    ) -> dict[str, Any]:
        """Identity disclosure, non-target language and the opening line on an HM transcript.

        Status values are ``passed``, ``failed``, ``not checked`` (no transcript: never
        ``passed``) and ``not applicable`` (HH sessions).
        """
        if meta.category != "HM":
            return {
                "status": {
                    "identity_disclosure": "not applicable",
                    "target_language": "not applicable",
                    "opening_line": "not applicable",
                }
            }
        if not transcript:
            return {
                "status": {
                    "identity_disclosure": "not checked",
                    "target_language": "not checked",
                    "opening_line": "not checked",
                    "why": "no transcript",
                }
            }
        scfg = self.config.studio
        machines = {sp.id for sp in meta.speakers if sp.role == "machine"}
        status: dict[str, Any] = {
            "identity_disclosure": "passed",
            "target_language": "passed",
            "opening_line": "passed",
        }
        rejection: tuple[str, str] | None = None
        first = next(
            (t for t in transcript if t.speaker not in machines and t.kind is TurnKind.TURN),
            None,
        )
        score = opening_line_similarity(meta.opening_line, first.text if first else "")
        status["opening_line_similarity"] = round(score, 3)
        opening: tuple[str, str] | None = None
        if score < scfg.opening_line_min_similarity:
            status["opening_line"] = "failed"
            opening = (
                "opening_line_mismatch",
                f"the human's first turn {_snippet(first.text if first else '')!r} does not say "
                f"the opening line {_snippet(meta.opening_line)!r} (similarity {score:.2f} < "
                f"studio.opening_line_min_similarity {scfg.opening_line_min_similarity})",
            )
        for i, t in enumerate(transcript):
            if t.speaker in machines:
                phrase = find_disclosure(t.text, scfg.disclosure_phrases)
                if phrase is not None:
                    status["identity_disclosure"] = "failed"
                    rejection = rejection or (
                        "identity_disclosure",
                        f"identity disclosure {phrase!r} in turn {i} by {t.speaker}: "
                        f"{_snippet(t.text)!r}",
                    )
            script = non_target_language(t.text, meta.language, scfg.non_target_min_units)
            if script is not None:
                status["target_language"] = "failed"
                rejection = rejection or (
                    "non_target_language",
                    f"turn {i} by {t.speaker} is in {script} script, session language "
                    f"{meta.language!r}: {_snippet(t.text)!r}",
                )
        return {"status": status, "rejection": rejection or opening}


def _peek_session_id(path: Path) -> str | None:
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


def _attach_text(
    turns: Sequence[Turn], transcript: Sequence[TranscriptTurn], speakers: Sequence[str]
) -> tuple[list[Turn], str]:
    """Give detected turns their transcript text when each speaker's counts agree (in order)."""
    by_spk = {s: [t for t in transcript if t.speaker == s] for s in speakers}
    counts = {s: sum(1 for t in turns if t.speaker == s) for s in speakers}
    if any(len(by_spk[s]) != counts[s] for s in speakers):
        detail = ", ".join(
            f"{s}: {counts[s]} detected / {len(by_spk[s])} in transcript" for s in speakers
        )
        return list(turns), f"not aligned ({detail})"
    pos = dict.fromkeys(speakers, 0)
    out = []
    for t in turns:
        entry = by_spk[t.speaker][pos[t.speaker]]
        pos[t.speaker] += 1
        out.append(Turn(t.speaker, t.start, t.end, entry.text, entry.kind, t.labels))
    return out, "aligned by order"
