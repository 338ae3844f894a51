"""Deterministic randomness: every random choice is keyed by (global seed, item id)."""

from __future__ import annotations

import hashlib

import numpy as np


def seed_for(seed: int, *keys: object) -> int:
    """A 64-bit seed derived from the global seed and any keys (stable across runs/platforms)."""
    blob = "\x1f".join([str(seed), *(str(k) for k in keys)]).encode()
    return int.from_bytes(hashlib.sha256(blob).digest()[:8], "little")


def rng_for(seed: int, *keys: object) -> np.random.Generator:
    """A numpy Generator for one item: same seed + keys → same stream."""
    return np.random.default_rng(seed_for(seed, *keys))
