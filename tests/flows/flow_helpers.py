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
    """A release's manifests, splits, stats and audio objects.

    Without RELEASE.json and report/: both record the full config, which names the runner and
    the work directory, so they differ between two configs by design; nor CLAIM.json, which
    holds RELEASE.json's hash.
    """
    rel = store / "releases" / release_id
    files = {
        k: v
        for k, v in tree_digest(rel).items()
        if k not in ("RELEASE.json", "CLAIM.json") and not k.startswith("report/")
    }
    audio = {f"audio/{k}": v for k, v in tree_digest(store / "audio").items()}
    return {**files, **audio}
