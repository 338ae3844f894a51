"""Sample corpora in the real on-disk layouts, with the ground truth used to write them.

No real corpus can ship with the project, so ``make_samples`` writes small DailyTalk, IEMOCAP
and MagicData-RAMC trees (plus ``studio/`` and ``scripts/`` when those optional generators are
installed) with speech-like audio that VAD detects as speech, two distinguishable voices per
dialogue, realistic gaps, backchannels, interruptions, an imbalanced dialogue per corpus and
deliberately broken items. ``root/truth.json`` records, per source dialogue id (the ids the
adapters produce), the turns, interruptions and backchannels the generator placed, and, under
``broken``, the items ingest must quarantine with their expected reason codes.

Same seed + scale → byte-identical files. ``scale`` multiplies the number of dialogues, never
their shape (for memory benchmarks).
"""

from __future__ import annotations

import importlib
import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

#: built-in generators: name -> (module, corpus folder under root)
BUILTIN = {
    "dailytalk": ("duetflow.samples.dailytalk", "dailytalk"),
    "iemocap": ("duetflow.samples.iemocap", "IEMOCAP_full_release"),
    "magicdata_ramc": ("duetflow.samples.magicdata_ramc", "MagicData-RAMC"),
}
#: optional generators owned by other areas; used when they import
OPTIONAL = {
    "studio": ("duetflow.samples.studio", "studio"),
    "scripts": ("duetflow.samples.scripts", "scripts"),
}
ALL = (*BUILTIN, *OPTIONAL)


def _generator(module: str) -> Callable[[Path, int, int], dict[str, Any]] | None:
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name is not None and module.startswith(e.name):
            return None
        raise
    gen = getattr(mod, "generate", None)
    return gen if callable(gen) else None


def make_samples(
    root: Path,
    seed: int = 0,
    scale: int = 1,
    include: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Write the sample corpora under ``root`` and ``root/truth.json``; return the truth.

    ``include`` restricts the generators (names from :data:`ALL`); by default every built-in
    one runs, and the optional ones run when their modules import.
    """
    if scale < 1:
        raise ValueError(f"scale must be >= 1, got {scale}")
    names = list(include) if include is not None else list(ALL)
    unknown = [n for n in names if n not in BUILTIN and n not in OPTIONAL]
    if unknown:
        raise ValueError(f"unknown sample corpora {unknown}; known: {list(ALL)}")
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
        module, folder = BUILTIN.get(name) or OPTIONAL[name]
        gen = _generator(module)
        if gen is None:
            if name in BUILTIN:
                raise RuntimeError(f"built-in sample generator {module} has no generate()")
            log.info("optional sample generator %s not available; skipped", module)
            continue
        out = gen(root, seed, scale)
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


__all__ = ["ALL", "BUILTIN", "OPTIONAL", "load_truth", "make_samples"]
