"""Sample data and configs shared by the flow tests (tiny: DailyTalk + scripts, or studio)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import yaml


def write_config(
    path: Path,
    samples: Path,
    *,
    corpora: tuple[str, ...] = ("dailytalk",),
    scripts: bool = True,
    **sections: Any,
) -> Path:
    """A run config over the sample folders; ``sections`` are merged in (e.g. runner=...)."""
    roots = {
        "dailytalk": "dailytalk",
        "studio": "studio",
        "iemocap": "IEMOCAP_full_release",
        "magicdata_ramc": "MagicData-RAMC",
    }
    data: dict[str, Any] = {
        "workdir": str(path.parent / "work"),
        "corpora": [{"name": c, "root": str(samples / roots[c])} for c in corpora],
        # the samples' HH speakers lend their voices (the default pool is HM participants only)
        "synth": {
            "enabled": scripts,
            "scripts": str(samples / "scripts") if scripts else None,
            "voice_categories": ["HM", "HH"],
        },
        "release": {"store": str(path.parent / "store")},
        "runner": {"max_workers": 2, "shard_size": 2},
    }
    for key, value in sections.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def tree_digest(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` by relative path: what byte-identical means."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def release_content(store: Path, release_id: str) -> dict[str, str]:
    """Every file of a release (manifests, splits, stats, report/, RELEASE.json, CLAIM.json)
    plus the audio objects it points at.

    Nothing is left out: a release records only content and content-affecting config, so two
    runs of the same inputs and config agree on every byte whatever their work directory,
    runner or shard size.
    """
    rel = store / "releases" / release_id
    audio = {f"audio/{k}": v for k, v in tree_digest(store / "audio").items()}
    return {**tree_digest(rel), **audio}
