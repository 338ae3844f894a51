"""Config sections of where a run happens and where its release goes: splits, store, runner."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, field_validator

from duetflow.config.base import CATEGORIES, _Section


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
