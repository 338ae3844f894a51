"""Config sections of pseudo-human data: TTS synthesis, the LLM endpoint, script generation."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from duetflow.config.section import _Section, language_keys

VoiceCategory = Literal["HM", "HH"]

#: Speech time (s) the seed study's two-speaker scripts run to (the estimate of
#: :mod:`duetflow.tts.speaking_rate`).
SCRIPT_SPEECH_S = (40.0, 50.0)


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
    match_human_length: bool = Field(
        True,
        description="cut each script at a line boundary to the length of an HH/HM dialogue "
        "drawn from its language and topic (docs/equalisation.md); False: every line is voiced",
    )
    match_human_rate: bool = Field(
        True,
        description="speak each script at the speaking rate of the human dialogue its length "
        "is drawn from (backends that set a pace: eSpeak NG; docs/equalisation.md); False: "
        "at the voice reference's own pace",
    )
    match_topic_min: int = Field(
        8,
        ge=0,
        le=1_000_000,
        description="draw a script's human dialogue among those of its topic when the "
        "language has at least this many of it, else among the whole language; 0: never by "
        "topic",
    )
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
        for key in language_keys(language):
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
    timeout_s: float = Field(
        120.0,
        gt=0,
        le=3600,
        description="total deadline of one HTTP request: connect, send and the whole answer "
        "(an answer that trickles in is cut off here)",
    )
    max_answer_bytes: int = Field(
        4 << 20, ge=1024, le=1 << 30, description="largest HTTP answer body read, in bytes"
    )
    backoff_s: float = Field(
        1.0, ge=0, le=3600, description="first retry delay (doubles each retry)"
    )
    max_backoff_s: float = Field(30.0, ge=0, le=3600)
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
    dedup_threshold: float | None = Field(
        None,
        gt=0,
        le=1,
        description="merge generated scripts of one topic at least this similar (None: keep all)",
    )
    dedup_method: Literal["tfidf", "edit"] = Field(
        "tfidf", description="similarity of near-duplicates: TF-IDF cosine or edit similarity"
    )

    @model_validator(mode="after")
    def _order(self) -> ScriptsConfig:
        if self.speaking_s_min > self.speaking_s_max:
            raise ValueError("scripts.speaking_s_min must be <= scripts.speaking_s_max")
        return self
