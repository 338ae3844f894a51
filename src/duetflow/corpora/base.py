"""The corpus adapter protocol, the helpers every adapter shares, and the plugin registry.

An adapter turns a corpus *as it was downloaded* into a lazy stream of :class:`Dialogue` records
and :class:`Rejection` records. Every source item (a dialogue folder, a transcript file) yields
exactly one of the two, so ``found == kept + rejected`` holds for every ingest, and one bad item
never stops the scan.

Adapters are found through the entry-point group ``duetflow.corpora`` (see pyproject.toml), so
a corpus shipped in another package becomes available after ``pip install`` with no change here.
A plugin that fails to import is reported by :func:`registry_errors`, never raised at start-up.
"""

from __future__ import annotations

import abc
import logging
import math
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from duetflow.audio.io import AudioInfo, audio_info, read_frames
from duetflow.config import RunConfig

# text helpers live in corpora/text.py; re-exported here, where adapters import them from
from duetflow.corpora.text import DEFAULT_ENCODINGS as DEFAULT_ENCODINGS
from duetflow.corpora.text import DecodedText as DecodedText
from duetflow.corpora.text import decode_text as decode_text
from duetflow.corpora.text import decode_text_as as decode_text_as
from duetflow.corpora.text import read_bounded as read_bounded
from duetflow.corpora.text import read_text as read_text
from duetflow.corpora.text import read_text_as as read_text_as
from duetflow.errors import ConfigError, InputError
from duetflow.model import Dialogue, Rejection, Stage, Turn, TurnKind, dialogue_id
from duetflow.topics import TopicMatch

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "duetflow.corpora"


# --- the protocol -------------------------------------------------------------------------------


