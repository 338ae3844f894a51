"""Config sections of where a run happens and where its release goes: splits, store, runner."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from duetflow.config.section import CATEGORIES, _Section


class CueThresholds(_Section):
    """When a category pair fails cue parity (docs/fairness.md); the one declaration.

    A pair with at least ``min_per_side`` dialogues per side fails on a gated cue whose
    |Cohen's d| exceeds ``max_abs_d`` (or its ``per_cue`` value) with a rank-test p-value under
    ``alpha``, on a gated cue that separates the sides perfectly, and when the leave-one-out
    classifier on all gated cues is more than ``max_accuracy`` accurate with a permutation
    p-value under ``alpha``.
    """

    max_abs_d: float = Field(1.0, gt=0, le=100)
    alpha: float = Field(0.05, gt=0, lt=1)
    max_accuracy: float = Field(0.75, ge=0.5, le=1)
    min_per_side: int = Field(8, ge=2, le=1_000_000)
    per_cue: dict[str, float] = Field(
        default_factory=dict, description="max |d| per cue name (duetflow.fairness.cues.CUES)"
    )

    @field_validator("per_cue")
    @classmethod
    def _per_cue(cls, per_cue: dict[str, float]) -> dict[str, float]:
        for name, v in per_cue.items():
            if not math.isfinite(v) or v <= 0:
                raise ValueError(f"{name}: max |d| must be finite and > 0, got {v}")
        return per_cue


class ReleaseConfig(_Section):
    """Splits and publication."""

    store: str = Field(
        "./duetflow-demo/store", description="local path, file:// or s3://bucket/prefix"
    )
    endpoint_url: str | None = None
    region: str | None = None
    release_id: str | None = Field(None, description="None: derived from content hash")
    group_by: Literal["source", "speaker"] = "source"
    ratios: dict[str, tuple[float, float, float]] = Field(
        default_factory=lambda: {
            "HH": (0.8, 0.1, 0.1),
            "HM": (0.8, 0.1, 0.1),
            "PH": (0.0, 0.0, 1.0),
        }
    )
    balance_test: bool = Field(
        False, description="test set HH:HM:PH 1:1:1 per language (surplus left out, not moved)"
    )
    balance_val: bool = Field(
        False, description="val set 1:1 over its categories (HH:HM) per language (surplus left out)"
    )
    preset: Literal["seed_study"] | None = Field(
        None,
        description="seed_study: the study's splits (test 1:1:1, PH test-only, val HH:HM 1:1); "
        "sets balance_test and balance_val and refuses PH outside test",
    )
    cue_parity: Literal["off", "warn", "fail"] = Field(
        "off",
        description="audit the release's pipeline cues per category pair (docs/fairness.md): "
        "off, warn (publish, name the failing cues) or fail (refuse the release); "
        "Turing-test builds: fail",
    )
    cue_thresholds: CueThresholds = Field(default_factory=CueThresholds)
    multipart_threshold_mb: int = Field(8, ge=1, le=5120)
    max_attempts: int = Field(5, ge=1, le=100)

    @field_validator("ratios")
    @classmethod
    def _ratios(
        cls, ratios: dict[str, tuple[float, float, float]]
    ) -> dict[str, tuple[float, float, float]]:
        for cat, r in ratios.items():
            if cat not in CATEGORIES:
                raise ValueError(f"unknown category {cat!r}; use {', '.join(CATEGORIES)}")
            if any(not math.isfinite(v) or v < 0 for v in r) or sum(r) <= 0:
                raise ValueError(
                    f"{cat}: train/val/test shares must be finite, >= 0 and not all 0, "
                    f"got {list(r)}"
                )
        return ratios

    @model_validator(mode="before")
    @classmethod
    def _preset(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("preset") == "seed_study":
            data = {"balance_test": True, "balance_val": True, **data}
        return data

    @model_validator(mode="after")
    def _preset_holds(self) -> ReleaseConfig:
        if self.preset == "seed_study":
            ph = self.ratios.get("PH")
            if not (self.balance_test and self.balance_val):
                raise ValueError("preset seed_study balances test and val: leave both on")
            if ph is not None and (ph[0] or ph[1]):
                raise ValueError(f"preset seed_study keeps PH in test only; ratios.PH is {ph}")
        return self


#: Release settings that say where/how a release travels, not what it contains.
TRANSPORT_FIELDS = (
    "store",
    "endpoint_url",
    "region",
    "release_id",
    "multipart_threshold_mb",
    "max_attempts",
)


#: Top-level settings that say where and how a run happens, not what it produces.
RUN_ONLY_FIELDS = ("workdir", "runner")


class RunnerConfig(_Section):
    """Where Prefect runs tasks."""

    kind: Literal["threads", "dask"] = "threads"
    max_workers: int = Field(4, ge=1, le=1024)
    dask_address: str | None = None
    dask_workers: int = Field(2, ge=1, le=1024)
    shard_size: int = Field(16, ge=1, le=1_000_000, description="dialogues per task run")
