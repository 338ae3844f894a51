"""The one configuration model of a pipeline run.

A run is described by a YAML file (every key optional, defaults below) plus environment
overrides ``DUETFLOW__SECTION__KEY=value`` (values parsed as YAML scalars). Unknown keys are an
error naming the key, so a typo never silently falls back to a default.

Each section hashes separately (:meth:`RunConfig.section_hash`): a cache key built from the
sections a stage reads means changing one threshold recomputes only the stages that read it.

Why one module of ~800 lines: it is one schema. The section models are small (a few fields
and validators each) and read together as the reference of every key; the cross-section rules
and the loading, override and hashing code need them all. A ``config/`` package of per-section
modules would change every ``from duetflow.config import ...`` in the project for no gain in
what one module reads.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from duetflow.bounded_yaml import load_yaml
from duetflow.errors import ConfigError, brief_repr
from duetflow.licences import STUDIO_CONSENT, check_licence
from duetflow.model import Category
from duetflow.topics import DEFAULT_TAXONOMY, UNMAPPED, TopicMapper, normalise_topic
from duetflow.tts.speaking_rate import SCRIPT_SPEECH_S

ENV_PREFIX = "DUETFLOW__"
#: Dialogue categories (the keys of ``release.ratios``).
CATEGORIES = tuple(str(c) for c in Category)


def _licence_value(value: str) -> str:
    try:
        return check_licence(value, "licence")
    except ConfigError as e:  # pydantic reports ValueErrors with the field's path
        raise ValueError(str(e).removeprefix("licence: ")) from None


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CorpusSpec(_Section):
    """One corpus (or studio root) to ingest."""

    name: str = Field(
        description="registered adapter name: dailytalk, iemocap, magicdata_ramc, studio"
    )
    root: Path
    options: dict[str, Any] = Field(default_factory=dict)
    licence: str | None = Field(
        None,
        description="SPDX id or LicenseRef- name of this corpus's licence; None: the adapter's",
    )

    @field_validator("licence")
    @classmethod
    def _licence(cls, v: str | None) -> str | None:
        return None if v is None else _licence_value(v)


class SegmentConfig(_Section):
    """Turn detection from audio (studio sessions; trimming in rendering)."""

    vad_aggressiveness: int = Field(2, ge=0, le=3, description="WebRTC VAD mode 0 (lenient) .. 3")
    vad_frame_ms: Literal[10, 20, 30] = 30
    hangover_ms: int = Field(
        150, ge=0, le=5000, description="speech kept on after the last voiced frame"
    )
    min_speech_ms: int = Field(
        120, ge=0, le=10_000, description="shorter voiced runs are dropped as clicks"
    )
    min_silence_ms: int = Field(
        300, ge=0, le=10_000, description="shorter pauses inside one speaker's speech are bridged"
    )
    crosstalk_margin_db: float = Field(
        6.0,
        ge=0,
        le=60,
        description="a frame is a track's own only if louder than the other track's leakage "
        "(its level + the estimated coupling) by this; see docs/studio-sessions.md",
    )
    diarization_backend: str | None = Field(None, description="e.g. 'pyannote'; None: reject mono")
    diarization_model: str | None = Field(None, description="local dir of a pyannote pipeline")
    activity_db: float = Field(
        10.0,
        ge=0,
        le=60,
        description="dB over a track's noise floor that counts as sound (boundaries)",
    )
    max_boundary_shift_ms: int = Field(
        120, ge=0, le=5000, description="how far boundary refinement may move a VAD edge outwards"
    )


class TurnsConfig(_Section):
    """Overlap classification thresholds (see docs/turn-taking.md for the rationale)."""

    terminal_overlap_s: float = Field(
        0.3,
        ge=0,
        le=60,
        description="a listener who starts at most this long before the current speaker's talk "
        "ends, and then holds the floor, made a turn transition (terminal overlap), not an "
        "interruption; a transcript cut-off mark on the current turn overrides it",
    )
    min_overlap_s: float = Field(
        0.05, ge=0, le=60, description="overlaps shorter than this are ignored"
    )
    same_speaker_join_s: float = Field(
        0.3,
        ge=0,
        le=60,
        description="a speaker's own pauses shorter than this do not end their floor",
    )
    transcript_cues: bool = Field(
        True,
        description="use transcript text as evidence: cut-off marks (trailing --, —, …) and "
        "backchannel words (duetflow.turntaking.cues); false: timing alone",
    )
    balance_excludes_backchannels: bool = True
    acoustic_timing: bool = Field(
        True,
        description="before windows and filters, move every turn's start/end to the acoustic "
        "extent of its speech within its annotation (duetflow.turntaking.timing); false: "
        "analyse the annotated times as given",
    )
    timing_outward_s: float = Field(
        0.05,
        ge=0,
        le=1,
        description="acoustic timing moves an edge at most this far outside its annotation",
    )
    max_slack_s: float = Field(
        0.3,
        ge=0,
        le=2,
        description="mono mixes: the most a boundary inside an overlap is moved by the "
        "dialogue's typical annotation slack",
    )


#: Longest excerpt a window may be (s): a bound, so a typo cannot ask for days of audio.
MAX_WINDOW_S = 4 * 3600.0


class WindowConfig(_Section):
    """Cutting long dialogues into excerpts; lengths are of the *rendered* audio."""

    min_s: float = Field(20.0, gt=0, le=MAX_WINDOW_S, description="shortest rendered dialogue")
    max_s: float = Field(60.0, gt=0, le=MAX_WINDOW_S, description="longest rendered dialogue")
    margin_s: float = Field(
        1.0,
        ge=0,
        le=MAX_WINDOW_S,
        description="selection keeps the predicted rendered length this far inside "
        "[min_s, max_s] (at most half the range), for what the timeline cannot predict",
    )
    policy: Literal["greedy", "non_overlapping", "max_count"] = "greedy"

    @model_validator(mode="after")
    def _order(self) -> WindowConfig:
        if self.min_s > self.max_s:
            raise ValueError(f"window.min_s ({self.min_s}) must be <= window.max_s ({self.max_s})")
        return self

    @property
    def select_range(self) -> tuple[float, float]:
        """Predicted rendered lengths selection accepts: the range less the margin."""
        m = min(self.margin_s, (self.max_s - self.min_s) / 2)
        return self.min_s + m, self.max_s - m


class FilterConfig(_Section):
    """Dialogue filters, applied in ``order``; the first failing one names the rejection."""

    order: list[str] = Field(
        default_factory=lambda: [
            "collection_header",
            "unintelligible",
            "duration",
            "min_turns",
            "interruptions",
            "balance",
            "language",
            "topics",
        ]
    )
    balance_min: float = Field(0.4, ge=0, le=1)
    balance_max: float = Field(0.6, ge=0, le=1)
    min_turns_per_speaker: int = Field(2, ge=0, le=100_000)
    max_interruptions: int = Field(0, ge=0, description="floor-taking interruptions allowed")
    max_non_floor_interruptions: int | None = Field(None, ge=0, description="None: unlimited")
    languages: list[str] | None = Field(None, description="allowed languages; None: any")
    topics: list[str] | None = Field(
        None, description="allowed taxonomy topics (the `topics` filter); None: any"
    )
    unintelligible_max_share: float = Field(
        0.5, ge=0, le=1, description="max share of turns that are only [*] / unintelligible"
    )
    collection_header_patterns: list[str] = Field(
        default_factory=lambda: [r"^\s*爱数智慧语音采集"],
        description="regexes of spoken corpus collection headers (MagicData-RAMC's first segment)",
    )

    @field_validator("collection_header_patterns")
    @classmethod
    def _regexes(cls, patterns: list[str]) -> list[str]:
        for i, p in enumerate(patterns):
            try:
                re.compile(p)
            except re.error as e:
                raise ValueError(f"item {i} {p!r} is not a valid regex: {e}") from None
        return patterns

    @model_validator(mode="after")
    def _balance(self) -> FilterConfig:
        if self.balance_min > self.balance_max:
            raise ValueError(
                f"filters.balance_min ({self.balance_min}) must be <= filters.balance_max "
                f"({self.balance_max})"
            )
        return self


#: Longest re-timed gap between turns (ms); beyond it the "dialogue" is mostly silence.
MAX_GAP_MS = 10_000.0


class RenderConfig(_Section):
    """Re-timing, room tone, loudness and output format."""

    gap_ms_min: float = Field(180.0, ge=0, le=MAX_GAP_MS)
    gap_ms_max: float = Field(230.0, ge=0, le=MAX_GAP_MS)
    same_speaker_pause_cap_s: float = Field(1.0, ge=0, le=60)
    backchannels: Literal["keep", "drop"] = "keep"
    trim_pad_ms: float = Field(
        20.0, ge=0, le=1000, description="pad kept around a turn's acoustic extent"
    )
    fade_ms: float = Field(
        5.0, ge=0, le=1000, description="fade at every cut, so joins do not click"
    )
    room_tone: bool = True
    loudness_target_lufs: float = Field(
        -23.0, ge=-70, le=-5, description="integrated loudness of every output (EBU R128: -23)"
    )
    loudness_tolerance_lu: float = Field(0.5, gt=0, le=10)
    true_peak_ceiling_dbtp: float = Field(-1.0, ge=-30, le=0)
    stems: bool = False
    audio_format: Literal["flac", "wav"] = "flac"

    @model_validator(mode="after")
    def _order(self) -> RenderConfig:
        if self.gap_ms_min > self.gap_ms_max:
            raise ValueError("render.gap_ms_min must be <= render.gap_ms_max")
        return self


class TopicsConfig(_Section):
    """Topic taxonomy and per-source label mappings (``duetflow.topics``, docs/topics.md)."""

    taxonomy: list[str] = Field(
        default_factory=lambda: list(DEFAULT_TAXONOMY),
        description="topic ids every dialogue is mapped into (default: DailyDialog's ten)",
    )
    aliases: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description="per corpus: {source label: taxonomy topic}, over the built-in tables",
    )
    unmapped: str = Field(UNMAPPED, description="topic of labels that map to none")

    @model_validator(mode="after")
    def _ids(self) -> TopicsConfig:
        bad = [t for t in self.taxonomy if normalise_topic(t) != t or not t]
        if bad:
            raise ValueError(f"topics.taxonomy: ids must be normalised snake case, got {bad}")
        known = set(self.taxonomy)
        for corpus, table in self.aliases.items():
            wrong = sorted({v for v in table.values() if v not in known})
            if wrong:
                raise ValueError(
                    f"topics.aliases.{corpus}: {wrong} not in topics.taxonomy {self.taxonomy}"
                )
        return self

    def mapper(self, corpus: str) -> TopicMapper:
        """The label mapper of one source (its built-in table + this config's aliases)."""
        return TopicMapper(corpus, self.taxonomy, self.aliases.get(corpus), self.unmapped)


class MatchConfig(_Section):
    """HH ↔ HM matching: pick HH windows so that, per language, their count and topic
    distribution equal the HM subset's (``duetflow.turntaking.matching``)."""

    enabled: bool = Field(True, description="False: keep every HH window")
    ratio: float = Field(
        1.0, gt=0, description="HH windows wanted per HM window (per language and topic)"
    )


class StudioConfig(_Section):
    """HM checks on studio transcripts."""

    disclosure_phrases: dict[str, list[str]] = Field(
        default_factory=lambda: {
            "en": [
                "as an ai",
                "i'm an ai",
                "i am an ai",
                "i'm an assistant",
                "i am an assistant",
                "language model",
                "i'm a chatbot",
                "i am a virtual assistant",
            ],
            "zh": [
                "我是人工智能",
                "作为一个人工智能",
                "我是ai",
                "我是一个语言模型",
                "我是机器人",
                "我是助手",
            ],
        }
    )
    non_target_min_units: int = Field(
        3,
        ge=1,
        le=10_000,
        description="transcript turns with fewer words/CJK chars skip the language check",
    )
    timing_tolerance_s: float = Field(
        0.05, ge=0, le=60, description="given turn timings may end this far past the audio's end"
    )
    max_track_length_diff_s: float = Field(
        2.0,
        ge=0,
        le=3600,
        description="per-speaker tracks longer/shorter than each other by more: reject",
    )
    opening_line_min_similarity: float = Field(
        0.8,
        ge=0,
        le=1,
        description="HM check: the human's first turn vs the sidecar opening line "
        "(normalised text, difflib ratio); below: rejected opening_line_mismatch",
    )
    licence: str = Field(
        STUDIO_CONSENT,
        description="licence of the studio sessions (SPDX id or LicenseRef- name), stamped on "
        "every studio dialogue unless corpora[].licence overrides it",
    )

    @field_validator("licence")
    @classmethod
    def _licence(cls, v: str) -> str:
        return _licence_value(v)


VoiceCategory = Literal["HM", "HH"]


def _hm_voices() -> list[VoiceCategory]:
    return ["HM"]


class SynthConfig(_Section):
    """Pseudo-human (PH) synthesis."""

    enabled: bool = True
    scripts: Path | None = Field(None, description="folder of script JSON files or a JSONL file")
    from_hh_transcripts: bool = False
    backend: str = "default"
    backends: dict[str, list[str]] | None = Field(
        None,
        description="TTS backends per script language, e.g. {en: [dia, spark], zh: [spark]}; "
        "None: `backend` for every language",
    )
    backend_options: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="per backend: synth settings it overrides, e.g. {dia: {model_path: ...}}",
    )
    voice_categories: list[VoiceCategory] = Field(
        default_factory=_hm_voices,
        description="dialogue categories whose human participants lend their voices "
        "(the seed study: HM studio participants only)",
    )
    model_path: str | None = None
    codec_path: str | None = None
    device: str = "cpu"
    reference_min_s: float = Field(5.0, gt=0, le=600)
    reference_max_s: float = Field(10.0, gt=0, le=600)
    voice_policy: Literal["mixed_gender", "any"] = "mixed_gender"
    ambience: bool = True
    similarity_min: float | None = Field(
        None, ge=-1, le=1, description="None: report only, never reject"
    )
    clone_qa: bool | None = Field(
        None, description="clone-similarity QA: None: when Resemblyzer is installed; False: skip"
    )
    chars_per_s_min: float = Field(4.0, ge=0, le=1000)
    chars_per_s_max: float = Field(30.0, gt=0, le=1000)
    max_retries: int = Field(2, ge=0, le=100)
    concurrency: int = Field(1, ge=1, le=1024, description="concurrent TTS tasks (1 per GPU)")

    @model_validator(mode="after")
    def _order(self) -> SynthConfig:
        for lo, hi in (
            ("reference_min_s", "reference_max_s"),
            ("chars_per_s_min", "chars_per_s_max"),
        ):
            if getattr(self, lo) > getattr(self, hi):
                raise ValueError(
                    f"synth.{lo} ({getattr(self, lo)}) must be <= synth.{hi} ({getattr(self, hi)})"
                )
        return self

    @model_validator(mode="after")
    def _backend_options(self) -> SynthConfig:
        allowed = set(type(self).model_fields) - {"backends", "backend_options", "backend"}
        for name, opts in self.backend_options.items():
            unknown = sorted(set(opts) - allowed)
            if unknown:
                raise ValueError(f"synth.backend_options.{name}: unknown keys {unknown}")
        return self

    def backends_for(self, language: str) -> list[str]:
        """The TTS backends that voice scripts of ``language`` (``zh-CN`` → ``zh``'s list)."""
        if self.backends is None:
            return [self.backend]
        lang = language.lower().replace("_", "-")
        short = "zh" if lang.startswith(("zh", "cmn")) else lang.split("-")[0]
        for key in (lang, short):
            if key in self.backends:
                return list(self.backends[key])
        return []

    def all_backends(self) -> list[str]:
        """Every backend some language uses, sorted."""
        if self.backends is None:
            return [self.backend]
        return sorted({b for names in self.backends.values() for b in names})

    def for_backend(self, name: str) -> SynthConfig:
        """These settings as backend ``name`` sees them (``backend_options[name]`` applied)."""
        return self.model_copy(update={"backend": name, **self.backend_options.get(name, {})})


