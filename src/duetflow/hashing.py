"""Every digest duetflow takes: of a file, of bytes, of a text, and of the code a stage runs.

* **content**: :func:`sha256_file` (a file, read in 1 MiB blocks so memory stays flat; the
  content address of an audio object, the ``sha256`` column), :func:`sha256_bytes`,
  :func:`sha256_chunks` (a stream, such as an S3 body), :func:`text_digest` (canonical JSON of a
  payload), :func:`files_fingerprint` (small tables, a missing one by name) and
  :func:`path_checksum` (a model file or folder: sorted names + bytes);
* **code**: :func:`code_hash`, the source of every module that ``entries`` import, transitively,
  inside the ``duetflow`` package, with their parent packages (:func:`import_closure`). The
  import graph is read from the source (every ``import`` statement, also those inside
  functions, and module names written as strings such as the
  ``"duetflow.tts.espeak:EspeakBackend"`` targets of a plugin table); ``if TYPE_CHECKING:``
  blocks are skipped, they never run. A module that cannot be found is an error, never a
  silent gap in the hash. Module *names* are hashed with their source, so moving a module
  changes the code hash of every stage that imports it (and so its cache keys). What each
  module's source imports is parsed once per source and kept in the user cache folder
  (:class:`ImportGraphCache`), so a run reads the graph instead of parsing ~170 modules.

Stage keys (:mod:`duetflow.pipeline.keys`) and the studio adapter's per-session state
(:mod:`duetflow.corpora.studio.adapter`) hash code through :func:`code_hash`. This module
imports nothing heavy and nothing of duetflow but its errors and :mod:`duetflow.user_cache`.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib.util
import json
import os
import re
import sys
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import IO, Any

from duetflow.errors import ConfigError
from duetflow.user_cache import user_cache_dir

#: bytes read at a time when a file is hashed
CHUNK = 1 << 20


# --- content ------------------------------------------------------------------------------------


def update_file(h: Any, f: IO[bytes]) -> int:
    """Feed an open binary file into the hash object ``h``, one :data:`CHUNK` at a time; the
    number of bytes read."""
    total = 0
    while block := f.read(CHUNK):
        h.update(block)
        total += len(block)
    return total


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks so memory stays flat."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        update_file(h, f)
    return h.hexdigest()


def sha256_bytes(data: bytes) -> str:
    """Hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def sha256_chunks(chunks: Iterable[bytes]) -> str:
    """Hex sha256 of a stream of byte blocks (an object body read in chunks)."""
    h = hashlib.sha256()
    for chunk in chunks:
        h.update(chunk)
    return h.hexdigest()


def text_digest(text: str) -> str:
    """sha256 hex of a text (canonical JSON of a script shard, a drop list)."""
    return hashlib.sha256(text.encode()).hexdigest()


def files_fingerprint(paths: Iterable[str | Path]) -> str:
    """Content hash of small files (manifest tables), missing ones included by name."""
    h = hashlib.sha256()
    for p in paths:
        h.update(str(Path(p).name).encode())
        try:
            with open(p, "rb") as f:
                update_file(h, f)
        except FileNotFoundError:
            h.update(b"missing")
    return h.hexdigest()


def path_checksum(path: str | Path) -> str:
    """sha256 of a model file or folder (sorted names + bytes): ties output to exact weights."""
    p = Path(path)
    h = hashlib.sha256()
    files = [p] if p.is_file() else sorted(f for f in p.rglob("*") if f.is_file())
    for f in files:
        h.update(str(f.relative_to(p) if p.is_dir() else f.name).encode())
        with f.open("rb") as fh:
            update_file(h, fh)
    return h.hexdigest()


# --- code ---------------------------------------------------------------------------------------


PACKAGE = "duetflow"
#: a module path written as a string (a plugin table's ``"pkg.module:Class"`` target)
_MODULE_STRING = re.compile(r"^(duetflow(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(?::[A-Za-z_][\w.]*)?$")


class CodeHashError(ConfigError):
    """A module of an import closure has no readable source (a broken install)."""


_ROOT = Path(__file__).resolve().parent


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
    # once per module source and process: every stage's closure shares most modules
    certain, possible = import_graph_cache().candidates(name, _package_of(name, path), source, path)
    found = set(certain) | {m for m in possible if _is_module(m)}
    return frozenset(m for m in found if m == PACKAGE or m.startswith(PACKAGE + "."))


Candidates = tuple[tuple[str, ...], tuple[str, ...]]


