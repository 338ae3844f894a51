"""Cache keys by construction: the code a stage imports, its config sections, its inputs.

A stage's key (:func:`stage_key`) hashes three things and nothing else:

* **its code**: the source of every module its entry modules import, transitively, inside the
  ``duetflow`` package (:func:`code_hash`). The import graph is read from the source (every
  ``import`` statement, also those inside functions, and module names written as strings such
  as the ``"duetflow.tts.espeak:EspeakBackend"`` targets of a plugin table); ``if
  TYPE_CHECKING:`` blocks are skipped, they never run. A module that cannot be found is an
  error, never a silent gap in the hash. Plugins named by the config (a corpus adapter, a TTS
  backend, a filter from another package) are added by the stage as extra entry modules.
* **its config sections**: only those the stage declares (:mod:`duetflow.pipeline.stages`), and the
  stage's work functions receive a config in which every other section raises on access
  (:func:`scoped_config`), so a section it reads is a section its key covers.
* **its inputs**: fingerprints of the data it reads (:func:`tree_fingerprint`,
  :func:`dialogues_fingerprint`, :func:`files_fingerprint`).

Where a run happens (work directory, store, task runner, shard size) is in none of them.

This module imports nothing heavy: the studio adapter uses :func:`code_hash` for its own
per-session state.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import importlib.util
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from duetflow.errors import ConfigError

if TYPE_CHECKING:
    from duetflow.config import RunConfig
    from duetflow.model import Dialogue

PACKAGE = "duetflow"
#: a module path written as a string (a plugin table's ``"pkg.module:Class"`` target)
_MODULE_STRING = re.compile(r"^(duetflow(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(?::[A-Za-z_][\w.]*)?$")


class CodeHashError(ConfigError):
    """A module of a stage's import closure has no readable source (a broken install)."""


# --- the import closure -------------------------------------------------------------------------


_ROOT = Path(__file__).resolve().parent.parent


def _package_path(name: str) -> Path | None:
    """Where module ``name`` of ``duetflow`` lives on disk (None when it does not)."""
    rel = name.split(".")[1:]
    base = _ROOT.joinpath(*rel)
    for candidate in (base / "__init__.py", base.with_name(base.name + ".py") if rel else None):
        if candidate is not None and candidate.is_file():
            return candidate
    return None


def module_file(name: str) -> Path:
    """The source file of module ``name`` (``__init__.py`` for a package), without importing it.

    ``duetflow`` modules are found by path beside this file; a plugin's module (another
    package) through its import spec. Raises :class:`CodeHashError` when the module cannot be
    found or has no ``.py`` source.
    """
    if name == PACKAGE or name.startswith(PACKAGE + "."):
        path = _package_path(name)
        if path is None:
            raise CodeHashError(f"code hash: module {name} has no source file under {_ROOT}")
        return path
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError) as e:
        raise CodeHashError(f"code hash: module {name} cannot be located: {e}") from None
    origin = spec.origin if spec is not None else None
    if origin is None or not origin.endswith(".py"):
        raise CodeHashError(f"code hash: module {name} has no Python source file ({origin})")
    return Path(origin)


def _is_module(name: str) -> bool:
    """``name`` is a module of ``duetflow`` (the only ones a closure follows)."""
    return (name == PACKAGE or name.startswith(PACKAGE + ".")) and _package_path(name) is not None


def read_source(path: Path) -> bytes:
    """The bytes of one source file (the one place keys read code; tests substitute it)."""
    try:
        return path.read_bytes()
    except OSError as e:
        raise CodeHashError(f"code hash: cannot read {path}: {e}") from None


def _type_checking_block(node: ast.AST) -> bool:
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk_runtime(tree: ast.AST) -> Iterable[ast.AST]:
    """Every node of ``tree`` except those under ``if TYPE_CHECKING:`` (its ``else`` runs)."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        yield node
        if _type_checking_block(node):
            assert isinstance(node, ast.If)
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _package_of(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def imported_modules(name: str, source: bytes, path: Path) -> set[str]:
    """``duetflow`` modules that module ``name`` imports (directly), read from its source."""
    return set(_imported_modules(name, source, path))


@lru_cache(maxsize=1024)
def _imported_modules(name: str, source: bytes, path: Path) -> frozenset[str]:
    # parsed once per module source and process: every stage's closure shares most modules
    tree = ast.parse(source, filename=str(path))
    package = _package_of(name, path)
    found: set[str] = set()
    for node in _walk_runtime(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            found.add(target)
            for alias in node.names:  # ``from duetflow.audio import io``: io is a module
                if alias.name != "*" and _is_module(sub := f"{target}.{alias.name}"):
                    found.add(sub)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            m = _MODULE_STRING.match(node.value)
            if m and "." in m.group(1) and _is_module(m.group(1)):
                found.add(m.group(1))
    return frozenset(m for m in found if m == PACKAGE or m.startswith(PACKAGE + "."))


def _with_parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def import_closure(entries: Iterable[str]) -> dict[str, Path]:
    """Every module the ``entries`` import transitively inside ``duetflow`` (+ their packages).

    Entries outside ``duetflow`` (a plugin's own module) are included themselves; what they
    import outside ``duetflow`` is not followed.
    """
    todo = [m for e in entries for m in (_with_parents(e) if e.startswith(PACKAGE) else [e])]
    seen: dict[str, Path] = {}
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = module_file(name)
        seen[name] = path
        for dep in imported_modules(name, read_source(path), path):
            todo.extend(p for p in _with_parents(dep) if p not in seen)
    return seen


@lru_cache(maxsize=256)
def code_hash(entries: tuple[str, ...]) -> str:
    """Hash of the source of the import closure of ``entries`` (module names, sorted)."""
    closure = import_closure(entries)
    h = hashlib.sha256()
    for name in sorted(closure):
        h.update(name.encode() + b"\0")
        h.update(read_source(closure[name]))
        h.update(b"\0")
    return h.hexdigest()[:16]


def clear_code_hashes() -> None:
    """Forget computed code hashes (tests that substitute :func:`read_source`)."""
    code_hash.cache_clear()


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


def files_fingerprint(paths: Iterable[str | Path]) -> str:
    """Content hash of small files (manifest tables), missing ones included by name."""
    h = hashlib.sha256()
    for p in paths:
        h.update(str(Path(p).name).encode())
        try:
            with open(p, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
        except FileNotFoundError:
            h.update(b"missing")
    return h.hexdigest()


def text_digest(text: str) -> str:
    """sha256 hex of a text (canonical JSON of a script shard, a drop list)."""
    return hashlib.sha256(text.encode()).hexdigest()
