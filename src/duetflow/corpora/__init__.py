"""Corpus adapters: one module per corpus, found through the ``duetflow.corpora`` entry points.

``get_adapter(name)(root, options, config=cfg).scan()`` lazily yields ``Dialogue | Rejection``;
see :mod:`duetflow.corpora.adapter` for the protocol and docs/adding-a-corpus.md for a new corpus.
"""

from __future__ import annotations

from duetflow.corpora.adapter import (
    CorpusAdapter,
    RegistryEntry,
    available_adapters,
    get_adapter,
    registry_entries,
    registry_errors,
)

__all__ = [
    "CorpusAdapter",
    "RegistryEntry",
    "available_adapters",
    "get_adapter",
    "registry_entries",
    "registry_errors",
]
