"""Config sections of the sources: corpora to ingest, studio sessions, topics."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from duetflow.config.section import _licence_value, _Section
from duetflow.licences import STUDIO_CONSENT
from duetflow.topics import DEFAULT_TAXONOMY, UNMAPPED, TopicMapper, normalise_topic


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

    vad: Literal["webrtc", "silero"] = Field(
        "webrtc",
        description="speech detector of studio turn finding: webrtc, or silero (needs "
        "duetflow[quality]); see docs/studio-sessions.md for the measured comparison",
    )
    echo: Literal["auto", "off"] = Field(
        "auto",
        description="auto: in HM tracks/stereo sessions the system's track is the echo "
        "reference; its return in the participant's mic is modelled with the room's decay "
        "(estimated per session) before turns are attributed; off: one fixed coupling",
    )
    echo_max_delay_ms: int = Field(
        60, ge=0, le=1000, description="longest loudspeaker-to-mic delay the echo model covers"
    )
    echo_max_rt60_s: float = Field(
        1.2, ge=0.1, le=5.0, description="longest reverberation time the echo model considers"
    )

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
    require_checks: bool = Field(
        False,
        description="reject (unchecked_session) an HM session whose disclosure / language / "
        "opening-line checks could not run: no transcript and no (working) ASR",
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


class AsrConfig(_Section):
    """An OpenAI-compatible transcription endpoint for untranscribed HM studio sessions."""

    base_url: str | None = Field(
        None,
        description="e.g. http://127.0.0.1:8000/v1 (faster-whisper server, vLLM); "
        "None: no ASR, untranscribed HM sessions stay 'not checked'",
    )
    model: str = Field("whisper-1", min_length=1, description="model name sent to the endpoint")
    api_key_env: str = Field(
        "DUETFLOW_ASR_API_KEY", description="environment variable holding the API key, if any"
    )
    timeout_s: float = Field(
        120.0, gt=0, le=3600, description="total deadline of one transcription, retries included"
    )
    retries: int = Field(2, ge=0, le=10, description="retries after a timeout or a 5xx/429")
    max_upload_mb: float = Field(
        25.0, gt=0, le=1024, description="a track larger than this (16 kHz PCM WAV) is not sent"
    )
    max_response_bytes: int = Field(
        1 << 20, ge=1024, le=1 << 28, description="a longer answer is an error, not read on"
    )
