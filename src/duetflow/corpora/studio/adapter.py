"""The studio adapter: session folders → dialogues or rejections, incrementally.

For each session found by :mod:`~duetflow.corpora.studio.discovery`: parse the sidecar and
check every file it names, re-emit the stored result when nothing changed
(:mod:`~duetflow.corpora.studio.state`), else run the HM checks
(:mod:`~duetflow.corpora.studio.hm`) and take the turns from the transcript, the RTTM file, VAD
per track or diarisation (:mod:`~duetflow.corpora.studio.turns`). The package docstring has the
whole picture.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar

import duetflow
from duetflow import hashing
from duetflow.audio.io import AudioInfo
from duetflow.audio.silero import check_available as check_silero
from duetflow.corpora.adapter import (
    CorpusAdapter,
    DuplicateGuard,
    checked_audio_info,
    safe_path,
)
from duetflow.corpora.studio.asr import AsrClient, AsrError, transcribe_session
from duetflow.corpora.studio.diarize import DiarizationBackend, get_backend
from duetflow.corpora.studio.discovery import Session, walk_sessions
from duetflow.corpora.studio.hm import hm_checks
from duetflow.corpora.studio.sidecar import (
    AUDIO_SUFFIXES,
    SIDECAR,
    SessionSidecar,
    audio_source,
    load_sidecar,
    peek_session_id,
)
from duetflow.corpora.studio.state import (
    STATE_VERSION,
    SessionRecord,
    StudioState,
    cacheable,
    content_hash,
    fingerprint,
    result_of,
    session_files,
)
from duetflow.corpora.studio.transcript import (
    TranscriptTurn,
    load_transcript,
)
from duetflow.corpora.studio.turns import session_turns
from duetflow.design import SYSTEM_LANGUAGE, system_language_problem
from duetflow.errors import BackendError, InputError, cap_text, is_utf8
from duetflow.records.dialogue import (
    PARTICIPANTS,
    Category,
    DesignFields,
    Dialogue,
    Rejection,
    Role,
    Speaker,
    safe_id,
)
from duetflow.topics import TopicMatch

log = logging.getLogger(__name__)


def code_hash() -> str:
    """Hash of the code behind a session's output (so a bug fix re-processes old sessions).

    The source of every module this adapter imports inside ``duetflow``, transitively
    (:func:`duetflow.hashing.code_hash`); a module without a source file is an error.
    """
    return f"{duetflow.__version__}-{hashing.code_hash((__name__,))}"


#: Sample rates a studio recording may have (a header outside is corrupt or hostile).
MIN_SAMPLE_RATE, MAX_SAMPLE_RATE = 8000, 384_000


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
        if self.config.segment.vad == "silero":  # a missing extra is one clear error, up front
            check_silero()
        self.state = StudioState(state_dir) if (state_dir := self.state_dir()) else None
        self.counters = StudioCounters()
        self._backend: DiarizationBackend | None = None
        self._asr: AsrClient | None = None
        # the resolved root is part of the key: dialogues record absolute audio paths
        root_key = hashlib.sha256(str(self.real_root).encode()).hexdigest()[:12]
        sections = self.config.section_hash("segment", "studio", "topics", "design", "asr")
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

    def _sessions(self) -> Iterator[Session | Rejection]:
        """Every session folder (and the rejection of every folder that cannot be one)."""
        for entry in walk_sessions(self.real_root, self.name):
            yield entry if isinstance(entry, Session) else self.reject(*entry)

    def count_sources(self) -> int | None:
        return sum(1 for _ in self._sessions())

    # -- scan -----------------------------------------------------------------------------------

    def scan(self) -> Iterator[Dialogue | Rejection]:
        self.check_root()
        self.counters = StudioCounters()
        guard = DuplicateGuard()
        entries = list(self._sessions())  # paths only: a few bytes per folder
        live = {e.rel for e in entries if isinstance(e, Session)}
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

    def _claim(self, s: Session, d: Dialogue, live: set[str]) -> Dialogue | Rejection:
        """Keep dialogue ids with the folder that first produced them (see state)."""
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

    def _session_item(self, s: Session) -> Dialogue | Rejection:
        """The session's output: from the state when unchanged, else freshly processed."""
        try:
            fp = fingerprint(s.folder)
        except OSError as e:
            return self.reject(
                s.rel, InputError(s.folder, f"cannot list: {e}", reason="missing_file"), s.folder
            )
        bad = next((name for name, _, _ in fp if not is_utf8(name)), None)
        if bad is not None:  # its name cannot be hashed, recorded or shown as UTF-8 text
            err = InputError(
                s.folder / bad,
                "file name is not valid UTF-8 (undecodable bytes shown as \\xNN); rename it",
                reason="bad_name",
            )
            return self.reject(s.rel, err)
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

    def _file(self, s: Session, rel: str, what: str) -> Path:
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

    def _plan(self, s: Session) -> _Plan | Rejection:
        """Parse the sidecar and check every file it names, before anything else is read."""
        sidecar_path = s.folder / SIDECAR
        try:
            sidecar = self._file(s, SIDECAR, SIDECAR)
        except InputError as e:
            return self.reject(s.rel, e, sidecar_path)
        try:
            meta = load_sidecar(sidecar)
        except InputError as e:
            return self.reject(peek_session_id(sidecar) or s.rel, e, sidecar_path)
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

    def _process(self, s: Session, plan: _Plan | Rejection, digest: str) -> Dialogue | Rejection:
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

    def _build(self, s: Session, plan: _Plan, digest: str | None) -> Dialogue | Rejection:
        scfg = self.config.studio
        meta, files, tpath, rttm_path = plan.meta, plan.files, plan.transcript, plan.rttm
        topic = self._topic(meta, s.folder / SIDECAR)
        ids = [sp.id for sp in meta.speakers]
        transcript: list[TranscriptTurn] | None = None
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

        # the design's language limits and the HM checks need no audio: decide before the
        # turns are found (the ASR hook, when on, decodes the tracks it sends)
        system = meta.system.name if meta.system is not None else None
        problem = system_language_problem(self.config.design, meta.category, system, meta.language)
        if problem is not None:
            raise InputError(folder / SIDECAR, problem, reason=SYSTEM_LANGUAGE)
        heard, asr_why = self._asr_transcript(meta, files, transcript)
        checks = hm_checks(meta, transcript if transcript else heard, scfg)
        provenance["hm_checks"] = checks["status"]
        if heard is not None or asr_why is not None:
            provenance["hm_checks"]["source"] = "asr" if heard else "none"
            if asr_why is not None:
                provenance["hm_checks"]["why"] = f"no transcript; ASR failed: {asr_why}"
        if checks.get("rejection") is not None:
            reason, detail = checks["rejection"]
            raise InputError(tpath or folder, detail, reason=reason)
        unchecked = [k for k, v in checks["status"].items() if v == "not checked"]
        if scfg.require_checks and unchecked:
            why = provenance["hm_checks"].get("why", "no transcript")
            raise InputError(
                folder,
                f"HM checks {', '.join(unchecked)} could not run ({why}) and "
                "studio.require_checks is on",
                reason="unchecked_session",
            )

        source = audio_source(meta, files)
        found = session_turns(
            meta,
            files,
            transcript,
            tpath,
            rttm_path,
            duration,
            folder,
            self.config,
            self._diarizer,
            self._count_reads,
        )
        provenance.update(found.provenance)
        turns = found.turns
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

    def _asr_transcript(
        self,
        meta: SessionSidecar,
        files: Mapping[str, Path],
        transcript: list[TranscriptTurn] | None,
    ) -> tuple[list[TranscriptTurn] | None, str | None]:
        """What the ASR endpoint heard in an untranscribed HM session: (entries, failure)."""
        if transcript or meta.category != "HM" or not self.config.asr.base_url:
            return None, None
        if meta.layout not in ("tracks", "stereo"):
            return None, f"layout {meta.layout!r} has no track per speaker"
        if self._asr is None:
            cache = self.state_dir()
            self._asr = AsrClient(self.config.asr, cache / "asr" if cache else None)
        try:
            heard = transcribe_session(self._asr, meta, files)
        except AsrError as e:
            log.warning("ASR of %s failed: %s", meta.session_id, e)
            return None, cap_text(str(e), 300)
        if not heard:
            return None, "the endpoint heard no words"
        return heard, None

    def _count_reads(self, n: int) -> None:
        self.counters.audio_reads += n

    def _diarizer(self, name: str) -> DiarizationBackend:
        if self._backend is None:
            self._backend = get_backend(name, self.config.segment.diarization_model)
        return self._backend
