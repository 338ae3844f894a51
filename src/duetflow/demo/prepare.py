"""The demo folder: sample corpora and the bundled default config, written once and reused.

``duetflow demo`` (a thin CLI command) calls :func:`prepare_demo` and then runs the pipeline
on the config it returns; editing ``<out>/config.yaml`` and re-running keeps the edit.
"""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

from duetflow.demo import make_samples


def bundled_config(name: str = "default.yaml") -> Path:
    """Path of a config shipped in the package (``duetflow/data/configs``)."""
    return Path(str(resources.files("duetflow").joinpath("data", "configs", name)))


def prepare_demo(out: Path, *, seed: int = 0, scale: int = 1) -> Path:
    """Write sample corpora (unless present) and the default config into ``out``; its path."""
    out.mkdir(parents=True, exist_ok=True)
    samples = out / "samples"
    if not (samples / "truth.json").exists():
        make_samples(samples, seed=seed, scale=scale)
    cfg = out / "config.yaml"
    if not cfg.exists():
        shutil.copyfile(bundled_config(), cfg)
    return cfg