class CorpusAdapter(abc.ABC):
    """Streams one corpus root as ``Dialogue | Rejection`` records.

    Subclasses set :attr:`name` (the entry-point name) and implement :meth:`scan`. ``options``
    are the adapter-specific settings from the run config (``corpora[].options``); unknown
    options are an error so a typo never silently falls back to a default.
    """

    name: ClassVar[str]
    #: options this adapter understands, with their defaults
    default_options: ClassVar[Mapping[str, Any]] = {}
    #: the source's licence: an SPDX id (``CC-BY-SA-4.0``) or a named licence
    #: (``LicenseRef-IEMOCAP-EULA``); None means the run config must declare it
    #: (``corpora[].licence``). See :mod:`duetflow.licences`.
    licence: ClassVar[str | None] = None

    def __init__(
        self,
        root: Path,
        options: Mapping[str, Any] | None = None,
        *,
        config: RunConfig | None = None,
    ) -> None:
        # absolute once, so every path derived from it compares correctly whatever the cwd
        self.root = Path(os.path.abspath(root))
        self.config = config if config is not None else RunConfig()
        opts = dict(options or {})
        unknown = sorted(set(opts) - set(self.default_options))
        if unknown:
            raise ConfigError(
                f"corpus {self.name!r}: unknown option(s) {unknown}; "
                f"known: {sorted(self.default_options)}"
            )
        self.options: dict[str, Any] = {**self.default_options, **opts}
        self._real_root: Path | None = None

    # -- to implement ----------------------------------------------------------------------------

    @abc.abstractmethod
    def scan(self) -> Iterator[Dialogue | Rejection]:
        """Yield one record per source item, lazily, never raising for one bad item."""

    def count_sources(self) -> int | None:
        """Number of source items :meth:`scan` will yield, when cheap to know (else None)."""
        return None

    def default_licence(self) -> str | None:
        """The licence of this source when the config does not override it (the class's)."""
        return type(self).licence

    def resolve_licence(self, override: str | None = None) -> str:
        """The licence every dialogue of this scan carries: ``override`` (the config's), else
        :meth:`default_licence`; ConfigError when neither declares one."""
        from duetflow.licences import check_licence

        value = override or self.default_licence()
        if not value:
            raise ConfigError(
                f"corpus {self.name!r}: no licence declared; set `licence` on the adapter "
                "class or `corpora[].licence` in the run config (an SPDX id such as "
                "CC-BY-4.0, or LicenseRef-<name> for a named EULA)"
            )
        return check_licence(value, f"corpus {self.name!r} licence")

    # -- helpers for subclasses ------------------------------------------------------------------

    @property
    def real_root(self) -> Path:
        """The root with symlinks resolved; what every path must stay inside."""
        if self._real_root is None:
            self._real_root = self.root.resolve()
        return self._real_root

    def check_root(self, *required: str) -> None:
        """Raise ConfigError when the root (or a required entry in it) does not exist.

        A missing root is a failure of the run, not of an item: nothing can be counted.
        """
        if not self.root.is_dir():
            raise ConfigError(f"corpus {self.name!r}: root {self.root} is not a directory")
        for rel in required:
            if not (self.root / rel).exists():
                raise ConfigError(
                    f"corpus {self.name!r}: {self.root / rel} not found; is {self.root} the "
                    f"corpus root? (see docs/adding-a-corpus.md for the expected layouts)"
                )

    def path(self, *parts: str | os.PathLike[str]) -> Path:
        """A path inside the root; refuses anything that resolves outside it (``path_escape``)."""
        return safe_path(self.real_root, Path(*parts))

    def dialogue_id(self, original_id: str) -> str:
        return dialogue_id(self.name, original_id)

    def map_topic(self, label: str | int | None) -> TopicMatch:
        """The source's own topic label mapped into the taxonomy (``topics`` config section)."""
        return self.config.topics.mapper(self.name).map(label)

    def reject(
        self, original_id: str, error: InputError, source_path: str | Path | None = None
    ) -> Rejection:
        """Quarantine one item; the detail is the error message (file, line, cause)."""
        where = source_path if source_path is not None else error.path
        log.info("rejecting %s/%s: %s", self.name, original_id, error)
        return Rejection(
            item_id=self.dialogue_id(original_id),
            stage=Stage.INGEST,
            reason=error.reason,
            detail=str(error),
            corpus=self.name,
            source_path=self.relpath(where) if where is not None else "",
        )

    def guarded(
        self, original_id: str, where: str | Path, build: Callable[[], Dialogue]
    ) -> Dialogue | Rejection:
        """Build one dialogue; any failure becomes that item's Rejection, never a crash.

        ``InputError`` keeps its reason code. Anything else is an adapter bug, logged with its
        traceback and recorded as ``internal_error`` so the scan still accounts for the item.
        """
        try:
            return build()
        except InputError as e:
            return self.reject(original_id, e)
        except Exception as e:
            log.exception("%s: unexpected error on %s", self.name, original_id)
            err = InputError(where, f"{type(e).__name__}: {e}", reason="internal_error")
            return self.reject(original_id, err, where)

    def relpath(self, path: str | Path) -> str:
        """``path`` relative to the corpus root when inside it (for readable rejections)."""
        p = Path(path)
        for base in (self.root, self.real_root):
            try:
                return p.relative_to(base).as_posix()
            except ValueError:
                continue
        return str(p)


# --- safe paths ---------------------------------------------------------------------------------


def safe_path(root: Path, candidate: Path) -> Path:
    """Resolve ``candidate`` (relative to ``root`` unless absolute) and prove it stays in root.

    Symlinks are allowed only when their target is inside the root as well; anything resolving
    elsewhere raises InputError ``path_escape`` and is never opened. ``root`` must already be
    resolved.
    """
    joined = candidate if candidate.is_absolute() else root / candidate
    try:
        resolved = joined.resolve()
    except (OSError, RuntimeError) as e:  # symlink loop
        raise InputError(joined, f"cannot resolve path: {e}", reason="path_escape") from None
    if resolved != root and root not in resolved.parents:
        raise InputError(
            joined,
            f"resolves to {os.path.relpath(resolved, root)}, outside the corpus root {root}; "
            "refusing to follow it",
            reason="path_escape",
        )
    return resolved


