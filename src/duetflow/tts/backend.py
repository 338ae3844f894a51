"""The TTS backend protocol, the records it exchanges, and the registry.

A backend turns texts into waveforms in one *voice*: a reference speaker described by a clean
5–10 s clip with its transcript (see :mod:`duetflow.tts.voices`). Cloning backends (Dia, Spark)
condition on the clip; the offline ``default`` backend only picks a matching stock voice and
says so through ``clones = False`` and its provenance.

Backends are registered under the entry-point group ``duetflow.tts`` and are built lazily, once
per process (a Prefect worker or Dask worker keeps its model loaded between shards).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Literal, Protocol, runtime_checkable

from duetflow.audio.io import Audio
from duetflow.config import SynthConfig
from duetflow.errors import BackendError, ConfigError

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "duetflow.tts"

# Fallback when the distribution's entry points are not installed (e.g. running from a checkout).
_BUILTIN: dict[str, str] = {
    "default": "duetflow.tts.espeak:EspeakBackend",
    "dia": "duetflow.tts.dia:DiaBackend",
    "spark": "duetflow.tts.spark:SparkBackend",
}


class SynthesisError(BackendError):
    """One item could not be synthesized acceptably (guard exhausted its retries, no tokens).

    Unlike other :class:`BackendError` (a missing model stops the run), this rejects only the
    dialogue at hand; ``reason`` becomes the rejection reason code.
    """

    def __init__(self, message: str, reason: str = "synthesis_failed") -> None:
        self.reason = reason
        super().__init__(message)


@dataclass(frozen=True)
class Voice:
    """A reference speaker to clone: clip + transcript + what was measured about it.

    ``clip_path`` holds the reference clip (mono, ``sample_rate``); ``noise_path`` the room tone
    taken from the reference recording's non-speech regions (None when the recording is
    digitally clean), to be laid under the synthetic dialogue at ``snr_db``.
    """

    speaker_id: str
    language: str
    gender: Literal["M", "F"] | None
    pitch_hz: float | None
    clip_id: str
    clip_path: str
    transcript: str
    duration_s: float
    sample_rate: int
    snr_db: float | None
    noise_path: str | None
    source_dialogue_id: str
    gender_source: str = "manifest"
    #: licence of the source dialogue (its ``licence`` column); PH dialogues inherit it
    licence: str = ""
    #: who the speaker is beyond its dialogue (``corpus:person``, see
    #: :func:`duetflow.tts.voice_sources.person_key`); the pool holds one voice per person, and a PH
    #: dialogue's speakers are named by it (two sessions' ``user`` are two people)
    person: str = ""
    #: the pace to speak at, in spoken characters per second of speech as the cue audit reads a
    #: dialogue (``speech_rate_cps``): set per script from a drawn human dialogue
    #: (``synth.match_human_rate``, :mod:`duetflow.tts.length_match`); None: the reference's own
    #: pace. Backends that set a rate (eSpeak NG) follow it; cloning backends take the pace from
    #: the clip and ignore it.
    speaking_rate_cps: float | None = None

    @property
    def name(self) -> str:
        """The id a PH dialogue gives this voice's speaker: the person, else the speaker id."""
        return self.person or self.speaker_id


@dataclass(frozen=True)
class Synthesis:
    """One synthesized utterance at the backend's native rate, with how it was obtained.

    ``seed`` is the seed that produced the kept audio; ``attempts`` > 1 means the runaway /
    truncation guard rejected earlier tries (``notes`` says why), so retries are auditable.
    """

    audio: Audio
    sample_rate: int
    seed: int
    attempts: int = 1
    notes: tuple[str, ...] = ()


@runtime_checkable
class TTSBackend(Protocol):
    """What the pipeline needs from a TTS engine."""

    name: str
    clones: bool  # True when the output is conditioned on the reference clip

    @property
    def sample_rate(self) -> int:
        """Native output rate; the assembler resamples to the run's rate."""
        ...

    def synthesize(self, texts: Sequence[str], voice: Voice, seed: int) -> list[Synthesis]:
        """Speak each text in ``voice``; batch internally where the engine supports it.

        Same texts + voice + seed → same audio (on the same device and library versions).
        """
        ...

    def provenance(self) -> dict[str, Any]:
        """JSON-able facts for the manifest: engine, model path + checksum, cloning, licence.

        ``output_licence`` is the licence that binds what the backend generates (its weights'
        SPDX id, or None when the output is unrestricted); a PH dialogue's ``licence`` combines
        it with the licences of the voices' source dialogues. A backend that leaves it out is
        recorded as ``LicenseRef-undeclared``.
        """
        ...


def available_backends() -> list[str]:
    """Registered backend names (entry points, plus the built-in ones)."""
    names = set(_BUILTIN)
    names.update(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))
    return sorted(names)


def _resolve(name: str) -> type[Any]:
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            loaded: type[Any] = ep.load()
            return loaded
    target = _BUILTIN.get(name)
    if target is None:
        raise ConfigError(
            f"synth.backend: unknown TTS backend {name!r}; registered: {available_backends()}"
        )
    module, _, attr = target.partition(":")
    import importlib

    cls: type[Any] = getattr(importlib.import_module(module), attr)
    return cls


_CACHE: dict[tuple[str, str], TTSBackend] = {}
_LOCK = threading.Lock()


def load_backend(name: str, config: SynthConfig) -> TTSBackend:
    """The backend ``name`` built from ``config``, once per process (cached by config)."""
    key = (name, config.model_dump_json())
    with _LOCK:
        backend = _CACHE.get(key)
        if backend is None:
            cls = _resolve(name)
            try:
                backend = cls(config)
            except ImportError as e:
                raise BackendError(
                    f"TTS backend {name!r} needs an optional dependency ({e.name}); "
                    "install the 'tts' extra: pip install 'duetflow[tts]'"
                ) from None
            if not isinstance(backend, TTSBackend):
                raise BackendError(f"{cls!r} does not implement the TTSBackend protocol")
            log.info("loaded TTS backend %s (%s)", name, cls.__name__)
            _CACHE[key] = backend
        return backend


def clear_backend_cache() -> None:
    """Drop loaded backends (tests; freeing a GPU)."""
    with _LOCK:
        _CACHE.clear()


def expected_duration_bounds(text: str, config: SynthConfig) -> tuple[float, float]:
    """Plausible (min, max) seconds for ``text`` from the configured speaking-rate band.

    Used by generative backends' runaway/truncation guards and by clone QA, so both agree.
    """
    n = max(1, count_speech_chars(text))
    return n / config.chars_per_s_max, n / config.chars_per_s_min


def count_speech_chars(text: str) -> int:
    """Characters that take time to say: letters/digits; a CJK character counts as three.

    A CJK syllable takes about as long as three Latin letters, so one rate band fits both.
    """
    n = 0
    for ch in text:
        if "\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff":
            n += 3
        elif ch.isalnum():
            n += 1
    return n
