"""The one configuration model of a pipeline run.

A run is described by a YAML file (every key optional, defaults below) plus environment
overrides ``DUETFLOW__SECTION__KEY=value`` (values parsed as YAML scalars). Unknown keys are an
error naming the key, so a typo never silently falls back to a default.

Each section hashes separately (:meth:`RunConfig.section_hash`): a cache key built from the
sections a stage reads means changing one threshold recomputes only the stages that read it.

One schema, one module per group of sections: :mod:`~duetflow.config.corpora` (corpora, studio
segmentation and checks, topics), :mod:`~duetflow.config.turntaking` (overlaps, windows,
filters, matching), :mod:`~duetflow.config.render`, :mod:`~duetflow.config.synth` (TTS, LLM,
scripts), :mod:`~duetflow.config.release` (splits, store, runner),
:mod:`~duetflow.config.design` (the Turing-test design contract),
:mod:`~duetflow.config.quality` (speech-quality scores of rendered audio),
:mod:`~duetflow.config.run_config` (:class:`RunConfig` and its hashes) and
:mod:`~duetflow.config.loading` (YAML, environment overrides, error messages). This package
re-exports all of them: ``from duetflow.config import RunConfig, load_config`` is the public
API.
"""

from duetflow.config.corpora import (
    AsrConfig,
    CorpusSpec,
    SegmentConfig,
    StudioConfig,
    TopicsConfig,
)
from duetflow.config.design import DesignConfig, SystemSpec
from duetflow.config.loading import ENV_PREFIX, build_config, env_overrides, load_config
from duetflow.config.quality import QualityConfig
from duetflow.config.release import RUN_ONLY_FIELDS, TRANSPORT_FIELDS, ReleaseConfig, RunnerConfig
from duetflow.config.render import MAX_GAP_MS, RenderConfig
from duetflow.config.run_config import RunConfig
from duetflow.config.section import CATEGORIES
from duetflow.config.synth import LLMConfig, ScriptsConfig, SynthConfig, VoiceCategory
from duetflow.config.turntaking import (
    MAX_WINDOW_S,
    FilterConfig,
    MatchConfig,
    TurnsConfig,
    WindowConfig,
)

__all__ = [
    "CATEGORIES",
    "ENV_PREFIX",
    "MAX_GAP_MS",
    "MAX_WINDOW_S",
    "RUN_ONLY_FIELDS",
    "TRANSPORT_FIELDS",
    "AsrConfig",
    "CorpusSpec",
    "DesignConfig",
    "FilterConfig",
    "LLMConfig",
    "MatchConfig",
    "QualityConfig",
    "ReleaseConfig",
    "RenderConfig",
    "RunConfig",
    "RunnerConfig",
    "ScriptsConfig",
    "SegmentConfig",
    "StudioConfig",
    "SynthConfig",
    "SystemSpec",
    "TopicsConfig",
    "TurnsConfig",
    "VoiceCategory",
    "WindowConfig",
    "build_config",
    "env_overrides",
    "load_config",
]