# --- duplicate ids ------------------------------------------------------------------------------


class DuplicateGuard:
    """Remembers ids seen in one scan; the second occurrence raises ``duplicate_id``.

    Holds only id strings, so memory is a few bytes per item, not per sample.
    """

    def __init__(self) -> None:
        self._seen: dict[str, str] = {}

    def check(self, item_id: str, where: str | Path) -> None:
        first = self._seen.get(item_id)
        if first is not None:
            raise InputError(
                where, f"duplicate id {item_id!r} (first seen in {first})", reason="duplicate_id"
            )
        self._seen[item_id] = str(where)


def duplicate_keys_hook(path: str | Path) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    """``json.loads(object_pairs_hook=...)`` that keeps duplicate keys visible.

    A duplicated key is stored under ``"<key>\\x00dup<n>"`` so the adapter can reject that item
    as ``duplicate_id`` instead of JSON silently keeping the last one.
    """

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in pairs:
            key, n = k, 1
            while key in out:
                key = f"{k}\x00dup{n}"
                n += 1
            out[key] = v
        return out

    return hook


# --- audio checks -------------------------------------------------------------------------------


def checked_audio_info(
    path: Path,
    *,
    sample_rate: int | None = None,
    channels: Iterable[int] | None = None,
) -> AudioInfo:
    """Header facts of an audio file, verified against the corpus spec.

    Raises InputError with ``missing_file`` / ``bad_audio`` / ``truncated_audio`` /
    ``wrong_sample_rate`` / ``wrong_channels``.
    """
    info = audio_info(path)  # raises missing_file / bad_audio / truncated_audio
    if sample_rate is not None and info.sample_rate != sample_rate:
        raise InputError(
            path,
            f"sample rate {info.sample_rate} Hz, the corpus spec says {sample_rate} Hz",
            reason="wrong_sample_rate",
        )
    if channels is not None:
        allowed = tuple(channels)
        if info.channels not in allowed:
            raise InputError(
                path,
                f"{info.channels} channel(s), the corpus spec allows {list(allowed)}",
                reason="wrong_channels",
            )
    return info


def check_turn_timing(turns: Sequence[Turn], duration_s: float, path: Path, slack_s: float) -> None:
    """Every turn must have start < end and end within the audio (plus ``slack_s``)."""
    for i, t in enumerate(turns):
        if not (math.isfinite(t.start) and math.isfinite(t.end)) or t.start < 0:
            raise InputError(path, f"turn {i}: bad times {t.start}..{t.end}", reason="bad_timing")
        if t.end > duration_s + slack_s:
            raise InputError(
                path,
                f"turn {i} ends at {t.end:.3f} s, after the audio's end ({duration_s:.3f} s)",
                reason="bad_timing",
            )


#: Two turns of one speaker may overlap by this much (timestamp rounding) before it counts.
#: Same-speaker annotations overlapping by at most this much are one stretch of talk.
SAME_SPEAKER_OVERLAP_TOLERANCE_S = 0.01
#: A larger same-speaker overlap is merged into one turn (union of the spans, texts in order)
#: while it is at most this long and at most half of the shorter turn: segmentation slack of one
#: utterance, as annotators leave it. Beyond that the two lines say different things over the
#: same audio (a pasted or shifted line): the dialogue is rejected ``overlapping_turns``.
SAME_SPEAKER_MERGE_MAX_S = 0.5


@dataclass(frozen=True)
class SameSpeakerFixes:
    """What :func:`merge_same_speaker_duplicates` did to a dialogue's turns."""

    copies: int = 0  # exact copies of a turn dropped
    merged: int = 0  # slightly overlapping same-speaker turns joined into one

    def provenance(self) -> dict[str, int]:
        """The non-zero counts, under their provenance keys."""
        keys = {"merged_duplicate_turns": self.copies, "merged_overlapping_turns": self.merged}
        return {k: v for k, v in keys.items() if v}


