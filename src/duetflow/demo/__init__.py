"""Sample corpora in the real on-disk layouts, with the ground truth used to write them.

No real corpus can ship with the project, so ``make_samples`` writes small DailyTalk, IEMOCAP
and MagicData-RAMC trees, studio sessions and scripts (every generator registered under the
entry-point group ``duetflow.samples``, plug-ins included) with speech-like audio that VAD
detects as speech, two distinguishable voices per dialogue, realistic gaps, backchannels,
interruptions, an imbalanced dialogue per corpus and deliberately broken items.
``root/truth.json`` records, per source dialogue id (the ids the adapters produce), the turns,
interruptions and backchannels the generator placed, and, under ``broken``, the items ingest
must quarantine with their expected reason codes.

Same seed + scale → byte-identical files. ``scale`` multiplies the number of dialogues, never
their shape (for memory benchmarks).

Modules: one generator per corpus (``dailytalk``, ``iemocap``, ``magicdata_ramc``, ``studio``,
``scripts``), ``plan`` (dialogue timelines and their truth), ``voice`` (speech-like audio and
room tone) and ``prepare`` (the ``duetflow demo`` folder).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

#: Entry-point group of sample generators: ``name = "package.module"``, a module with
#: ``generate(root, seed, scale) -> dict`` and ``FOLDER`` (its folder under the samples root;
#: the entry-point name when absent). A corpus plug-in ships its generator the same way it
#: ships its adapter (group ``duetflow.corpora``), so nothing in the core lists generators.
ENTRY_POINT_GROUP = "duetflow.samples"


@dataclass(frozen=True)
class SampleGenerator:
    """One registered sample generator."""

    name: str
    folder: str
    generate: Callable[[Path, int, int], dict[str, Any]]


@lru_cache(maxsize=1)
def _load() -> tuple[dict[str, SampleGenerator], dict[str, str]]:
    found: dict[str, SampleGenerator] = {}
    errors: dict[str, str] = {}
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        try:
            mod = ep.load()
        except Exception as e:  # a broken plugin must not take the others down
            log.warning("sample generator %s (%s) failed to load: %s", ep.name, ep.value, e)
            errors[ep.name] = f"{type(e).__name__}: {e}"
            continue
        gen = getattr(mod, "generate", None)
        if not callable(gen):
            errors[ep.name] = f"{ep.value} has no generate(root, seed, scale)"
            continue
        found[ep.name] = SampleGenerator(ep.name, str(getattr(mod, "FOLDER", ep.name)), gen)
    return found, errors


def generators(refresh: bool = False) -> dict[str, SampleGenerator]:
    """Registered sample generators that loaded, by name (sorted)."""
    if refresh:
        _load.cache_clear()
    return dict(_load()[0])


def generator_errors(refresh: bool = False) -> dict[str, str]:
    """Registered sample generators that failed to load (name -> error)."""
    if refresh:
        _load.cache_clear()
    return dict(_load()[1])


def make_samples(
    root: Path,
    seed: int = 0,
    scale: int = 1,
    include: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Write the sample corpora under ``root`` and ``root/truth.json``; return the truth.

    ``include`` restricts the generators (names from :func:`generators`); by default every
    registered one runs, in name order.
    """
    if scale < 1:
        raise ValueError(f"scale must be >= 1, got {scale}")
    available = generators()
    names = list(include) if include is not None else list(available)
    unknown = [n for n in names if n not in available]
    if unknown:
        failed = generator_errors()
        detail = "".join(f"; {n} failed to load: {failed[n]}" for n in unknown if n in failed)
        raise ValueError(f"unknown sample corpora {unknown}; known: {list(available)}{detail}")
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    truth: dict[str, Any] = {
        "seed": seed,
        "scale": scale,
        "corpora": {},
        "dialogues": {},
        "broken": [],
    }
    for name in names:
        gen = available[name]
        folder = gen.folder
        out = gen.generate(root, seed, scale)
        dialogues = out.get("dialogues", {}) if isinstance(out, dict) else {}
        broken = out.get("broken", []) if isinstance(out, dict) else []
        truth["dialogues"].update(dialogues)
        truth["broken"].extend(broken)
        extra = {k: v for k, v in out.items() if k not in ("dialogues", "broken")}
        truth["corpora"][name] = {
            "root": folder,
            "dialogues": len(dialogues),
            "broken": len(broken),
            **extra,
        }
        log.info(
            "samples: %s -> %s (%d dialogues, %d broken)", name, folder, len(dialogues), len(broken)
        )
    (root / "truth.json").write_text(
        json.dumps(truth, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return truth


def load_truth(root: Path) -> dict[str, Any]:
    """The ``truth.json`` written by :func:`make_samples`."""
    data: dict[str, Any] = json.loads((Path(root) / "truth.json").read_text(encoding="utf-8"))
    return data


__all__ = [
    "ENTRY_POINT_GROUP",
    "SampleGenerator",
    "generator_errors",
    "generators",
    "load_truth",
    "make_samples",
]
