"""Cache keys by construction: the code a stage imports, its config sections, its inputs.

A stage's key (:func:`stage_key`) hashes three things and nothing else:

* **its code**: :func:`duetflow.hashing.code_hash` of its entry modules, the source of every
  module they import, transitively, inside the ``duetflow`` package. Plugins named by the
  config (a corpus adapter, a TTS backend, a filter from another package) are added by the
  stage as extra entry modules.
* **its config sections**: only those the stage declares (:mod:`duetflow.pipeline.stages`), and the
  stage's work functions receive a config in which every other section raises on access
  (:func:`scoped_config`), so a section it reads is a section its key covers.
* **its inputs**: fingerprints of the data it reads (:func:`tree_fingerprint`,
  :func:`dialogues_fingerprint`, :func:`duetflow.hashing.files_fingerprint`).

Where a run happens (work directory, store, task runner, shard size) is in none of them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from duetflow.errors import ConfigError

if TYPE_CHECKING:
    from duetflow.config import RunConfig
    from duetflow.records.dialogue import Dialogue

# --- config sections ----------------------------------------------------------------------------


class _Undeclared:
    """Stands in for a config section a stage did not declare: any use of it raises."""

    __slots__ = ("_section", "_stage")

    def __init__(self, stage: str, section: str) -> None:
        object.__setattr__(self, "_stage", stage)
        object.__setattr__(self, "_section", section)

    def _fail(self, *_: Any, **__: Any) -> NoReturn:
        stage = object.__getattribute__(self, "_stage")
        section = object.__getattribute__(self, "_section")
        raise ConfigError(
            f"stage {stage!r} read config section {section!r}, which it does not declare: "
            "add it to the stage's sections in duetflow.pipeline.stages "
            "(its cache key must cover it)"
        )

    def __getattr__(self, name: str) -> NoReturn:
        self._fail()

    def __repr__(self) -> str:
        return (
            f"<config.{object.__getattribute__(self, '_section')} "
            f"not declared by stage {object.__getattribute__(self, '_stage')!r}>"
        )

    __setattr__ = _fail
    __eq__ = _fail  # type: ignore[assignment]
    __hash__ = _fail  # type: ignore[assignment]
    __bool__ = _fail
    __str__ = _fail
    __int__ = _fail
    __float__ = _fail
    __index__ = _fail
    __fspath__ = _fail
    __iter__ = _fail
    __len__ = _fail
    __contains__ = _fail
    __getitem__ = _fail
    __lt__ = _fail
    __le__ = _fail
    __gt__ = _fail
    __ge__ = _fail
    __add__ = _fail
    __radd__ = _fail
    __sub__ = _fail
    __rsub__ = _fail
    __mul__ = _fail
    __rmul__ = _fail
    __truediv__ = _fail
    __rtruediv__ = _fail
    __format__ = _fail
    __reduce__ = _fail
    __reduce_ex__ = _fail


def scoped_config(config: RunConfig, stage: str, sections: Sequence[str]) -> RunConfig:
    """``config`` with only ``sections`` (and ``workdir``/``runner``) readable; any other
    section raises ConfigError.

    What a stage's work function receives, so that a section it reads is a section its key
    hashes. Built without validation (the values are the validated ones of ``config``).
    """
    from duetflow.config import RUN_ONLY_FIELDS, RunConfig

    unknown = set(sections) - set(RunConfig.model_fields)
    if unknown:
        raise ConfigError(f"stage {stage!r} declares unknown config sections {sorted(unknown)}")
    readable = {*sections, *RUN_ONLY_FIELDS}  # where a step writes is never content
    values: dict[str, Any] = {
        name: getattr(config, name) if name in readable else _Undeclared(stage, name)
        for name in RunConfig.model_fields
    }
    return RunConfig.model_construct(**values)


def stage_key(
    stage: str, config: RunConfig, sections: Sequence[str], code: str, *fingerprints: str
) -> str:
    """``<stage>-<hash>`` of the stage name, its sections' hash, its code hash and its inputs.

    Sections are hashed without the store settings (:meth:`RunConfig.content_config`).
    """
    if not sections:
        raise ConfigError(f"stage {stage!r} declares no config section")
    h = hashlib.sha256()
    for part in (stage, config.content_config().section_hash(*sections), code, *fingerprints):
        h.update(part.encode())
        h.update(b"\x1f")
    return f"{stage}-{h.hexdigest()[:24]}"


# --- input fingerprints -------------------------------------------------------------------------


def tree_fingerprint(root: str | Path) -> str:
    """(relative path, size, mtime) of every file under ``root``: cheap, catches new sessions.

    Content hashing a corpus of hundreds of GB on every nightly run would cost more than the
    ingest itself; size + nanosecond mtime is what make/rsync trust as well. Paths are relative
    to ``root``, so the same tree elsewhere has the same fingerprint.
    """
    base = Path(root)
    h = hashlib.sha256()
    if not base.exists():
        return "missing"
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames.sort()
        for name in sorted(filenames):
            p = Path(dirpath) / name
            try:
                st = p.stat()
            except OSError:
                continue
            h.update(f"{p.relative_to(base)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _file_stat(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return f"{path}:missing"
    return f"{path}:{st.st_size}:{st.st_mtime_ns}"


def source_paths(d: Dialogue) -> list[str]:
    """The audio files a dialogue's source reads, sorted by speaker or in turn order."""
    src = d.source
    if hasattr(src, "paths"):
        paths = src.paths
        return sorted(paths.values()) if isinstance(paths, Mapping) else list(paths)
    return [src.path]


def dialogues_fingerprint(dialogues: Sequence[Dialogue]) -> str:
    """Content of a shard: each dialogue record plus the stat of every audio file it reads.

    Hashes the records themselves (:func:`dialogue_digest`), not manifest rows made from them.
    """
    h = hashlib.sha256()
    for d in dialogues:
        h.update(dialogue_digest(d).encode())
        for p in source_paths(d):
            h.update(_file_stat(p).encode())
    return h.hexdigest()


def dialogue_digest(d: Dialogue) -> str:
    """sha256 of every field of a dialogue record (its source kind included)."""
    payload = {"kind": d.source.kind, "dialogue": dataclasses.asdict(d)}
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()