def merge_same_speaker_duplicates(
    turns: Sequence[Turn], path: Path, tolerance_s: float = SAME_SPEAKER_OVERLAP_TOLERANCE_S
) -> tuple[list[Turn], SameSpeakerFixes]:
    """Drop exact copies of a turn, join slightly overlapping same-speaker turns, refuse the rest.

    One speaker cannot say two things at once, and rendering cuts each turn from the source, so
    an annotation line pasted twice would be heard twice, back to back. A copy (same speaker,
    start, end and text) is dropped. Two turns of one speaker that overlap by more than
    ``tolerance_s`` but at most :data:`SAME_SPEAKER_MERGE_MAX_S` and half of the shorter one
    are one utterance segmented with slack: they become one turn over the union of their spans,
    texts joined in time order. Any larger overlap raises InputError ``overlapping_turns``
    naming both. Non-speech turns (laughter, breathing) may overlap speech. Returns (turns in
    their given order, what was fixed).
    """
    seen: set[tuple[str, float, float, str, str]] = set()
    kept: list[Turn] = []
    copies = 0
    for t in turns:
        key = (t.speaker, t.start, t.end, t.text, str(t.kind))
        if key in seen:
            copies += 1
            continue
        seen.add(key)
        kept.append(t)
    by_speaker: dict[str, list[int]] = {}
    for i, t in enumerate(kept):
        if t.kind is not TurnKind.NONSPEECH:
            by_speaker.setdefault(t.speaker, []).append(i)
    absorbed: dict[int, int] = {}  # turn index -> index of the turn it was joined into
    joined: dict[int, Turn] = {}
    for spk, own in by_speaker.items():
        own.sort(key=lambda i: (kept[i].start, kept[i].end))
        head = own[0]
        for j in own[1:]:
            a, b = joined.get(head, kept[head]), kept[j]
            overlap = min(a.end, b.end) - b.start
            if overlap <= tolerance_s:
                head = j
                continue
            shorter = min(kept[head].duration, b.duration)
            if overlap > SAME_SPEAKER_MERGE_MAX_S or overlap > shorter / 2:
                raise InputError(
                    path,
                    f"turns {head} ({a.start}-{a.end}) and {j} ({b.start}-{b.end}) of speaker "
                    f"{spk} overlap by {overlap:.3f} s; one speaker cannot say two things at once",
                    reason="overlapping_turns",
                )
            text = " ".join(x for x in (a.text.strip(), b.text.strip()) if x)
            joined[head] = replace(a, end=max(a.end, b.end), text=text)
            absorbed[j] = head
    out = [joined.get(i, t) for i, t in enumerate(kept) if i not in absorbed]
    return out, SameSpeakerFixes(copies=copies, merged=len(absorbed))


@dataclass(frozen=True)
class ChannelDecision:
    """Which channel carries which speaker, decided from energy, or None (mixed)."""

    channels: dict[str, int] | None
    score_db: float  # how clearly the channels separate the speakers (0 = not at all)
    energy_db: dict[str, list[float]]  # speaker -> per-channel mean energy (dBFS)


