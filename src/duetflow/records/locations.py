"""Where a corpus sits is not content: paths recorded in outputs are relative to its root.

A release must be the same bytes whichever directory its corpora were read from (the release
id hashes its manifests). Work tables may hold absolute paths (intake dialogues point at the
audio the process stage reads), but nothing written into rendered rows or rejections does:

* ingest stamps each dialogue's provenance with its corpus root (:data:`SOURCE_ROOT`, for the
  stages after it; :func:`public_provenance` drops it from everything they write) and rewrites
  its rejections' paths relative to the root (:func:`relative_rejection`);
* rendering records ``source_files`` relative to that root, and its rejections likewise.

A path outside the root (which :func:`duetflow.corpora.source_checks.safe_path` never opens) is
written relative to the root too (``../x``), still independent of where both sit.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from duetflow.records.dialogue import Dialogue, Rejection

#: the provenance key under which ingest records a dialogue's corpus root (never published)
SOURCE_ROOT = "source_root"


def root_spellings(root: str | Path) -> tuple[str, ...]:
    """The ways ``root`` may appear in a message: absolute and resolved (longest first, so a
    longer spelling is replaced before a prefix of it). A relative spelling is left out: it
    could match unrelated text."""
    p = Path(root)
    return tuple(sorted({str(p.absolute()), str(p.resolve())}, key=len, reverse=True))


def relative_path(path: str | Path, roots: Iterable[str]) -> str:
    """``path`` relative to the first of ``roots`` it lies in (POSIX separators); relative to
    the first root (``../``) when it lies in none; unchanged when it is already relative."""
    p = str(path)
    if not p or not os.path.isabs(p):
        return p
    order = list(roots)
    for r in order:
        if p == r or p.startswith(r.rstrip(os.sep) + os.sep):
            return Path(os.path.relpath(p, r)).as_posix()
    return Path(os.path.relpath(p, order[0])).as_posix() if order else p


def relative_text(text: str, roots: Iterable[str]) -> str:
    """``text`` (an error message) with every path under a root written relative to it and the
    root itself as ``<root>``."""
    for r in roots:
        text = text.replace(r.rstrip(os.sep) + os.sep, "").replace(r, "<root>")
    return text


def relative_rejection(rejection: Rejection, roots: Iterable[str]) -> Rejection:
    """``rejection`` with its ``source_path`` and ``detail`` free of the corpus location."""
    order = tuple(roots)
    return replace(
        rejection,
        source_path=relative_path(rejection.source_path, order),
        detail=relative_text(rejection.detail, order),
    )


def stamp_root(dialogue: Dialogue, root: str | Path) -> Dialogue:
    """``dialogue`` with its corpus root recorded for the later stages (:data:`SOURCE_ROOT`)."""
    return replace(dialogue, provenance={**dialogue.provenance, SOURCE_ROOT: str(root)})


def dialogue_roots(dialogue: Dialogue) -> tuple[str, ...]:
    """The spellings of the corpus root ingest recorded for ``dialogue`` (none when absent)."""
    root = dialogue.provenance.get(SOURCE_ROOT)
    return root_spellings(root) if isinstance(root, str) and root else ()


def public_provenance(provenance: Mapping[str, Any]) -> dict[str, Any]:
    """A dialogue's provenance as outputs record it: without the corpus location."""
    return {k: v for k, v in provenance.items() if k != SOURCE_ROOT}
