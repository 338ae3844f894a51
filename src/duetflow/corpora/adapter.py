"""The corpus adapter protocol and the plugin registry; the helpers adapters share, re-exported.

An adapter turns a corpus *as it was downloaded* into a lazy stream of :class:`Dialogue` records
and :class:`Rejection` records. Every source item (a dialogue folder, a transcript file) yields
exactly one of the two, so ``found == kept + rejected`` holds for every ingest, and one bad item
never stops the scan.

Adapters are found through the entry-point group ``duetflow.corpora`` (see pyproject.toml), so
a corpus shipped in another package becomes available after ``pip install`` with no change here.
A plugin that fails to import is reported by :func:`registry_errors`, never raised at start-up.

The helpers live in their own modules and are re-exported here, where adapters (and the
``duetflow corpora new`` templates) import them from: :mod:`duetflow.corpora.text` (decoding
transcripts), :mod:`duetflow.corpora.source_checks` (paths, duplicate ids, audio headers, turn
timing, same-speaker overlaps) and :mod:`duetflow.corpora.channels` (which channel is which
speaker).
"""

from __future__ import annotations

import abc
import logging
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any, ClassVar

from duetflow.config import RunConfig
from duetflow.corpora.channels import ChannelDecision as ChannelDecision
from duetflow.corpora.channels import decide_channels as decide_channels
from duetflow.corpora.source_checks import SAME_SPEAKER_MERGE_MAX_S as SAME_SPEAKER_MERGE_MAX_S
from duetflow.corpora.source_checks import (
    SAME_SPEAKER_OVERLAP_TOLERANCE_S as SAME_SPEAKER_OVERLAP_TOLERANCE_S,
)
from duetflow.corpora.source_checks import DuplicateGuard as DuplicateGuard
from duetflow.corpora.source_checks import SameSpeakerFixes as SameSpeakerFixes
from duetflow.corpora.source_checks import check_turn_timing as check_turn_timing
from duetflow.corpora.source_checks import checked_audio_info as checked_audio_info
from duetflow.corpora.source_checks import duplicate_keys_hook as duplicate_keys_hook
from duetflow.corpora.source_checks import (
    merge_same_speaker_duplicates as merge_same_speaker_duplicates,
)
from duetflow.corpora.source_checks import safe_path as safe_path
from duetflow.corpora.text import DEFAULT_ENCODINGS as DEFAULT_ENCODINGS
from duetflow.corpora.text import DecodedText as DecodedText
from duetflow.corpora.text import decode_text as decode_text
from duetflow.corpora.text import decode_text_as as decode_text_as
from duetflow.corpora.text import read_bounded as read_bounded
from duetflow.corpora.text import read_text as read_text
from duetflow.corpora.text import read_text_as as read_text_as
from duetflow.errors import ConfigError, DiskFullError, InputError
from duetflow.records.dialogue import Dialogue, Rejection, Stage, dialogue_id
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
            if DiskFullError.of(e, where) is not None:  # the machine's fault, not the item's
                raise
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