def decide_channels(
    path: Path,
    info: AudioInfo,
    turns_by_speaker: Mapping[str, Sequence[tuple[float, float]]],
    *,
    min_separation_db: float = 6.0,
    max_seconds_per_speaker: float = 60.0,
) -> ChannelDecision:
    """Map two speakers to two channels by their energy during their own annotated turns.

    Speaker ``s`` belongs to the channel where its turns are loudest relative to the other
    channel. The mapping is accepted only when both speakers agree (distinct channels) and the
    separation (mean of both speakers' channel energy differences) is at least
    ``min_separation_db``; otherwise the file is treated as mixed and ``channels`` is None.
    Only turn audio is read (seeking), at most ``max_seconds_per_speaker`` per speaker.
    """
    speakers = list(turns_by_speaker)
    energy: dict[str, list[float]] = {}
    for spk in speakers:
        acc = np.zeros(info.channels, dtype=np.float64)
        n = 0
        budget = max_seconds_per_speaker
        for start, end in turns_by_speaker[spk]:
            if budget <= 0:
                break
            end = min(end, start + budget)
            a = int(start * info.sample_rate)
            b = min(int(end * info.sample_rate), info.frames)
            if b <= a:
                continue
            data, _ = read_frames(path, a, b)
            data2 = data.reshape(len(data), -1).astype(np.float64)
            acc += np.sum(data2**2, axis=0)
            n += data2.shape[0]
            budget -= end - start
        mean = acc / max(n, 1)
        energy[spk] = [10 * math.log10(v) if v > 0 else -200.0 for v in mean]
    if len(speakers) != 2 or info.channels != 2:
        return ChannelDecision(None, 0.0, energy)
    s1, s2 = speakers
    d1 = energy[s1][0] - energy[s1][1]  # >0: s1 louder on channel 0
    d2 = energy[s2][1] - energy[s2][0]  # >0: s2 louder on channel 1
    if d1 > 0 and d2 > 0:
        mapping, score = {s1: 0, s2: 1}, (d1 + d2) / 2
    elif d1 < 0 and d2 < 0:
        mapping, score = {s1: 1, s2: 0}, -(d1 + d2) / 2
    else:
        return ChannelDecision(None, 0.0, energy)
    if score < min_separation_db:
        return ChannelDecision(None, score, energy)
    return ChannelDecision(mapping, score, energy)


# --- registry -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RegistryEntry:
    """One entry point of the ``duetflow.corpora`` group, loaded or not."""

    name: str
    target: str
    adapter: type[CorpusAdapter] | None
    error: str | None


def _entry_points() -> list[EntryPoint]:
    return sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)


@lru_cache(maxsize=1)
def _load_all() -> tuple[RegistryEntry, ...]:
    out: list[RegistryEntry] = []
    for ep in _entry_points():
        try:
            obj = ep.load()
        except Exception as e:  # a broken plugin must not take the registry down
            log.warning("corpus adapter %s (%s) failed to load: %s", ep.name, ep.value, e)
            out.append(RegistryEntry(ep.name, ep.value, None, f"{type(e).__name__}: {e}"))
            continue
        if not (isinstance(obj, type) and issubclass(obj, CorpusAdapter)):
            msg = f"{ep.value} is not a CorpusAdapter subclass"
            out.append(RegistryEntry(ep.name, ep.value, None, msg))
            continue
        out.append(RegistryEntry(ep.name, ep.value, obj, None))
    return tuple(out)


def registry_entries(refresh: bool = False) -> tuple[RegistryEntry, ...]:
    """Every registered adapter with its load status (for ``duetflow corpora list``)."""
    if refresh:
        _load_all.cache_clear()
    return _load_all()


def available_adapters(refresh: bool = False) -> dict[str, type[CorpusAdapter]]:
    """Adapters that loaded, by entry-point name."""
    return {e.name: e.adapter for e in registry_entries(refresh) if e.adapter is not None}


def registry_errors(refresh: bool = False) -> dict[str, str]:
    """Entry points that failed to load, with the error (name -> message)."""
    return {e.name: e.error for e in registry_entries(refresh) if e.error is not None}


def get_adapter(name: str) -> type[CorpusAdapter]:
    """The adapter class registered as ``name``; ConfigError lists the available ones."""
    adapters = available_adapters()
    if name in adapters:
        return adapters[name]
    broken = registry_errors()
    if name in broken:
        raise ConfigError(
            f"corpus adapter {name!r} is registered but failed to load: {broken[name]}"
        )
    raise ConfigError(
        f"unknown corpus {name!r}; available: {', '.join(sorted(adapters)) or '(none)'}"
    )
