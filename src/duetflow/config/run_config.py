"""The whole run config (:class:`RunConfig`) and its section, config and content hashes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, model_validator

from duetflow.config.corpora import (
    AsrConfig,
    CorpusSpec,
    SegmentConfig,
    StudioConfig,
    TopicsConfig,
)
from duetflow.config.design import DesignConfig
from duetflow.config.quality import QualityConfig
from duetflow.config.release import RUN_ONLY_FIELDS, TRANSPORT_FIELDS, ReleaseConfig, RunnerConfig
from duetflow.config.render import RenderConfig
from duetflow.config.section import _Section
from duetflow.config.synth import LLMConfig, ScriptsConfig, SynthConfig
from duetflow.config.turntaking import FilterConfig, MatchConfig, TurnsConfig, WindowConfig


class RunConfig(_Section):
    """Everything a pipeline run needs. Defaults run the bundled sample data."""

    seed: int = Field(1234, ge=0, le=2**63 - 1, description="seed of every random choice")
    sample_rate: int = Field(16000, ge=8000, le=192_000, description="output sample rate")
    workdir: Path = Path("./duetflow-demo/work")
    corpora: list[CorpusSpec] = Field(default_factory=list)
    segment: SegmentConfig = SegmentConfig()
    turns: TurnsConfig = TurnsConfig()
    window: WindowConfig = WindowConfig()
    filters: FilterConfig = FilterConfig()
    render: RenderConfig = RenderConfig()
    quality: QualityConfig = QualityConfig()
    studio: StudioConfig = StudioConfig()
    asr: AsrConfig = AsrConfig()
    topics: TopicsConfig = TopicsConfig()
    match: MatchConfig = MatchConfig()
    llm: LLMConfig = LLMConfig()
    scripts: ScriptsConfig = ScriptsConfig()
    synth: SynthConfig = SynthConfig()
    release: ReleaseConfig = ReleaseConfig()
    design: DesignConfig = DesignConfig()
    runner: RunnerConfig = RunnerConfig()

    @model_validator(mode="after")
    def _dnsmos_filter_needs_scores(self) -> RunConfig:
        if self.filters.min_dnsmos_ovrl is not None and not self.quality.dnsmos:
            raise ValueError(
                "filters.min_dnsmos_ovrl needs DNSMOS scores: set quality.dnsmos: on "
                "(pip install 'duetflow[quality]')"
            )
        return self

    def section_hash(self, *sections: str) -> str:
        """Stable hash of the named sections (all of them when none is named)."""
        names = sections or tuple(sorted(type(self).model_fields))
        payload = {n: _jsonable(getattr(self, n)) for n in names}
        blob = json.dumps(payload, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def config_hash(self) -> str:
        return self.section_hash()

    def content_config(self) -> RunConfig:
        """This config without where and how a release travels (store, endpoint, retries).

        The same content published to a local store and to S3 gets the same id, RELEASE.json
        and report. Where the run happened (:data:`RUN_ONLY_FIELDS`) is reset to defaults too;
        :meth:`content_json` leaves those out instead.
        """
        where = {k: ReleaseConfig.model_fields[k].default for k in TRANSPORT_FIELDS}
        run_only = {k: type(self).model_fields[k].default for k in RUN_ONLY_FIELDS}
        return self.model_copy(
            update={"release": self.release.model_copy(update=where), **run_only}
        )

    def content_json(self) -> dict[str, Any]:
        """The content-affecting config as JSON: no work directory, runner, store settings,
        corpus roots or scripts path.

        What a release and its report record; equal for a run on threads or Dask, in any work
        directory, with any shard size, published to any store, from corpora and scripts anywhere
        (their content reaches the release through its manifests: audio sha256, turns,
        provenance).
        """
        data = self.content_config().model_dump(mode="json", exclude=set(RUN_ONLY_FIELDS))
        for corpus in data.get("corpora", []):  # where inputs sit is not content either
            corpus.pop("root", None)
        data.get("synth", {}).pop("scripts", None)
        return dict(data)

    def content_hash(self) -> str:
        """Hash of :meth:`content_json`: part of the default release id."""
        blob = json.dumps(self.content_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value