class LLMConfig(_Section):
    """An OpenAI-compatible chat endpoint for script generation (``duetflow.scriptgen``).

    Any server that speaks the API works: a hosted one, vLLM, Ollama, a llama.cpp server. Unset
    ``base_url``/``model`` (the default) means no LLM: script generation is off.
    """

    base_url: str | None = Field(None, description="e.g. http://127.0.0.1:8000/v1")
    model: str | None = None
    api_key_env: str = Field(
        "OPENAI_API_KEY", description="environment variable holding the API key (may be unset)"
    )
    temperature: float = Field(0.7, ge=0, le=2)
    seed: int | None = Field(None, description="request seed; None: derived from the run seed")
    max_retries: int = Field(
        3, ge=0, description="re-asks after an invalid answer; also retries of 429/5xx/timeouts"
    )
    timeout_s: float = Field(120.0, gt=0)
    backoff_s: float = Field(1.0, ge=0, description="first retry delay (doubles each retry)")
    max_backoff_s: float = Field(30.0, ge=0)
    max_tokens: int | None = Field(2048, ge=1)
    concurrency: int = Field(4, ge=1, description="requests in flight")

    @property
    def configured(self) -> bool:
        return bool(self.base_url and self.model)


class ScriptsConfig(_Section):
    """What LLM script generation makes and the checks every answer must pass."""

    topics: list[str] | None = Field(
        None, description="topics to generate for; None: the whole taxonomy"
    )
    per_topic: int = Field(0, ge=0, description="scripts per topic and language (0: none)")
    languages: list[str] = Field(default_factory=lambda: ["en"])
    rewrite_hh: bool = Field(
        False, description="build_dataset: rewrite every kept HH transcript with the LLM"
    )
    speaking_s_min: float = Field(
        SCRIPT_SPEECH_S[0], gt=0, description="generated scripts: seconds of speech, at least"
    )
    speaking_s_max: float = Field(
        SCRIPT_SPEECH_S[1], gt=0, description="generated scripts: seconds of speech, at most"
    )
    min_lines: int = Field(4, ge=2)

    @model_validator(mode="after")
    def _order(self) -> ScriptsConfig:
        if self.speaking_s_min > self.speaking_s_max:
            raise ValueError("scripts.speaking_s_min must be <= scripts.speaking_s_max")
        return self


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
    studio: StudioConfig = StudioConfig()
    topics: TopicsConfig = TopicsConfig()
    match: MatchConfig = MatchConfig()
    llm: LLMConfig = LLMConfig()
    scripts: ScriptsConfig = ScriptsConfig()
    synth: SynthConfig = SynthConfig()
    release: ReleaseConfig = ReleaseConfig()
    runner: RunnerConfig = RunnerConfig()

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