def import_candidates(package: str, source: bytes, path: Path) -> Candidates:
    """What a module's source imports, read from its syntax tree (``package``: the package its
    relative imports start from): the module names it imports for certain (``import x``, the
    module of ``from x import y``), and the names that are modules if a file says so (``x.y``
    of ``from x import y``; a ``"duetflow.a.b:Name"`` string), each sorted. A function of the
    source alone, so :class:`ImportGraphCache` keeps it across runs."""
    tree = ast.parse(source, filename=str(path))
    certain: set[str] = set()
    possible: set[str] = set()
    for node in _walk_runtime(tree):
        if isinstance(node, ast.Import):
            certain.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            certain.add(target)
            # ``from duetflow.audio import io``: io is a module
            possible.update(f"{target}.{a.name}" for a in node.names if a.name != "*")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            m = _MODULE_STRING.match(node.value)
            if m and "." in m.group(1):
                possible.add(m.group(1))
    return tuple(sorted(certain)), tuple(sorted(possible))


class ImportGraphCache:
    """:func:`import_candidates` of module sources, kept between processes in one JSON file.

    Parsing the ~170 modules of a stage's closure costs a run ~0.3-0.7 s of CPU; reading them
    back costs ~5 ms. An entry is keyed by the sha256 of the Python version, the module's name
    and package and its source bytes, so an edited module is parsed afresh and an entry is
    never stale. The file is an optimisation only: a missing, unreadable or malformed one is
    ignored, and one that cannot be written is not written (a read-only home). New entries
    are written back by :meth:`save` (atomically: a temporary file renamed over it); the file
    keeps the entries read or parsed by this process and at most :data:`MAX_ENTRIES` in all.
    """

    #: entries the file keeps at most (a few versions of the package's ~260 modules)
    MAX_ENTRIES = 4096
    FORMAT = 1

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._entries: dict[str, Candidates] | None = None
        self._used: set[str] = set()
        self._added = False

    def _load(self) -> dict[str, Candidates]:
        if self._entries is not None:
            return self._entries
        self._entries = {}
        if self.path is None:
            return self._entries
        try:
            data = json.loads(self.path.read_bytes())
            if data.get("format") == self.FORMAT:
                for key, (certain, possible) in data["entries"].items():
                    self._entries[str(key)] = (
                        tuple(str(m) for m in certain),
                        tuple(str(m) for m in possible),
                    )
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            self._entries = {}  # absent or malformed: parsed afresh, written anew
        return self._entries

    @staticmethod
    def key(name: str, package: str, source: bytes) -> str:
        h = hashlib.sha256(f"{sys.version_info[0]}.{sys.version_info[1]}\0".encode())
        h.update(f"{name}\0{package}\0".encode())
        h.update(source)
        return h.hexdigest()

    def candidates(self, name: str, package: str, source: bytes, path: Path) -> Candidates:
        """:func:`import_candidates` of the source, from the file when it holds them."""
        entries = self._load()
        key = self.key(name, package, source)
        self._used.add(key)
        found = entries.get(key)
        if found is None:
            found = entries[key] = import_candidates(package, source, path)
            self._added = True
        return found

    def save(self) -> None:
        """Write the entries back when this process parsed new ones (errors ignored)."""
        if not self._added or self.path is None or self._entries is None:
            return
        self._added = False
        entries = self._entries
        keep = [k for k in entries if k in self._used]
        keep += [k for k in entries if k not in self._used][: max(0, self.MAX_ENTRIES - len(keep))]
        body = json.dumps(
            {"format": self.FORMAT, "entries": {k: entries[k] for k in sorted(keep)}},
            separators=(",", ":"),
        )
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(body, encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)


#: the file :func:`import_graph_cache` keeps in the user cache folder
IMPORT_GRAPH_FILE = "code-imports.json"


@lru_cache(maxsize=1)
def import_graph_cache() -> ImportGraphCache:
    """The process's :class:`ImportGraphCache`, in :func:`duetflow.user_cache.user_cache_dir`."""
    return ImportGraphCache(user_cache_dir() / IMPORT_GRAPH_FILE)


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
    import_graph_cache().save()
    h = hashlib.sha256()
    for name in sorted(closure):
        h.update(name.encode() + b"\0")
        h.update(read_source(closure[name]))
        h.update(b"\0")
    return h.hexdigest()[:16]


def clear_code_hashes() -> None:
    """Forget computed code hashes (tests that substitute :func:`read_source`)."""
    code_hash.cache_clear()
    _imported_modules.cache_clear()
