"""Shards whose borders depend on the items (:func:`stable_chunks`), for the process and synth
stages."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


def stable_chunks(items: Iterable[T], size: int, key: Callable[[T], str]) -> Iterator[list[T]]:
    """Cut a stream into shards of about ``size`` items whose borders depend on the items.

    A shard ends after an item whose key hashes to 0 mod ``size`` (or at ``2 * size`` items), so
    a new studio session inserted between old ones changes only the shard it lands in (two when
    it ends one); cutting every ``size`` items would shift every later shard and re-render
    them all.
    """
    batch: list[T] = []
    for item in items:
        batch.append(item)
        h = int.from_bytes(hashlib.sha256(key(item).encode()).digest()[:8], "big")
        if h % size == 0 or len(batch) >= 2 * size:
            yield batch
            batch = []
    if batch:
        yield batch