def _set_path(tree: dict[str, Any], keys: list[str], value: Any) -> None:
    node = tree
    for k in keys[:-1]:
        nxt = node.setdefault(k, {})
        if not isinstance(nxt, dict):
            raise ConfigError(f"environment override: {'.'.join(keys)} goes through a non-section")
        node = nxt
    node[keys[-1]] = value


def env_overrides(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``DUETFLOW__RENDER__GAP_MS_MIN=190`` → ``{"render": {"gap_ms_min": 190}}``.

    A value that is not a YAML scalar/flow value raises ConfigError naming the variable.
    """
    environ = os.environ if environ is None else environ
    out: dict[str, Any] = {}
    for key, raw in sorted(environ.items()):
        path = _env_path(key)
        if path:
            try:
                value = load_yaml(raw, max_nodes=1000)
            except yaml.YAMLError as e:
                first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                raise ConfigError(
                    f"environment {key}: cannot parse {brief_repr(raw)} as a YAML value ({first})"
                ) from None
            _set_path(out, path, value)
    return out


def _env_path(key: str) -> list[str]:
    if not key.startswith(ENV_PREFIX):
        return []
    return [p.lower() for p in key[len(ENV_PREFIX) :].split("__") if p]


def _deep_merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for k, v in extra.items():
        if isinstance(v, Mapping) and isinstance(merged.get(k), dict):
            merged[k] = _deep_merge(merged[k], v)
        else:
            merged[k] = v
    return merged


def _format_errors(
    err: ValidationError, source: str, env_keys: Mapping[tuple[str, ...], str] | None = None
) -> str:
    """One line per error, naming the key (and the environment variable that set it)."""
    lines = []
    for e in err.errors():
        parts = tuple(str(p) for p in e["loc"])
        loc = ".".join(parts) or "<root>"
        where = source
        for n in range(len(parts), 0, -1):  # the variable that set this key or a section above
            if env_keys and parts[:n] in env_keys:
                where = f"environment {env_keys[parts[:n]]}"
                break
        else:  # a section-level check (min <= max ...): the variables that set keys inside it
            inside = sorted(v for k, v in (env_keys or {}).items() if k[: len(parts)] == parts)
            if parts and inside:
                where = f"environment {', '.join(inside)}"
        if e["type"] == "extra_forbidden":
            lines.append(f"{where}: unknown key '{loc}'")
        else:
            msg = str(e["msg"]).removeprefix("Value error, ")
            lines.append(f"{where}: {loc}: {msg} (got {brief_repr(e.get('input'))})")
    return "\n".join(lines)


def build_config(
    data: Mapping[str, Any] | None = None,
    *,
    source: str = "<config>",
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> RunConfig:
    """Validate a config mapping + env overrides + explicit overrides (later wins).

    Every bound is checked here; a bad value raises ConfigError with one line per problem
    naming the key (and the ``DUETFLOW__...`` variable when one set it).
    """
    env = os.environ if environ is None else environ
    merged = _deep_merge(dict(data or {}), env_overrides(env))
    env_keys = {tuple(p): k for k in env if (p := _env_path(k))}
    if overrides:
        merged = _deep_merge(merged, overrides)
    try:
        return RunConfig.model_validate(merged)
    except ValidationError as err:
        raise ConfigError(_format_errors(err, source, env_keys)) from None


def load_config(
    path: str | Path | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> RunConfig:
    """Load a YAML config file (or defaults when ``path`` is None).

    Relative paths inside the file are resolved against the file's folder, so a config can be
    run from anywhere.
    """
    if path is None:
        return build_config({}, environ=environ, overrides=overrides)
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{p}: config file not found") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{p}: not UTF-8 (byte {e.start})") from None
    try:
        data = load_yaml(text) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{p}: invalid YAML: {' '.join(str(e).split())}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: top level must be a mapping, got {type(data).__name__}")
    data = _resolve_relative(data, p.parent)
    return build_config(data, source=str(p), environ=environ, overrides=overrides)


def _resolve_relative(data: dict[str, Any], base: Path) -> dict[str, Any]:
    def fix(v: Any) -> Any:
        if isinstance(v, str) and v and not os.path.isabs(v) and "://" not in v:
            return str((base / v).resolve())
        return v

    out = dict(data)
    if "workdir" in out:
        out["workdir"] = fix(out["workdir"])
    if isinstance(out.get("corpora"), list):
        out["corpora"] = [
            {**c, "root": fix(c.get("root"))} if isinstance(c, dict) else c for c in out["corpora"]
        ]
    for sec, key in (("synth", "scripts"), ("release", "store"), ("synth", "model_path")):
        if isinstance(out.get(sec), dict) and out[sec].get(key):
            out[sec] = {**out[sec], key: fix(out[sec][key])}
    return out
