"""The one configuration model of a pipeline run.

A run is described by a YAML file (every key optional, defaults below) plus environment
overrides ``DUETFLOW__SECTION__KEY=value`` (values parsed as YAML scalars). Unknown keys are an
error naming the key, so a typo never silently falls back to a default.

Each section hashes separately (:meth:`RunConfig.section_hash`): a cache key built from the
sections a stage reads means changing one threshold recomputes only the stages that read it.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from duetflow.errors import ConfigError
from duetflow.licences import STUDIO_CONSENT, check_licence

ENV_PREFIX = "DUETFLOW__"


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
    hangover_ms: int = Field(150, ge=0, description="speech kept on after the last voiced frame")
    min_speech_ms: int = Field(120, ge=0, description="shorter voiced runs are dropped as clicks")
    min_silence_ms: int = Field(
        300, ge=0, description="shorter pauses inside one speaker's speech are bridged"
    )
    crosstalk_margin_db: float = Field(
        6.0,
        ge=0,
        description="a frame is a track's own only if louder than the other track's leakage "
        "(its level + the estimated coupling) by this; see docs/studio-sessions.md",
    )
    diarization_backend: str | None = Field(None, description="e.g. 'pyannote'; None: reject mono")
    diarization_model: str | None = Field(None, description="local dir of a pyannote pipeline")
    activity_db: float = Field(
        10.0, ge=0, description="dB over a track's noise floor that counts as sound (boundaries)"
    )
    max_boundary_shift_ms: int = Field(
        120, ge=0, description="how far boundary refinement may move a VAD edge outwards"
    )


class TurnsConfig(_Section):
    """Overlap classification thresholds (see docs/turn-taking.md for the rationale)."""

    terminal_overlap_s: float = Field(
        0.3,
        ge=0,
        description="a listener who starts at most this long before the current speaker's talk "
        "ends, and then holds the floor, made a turn transition (terminal overlap), not an "
        "interruption; a transcript cut-off mark on the current turn overrides it",
    )
    min_overlap_s: float = Field(0.05, ge=0, description="overlaps shorter than this are ignored")
    same_speaker_join_s: float = Field(
        0.3, ge=0, description="a speaker's own pauses shorter than this do not end their floor"
    )
    transcript_cues: bool = Field(
        True,
        description="use transcript text as evidence: cut-off marks (trailing --, —, …) and "
        "backchannel words (duetflow.cues); false: timing alone",
    )
    balance_excludes_backchannels: bool = True


class WindowConfig(_Section):
    """Cutting long dialogues into excerpts; lengths are of the *rendered* audio."""

    min_s: float = Field(20.0, gt=0, description="shortest rendered dialogue")
    max_s: float = Field(60.0, gt=0, description="longest rendered dialogue")
    margin_s: float = Field(
        1.0,
        ge=0,
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
        ]
    )
    balance_min: float = Field(0.4, ge=0, le=1)
    balance_max: float = Field(0.6, ge=0, le=1)
    min_turns_per_speaker: int = Field(2, ge=0)
    max_interruptions: int = Field(0, ge=0, description="floor-taking interruptions allowed")
    max_non_floor_interruptions: int | None = Field(None, ge=0, description="None: unlimited")
    languages: list[str] | None = Field(None, description="allowed languages; None: any")
    unintelligible_max_share: float = Field(
        0.5, ge=0, le=1, description="max share of turns that are only [*] / unintelligible"
    )
    collection_header_patterns: list[str] = Field(
        default_factory=lambda: [r"^\s*爱数智慧语音采集"],
        description="regexes of spoken corpus collection headers (MagicData-RAMC's first segment)",
    )


class RenderConfig(_Section):
    """Re-timing, room tone, loudness and output format."""

    gap_ms_min: float = Field(180.0, ge=0)
    gap_ms_max: float = Field(230.0, ge=0)
    same_speaker_pause_cap_s: float = Field(1.0, ge=0)
    backchannels: Literal["keep", "drop"] = "keep"
    trim_pad_ms: float = Field(20.0, ge=0, description="pad kept around a turn's acoustic extent")
    fade_ms: float = Field(5.0, ge=0, description="fade at every cut, so joins do not click")
    room_tone: bool = True
    loudness_target_lufs: float = -23.0
    loudness_tolerance_lu: float = Field(0.5, gt=0)
    true_peak_ceiling_dbtp: float = -1.0
    stems: bool = False
    audio_format: Literal["flac", "wav"] = "flac"

    @model_validator(mode="after")
    def _order(self) -> RenderConfig:
        if self.gap_ms_min > self.gap_ms_max:
            raise ValueError("render.gap_ms_min must be <= render.gap_ms_max")
        return self


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
        3, ge=1, description="transcript turns with fewer words/CJK chars skip the language check"
    )
    timing_tolerance_s: float = Field(
        0.05, ge=0, description="given turn timings may end this far past the audio's end"
    )
    max_track_length_diff_s: float = Field(
        2.0, ge=0, description="per-speaker tracks longer/shorter than each other by more: reject"
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


class SynthConfig(_Section):
    """Pseudo-human (PH) synthesis."""

    enabled: bool = True
    scripts: Path | None = Field(None, description="folder of script JSON files or a JSONL file")
    from_hh_transcripts: bool = False
    backend: str = "default"
    model_path: str | None = None
    codec_path: str | None = None
    device: str = "cpu"
    reference_min_s: float = 5.0
    reference_max_s: float = 10.0
    voice_policy: Literal["mixed_gender", "any"] = "mixed_gender"
    ambience: bool = True
    similarity_min: float | None = Field(None, description="None: report only, never reject")
    chars_per_s_min: float = 4.0
    chars_per_s_max: float = 30.0
    max_retries: int = Field(2, ge=0)
    concurrency: int = Field(1, ge=1, description="concurrent TTS tasks (1 per GPU)")


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
    balance_test: bool = False
    multipart_threshold_mb: int = 8
    max_attempts: int = 5


#: Release settings that say where/how a release travels, not what it contains.
TRANSPORT_FIELDS = (
    "store",
    "endpoint_url",
    "region",
    "release_id",
    "multipart_threshold_mb",
    "max_attempts",
)


class RunnerConfig(_Section):
    """Where Prefect runs tasks."""

    kind: Literal["threads", "dask"] = "threads"
    max_workers: int = Field(4, ge=1)
    dask_address: str | None = None
    dask_workers: int = Field(2, ge=1)
    shard_size: int = Field(16, ge=1, description="dialogues per task run")


class RunConfig(_Section):
    """Everything a pipeline run needs. Defaults run the bundled sample data."""

    seed: int = 1234
    sample_rate: int = Field(16000, description="output sample rate")
    workdir: Path = Path("./duetflow-demo/work")
    corpora: list[CorpusSpec] = Field(default_factory=list)
    segment: SegmentConfig = SegmentConfig()
    turns: TurnsConfig = TurnsConfig()
    window: WindowConfig = WindowConfig()
    filters: FilterConfig = FilterConfig()
    render: RenderConfig = RenderConfig()
    studio: StudioConfig = StudioConfig()
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

        What a release records and hashes: the same content published to a local store and to
        S3 gets the same id, RELEASE.json and report.
        """
        where = {k: ReleaseConfig.model_fields[k].default for k in TRANSPORT_FIELDS}
        return self.model_copy(update={"release": self.release.model_copy(update=where)})


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
    """``DUETFLOW__RENDER__GAP_MS_MIN=190`` → ``{"render": {"gap_ms_min": 190}}``."""
    environ = os.environ if environ is None else environ
    out: dict[str, Any] = {}
    for key, raw in environ.items():
        if not key.startswith(ENV_PREFIX):
            continue
        path = [p.lower() for p in key[len(ENV_PREFIX) :].split("__") if p]
        if path:
            _set_path(out, path, yaml.safe_load(raw))
    return out


def _deep_merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for k, v in extra.items():
        if isinstance(v, Mapping) and isinstance(merged.get(k), dict):
            merged[k] = _deep_merge(merged[k], v)
        else:
            merged[k] = v
    return merged


def _format_errors(err: ValidationError, source: str) -> str:
    lines = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "<root>"
        if e["type"] == "extra_forbidden":
            lines.append(f"{source}: unknown key '{loc}'")
        else:
            lines.append(f"{source}: {loc}: {e['msg']} (got {e.get('input')!r})")
    return "\n".join(lines)


def build_config(
    data: Mapping[str, Any] | None = None,
    *,
    source: str = "<config>",
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> RunConfig:
    """Validate a config mapping + env overrides + explicit overrides (later wins)."""
    merged = _deep_merge(dict(data or {}), env_overrides(environ))
    if overrides:
        merged = _deep_merge(merged, overrides)
    try:
        return RunConfig.model_validate(merged)
    except ValidationError as err:
        raise ConfigError(_format_errors(err, source)) from None


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
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{p}: invalid YAML: {e}") from None
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
