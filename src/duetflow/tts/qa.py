"""Clone QA: does the synthetic speaker sound like its reference, and is the speaking rate sane?

* **Speaker similarity**: cosine similarity of Resemblyzer (GE2E d-vector) embeddings of each
  speaker's synthesized speech and of its reference clip. Resemblyzer ships its weights inside
  the wheel, so this runs offline. It is part of the ``tts`` extra; without it QA records
  ``"not measured"`` and never rejects on similarity.
* **Duration per character**: every utterance's speech-character rate must lie inside
  ``[synth.chars_per_s_min, synth.chars_per_s_max]`` (a CJK character counts as three), which
  catches truncated and runaway generations that slipped past a backend's own guard.

Scores go into the dialogue's provenance (``clone_similarity_a/b``); thresholds from config turn
failures into rejections with a reason code.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from duetflow.audio.io import Audio, read_seconds, resample
from duetflow.config import SynthConfig
from duetflow.tts.backend import Voice, count_speech_chars

log = logging.getLogger(__name__)

QA_RATE = 16000  # Resemblyzer's rate


class SpeakerEncoder:
    """Lazy Resemblyzer encoder (one per process); ``available`` is False without the extra."""

    _instance: SpeakerEncoder | None = None
    _guard = threading.Lock()

    def __init__(self) -> None:
        self.error: str | None = None
        self._encoder: Any = None
        self._preprocess: Any = None
        try:
            from resemblyzer import VoiceEncoder, preprocess_wav
        except ImportError as e:  # the tts extra is optional
            self.error = f"resemblyzer not installed ({e.name})"
            log.warning("clone QA disabled: %s", self.error)
            return
        self._encoder = VoiceEncoder("cpu", verbose=False)
        self._preprocess = preprocess_wav
        self.lock = threading.Lock()
        self._refs: dict[str, np.ndarray[Any, np.dtype[np.float32]] | None] = {}

    @classmethod
    def get(cls) -> SpeakerEncoder:
        with cls._guard:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance

    @property
    def available(self) -> bool:
        return self._encoder is not None

    def embed(self, samples: Audio, sr: int) -> np.ndarray[Any, np.dtype[np.float32]] | None:
        """L2-normalised 256-d embedding, or None when the clip has too little speech."""
        if self._encoder is None:
            return None
        import torch

        x = resample(samples.astype(np.float32), sr, QA_RATE)
        with self.lock:
            wav = self._preprocess(x, source_sr=QA_RATE)
            if len(wav) < QA_RATE // 2:
                return None
            with torch.inference_mode():
                emb = self._encoder.embed_utterance(wav)
        return np.asarray(emb, dtype=np.float32)

    def embed_reference(self, voice: Voice) -> np.ndarray[Any, np.dtype[np.float32]] | None:
        """Embedding of a reference clip, cached by clip id (references recur across dialogues)."""
        if voice.clip_id not in self._refs:
            if len(self._refs) >= 512:
                self._refs.clear()
            ref, sr = read_seconds(voice.clip_path)
            self._refs[voice.clip_id] = self.embed(ref, sr)
        return self._refs[voice.clip_id]


def similarity(enc: SpeakerEncoder, a: Audio, sr_a: int, b: Audio, sr_b: int) -> float | None:
    """Cosine similarity of two clips' speaker embeddings (None when not measurable)."""
    ea, eb = enc.embed(a, sr_a), enc.embed(b, sr_b)
    if ea is None or eb is None:
        return None
    return float(np.dot(ea, eb))


@dataclass(frozen=True)
class CloneQA:
    similarity_a: float | None
    similarity_b: float | None
    measured: bool
    note: str = ""
    rate_failures: tuple[tuple[int, float], ...] = ()  # (line index, chars per second)
    chars_per_s: tuple[float, ...] = field(default_factory=tuple)

    def provenance(self) -> dict[str, Any]:
        return {
            "clone_similarity_a": None
            if self.similarity_a is None
            else round(self.similarity_a, 4),
            "clone_similarity_b": None
            if self.similarity_b is None
            else round(self.similarity_b, 4),
            "clone_qa": "measured (resemblyzer GE2E cosine)" if self.measured else self.note,
            "chars_per_s": [round(c, 2) for c in self.chars_per_s],
        }

    def failure(self, config: SynthConfig) -> tuple[str, str] | None:
        """``(reason, detail)`` when a configured threshold fails, else None."""
        if self.rate_failures:
            i, cps = self.rate_failures[0]
            return (
                "speaking_rate",
                f"line {i}: {cps:.1f} chars/s outside "
                f"[{config.chars_per_s_min}, {config.chars_per_s_max}]",
            )
        if config.similarity_min is not None and self.measured:
            for label, s in (("A", self.similarity_a), ("B", self.similarity_b)):
                if s is not None and s < config.similarity_min:
                    return (
                        "clone_similarity",
                        f"speaker {label}: similarity {s:.3f} < {config.similarity_min}",
                    )
        return None


def rate_failures(
    texts: Sequence[str], utterances: Sequence[Audio], sr: int, config: SynthConfig
) -> tuple[list[float], list[tuple[int, float]]]:
    rates: list[float] = []
    bad: list[tuple[int, float]] = []
    for i, (text, u) in enumerate(zip(texts, utterances, strict=True)):
        dur = len(u) / sr
        cps = count_speech_chars(text) / dur if dur > 0 else float("inf")
        rates.append(cps)
        if not config.chars_per_s_min <= cps <= config.chars_per_s_max:
            bad.append((i, cps))
    return rates, bad


def clone_qa(
    texts: Sequence[str],
    speakers: Sequence[int],
    utterances: Sequence[Audio],
    sr: int,
    voices: tuple[Voice, Voice],
    config: SynthConfig,
    encoder: SpeakerEncoder | None,
) -> CloneQA:
    """QA of one dialogue: ``speakers[i]`` (0 = A, 1 = B) spoke ``utterances[i]`` at ``sr``."""
    rates, bad = rate_failures(texts, utterances, sr, config)
    if encoder is None or not encoder.available:
        note = "not measured: " + (encoder.error if encoder and encoder.error else "disabled")
        return CloneQA(None, None, False, note, tuple(bad), tuple(rates))
    sims: list[float | None] = []
    for k, voice in enumerate(voices):
        own = [u for u, s in zip(utterances, speakers, strict=True) if s == k]
        e_ref = encoder.embed_reference(voice)
        e_syn = encoder.embed(np.concatenate(own), sr) if own else None
        sims.append(None if e_ref is None or e_syn is None else float(np.dot(e_ref, e_syn)))
    return CloneQA(sims[0], sims[1], True, "", tuple(bad), tuple(rates))
