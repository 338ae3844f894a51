"""Finding studio sessions: a sorted walk of the root that skips nothing silently.

:func:`walk_sessions` yields a :class:`Session` for every folder holding a ``session.yaml`` and
an :class:`Unusable` (the rejection's id, error and path) for every folder that cannot be one;
the adapter turns the latter into rejections. Only paths are read here, never audio.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from duetflow.corpora.studio.sidecar import AUDIO_SUFFIXES, SIDECAR
from duetflow.errors import ConfigError, InputError, is_utf8, printable


@dataclass(frozen=True)
class Session:
    """A session folder and its path relative to the root (the folder name for the root)."""

    folder: Path
    rel: str


class Unusable(NamedTuple):
    """A folder that cannot be a session: the rejection's item id, error and source path."""

    rel: str
    error: InputError
    path: Path


def walk_sessions(root: Path, corpus: str) -> Iterator[Session | Unusable]:
    """Every session folder under ``root`` (resolved) and every folder that cannot be one, sorted.

    The walk runs over the resolved root, so relative roots and symlinked roots give the
    same paths. A folder with a sidecar is a session; an audio folder without one is a
    ``missing_sidecar`` rejection; a symlinked folder is never followed: one pointing out of
    the root is a ``path_escape`` rejection, one pointing inside it (scanned on its own) a
    ``symlinked_folder`` rejection when it holds a session. Nothing is silently skipped.
    """
    unlisted: list[OSError] = []  # folders the walk could not open: counted, not skipped
    for dirpath, dirnames, filenames in os.walk(root, onerror=unlisted.append):
        yield from _unlisted(unlisted, root, corpus)
        folder = Path(dirpath)
        rel = folder.relative_to(root).as_posix()
        visible = sorted(d for d in dirnames if not d.startswith("."))
        for d in [d for d in visible if not is_utf8(d)]:  # never entered: its paths cannot be
            visible.remove(d)  # recorded in UTF-8 tables; one rejection naming it instead
            yield _bad_name(folder / d, root)
        links = [d for d in visible if (folder / d).is_symlink()]
        dirnames[:] = [d for d in visible if d not in links]
        if SIDECAR in filenames:
            dirnames[:] = []  # a session folder is a leaf; links inside it are its content
            yield Session(folder, rel if rel != "." else folder.name)
            continue
        for d in links:
            linked = _linked_folder(folder / d, root)
            if linked is not None:
                yield linked
        if not dirnames and any(Path(f).suffix.lower() in AUDIO_SUFFIXES for f in filenames):
            err = InputError(
                folder / SIDECAR, "audio without a session.yaml", reason="missing_sidecar"
            )
            yield Unusable(rel, err, folder)
    yield from _unlisted(unlisted, root, corpus)


def _bad_name(path: Path, root: Path) -> Unusable:
    """A folder whose name is not valid UTF-8: a ``bad_name`` rejection showing it escaped."""
    rel = printable(path.relative_to(root).as_posix())
    err = InputError(
        path,
        "folder name is not valid UTF-8 (undecodable bytes shown as \\xNN); rename it",
        reason="bad_name",
    )
    return Unusable(rel, err, Path(printable(str(path))))


def _unlisted(errors: list[OSError], root: Path, corpus: str) -> Iterator[Unusable]:
    """Folders that could not be listed (permissions, vanished), once each."""
    while errors:
        e = errors.pop(0)
        where = Path(e.filename) if e.filename else root
        try:
            rel = where.relative_to(root).as_posix()
        except ValueError:
            rel = str(where)
        if where == root:
            raise ConfigError(f"corpus {corpus!r}: cannot list the root {where}: {e}")
        err = InputError(where, f"cannot list folder: {e.strerror or e}", reason="missing_file")
        yield Unusable(rel, err, where)


def _linked_folder(link: Path, root: Path) -> Unusable | None:
    """Why a symlinked folder is no session (None: a link inside the root to a non-session)."""
    rel = link.relative_to(root).as_posix()
    try:
        target = link.resolve(strict=True)
    except (OSError, RuntimeError) as e:
        err = InputError(link, f"cannot resolve folder link: {e}", reason="path_escape")
        return Unusable(rel, err, link)
    if target != root and root not in target.parents:
        err = InputError(
            link,
            f"links to {target}, outside the studio root {root}; refusing to follow it",
            reason="path_escape",
        )
        return Unusable(rel, err, link)
    try:
        names = os.listdir(target)
    except OSError:
        names = []
    if SIDECAR not in names and not any(Path(n).suffix.lower() in AUDIO_SUFFIXES for n in names):
        return None
    err = InputError(
        link,
        f"links to {target.relative_to(root).as_posix() or '.'} inside the root, "
        "which is scanned on its own; a session is counted once",
        reason="symlinked_folder",
    )
    return Unusable(rel, err, link)
