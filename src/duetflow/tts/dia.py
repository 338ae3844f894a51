"""``dia`` backend: Nari Labs Dia through transformers (``DiaForConditionalGeneration``).

Voice cloning by continuation: the reference clip (resampled to 44.1 kHz mono) is the audio
prompt and its transcript comes *first* in the text, tagged as the same speaker::

    [S1] <reference transcript> [S1] <line to speak> [S1]

(the trailing tag keeps Dia from clipping the ending). ``batch_decode(...,
audio_prompt_len=...)`` returns only the new speech. Generation parameters are explicit
(:data:`GENERATION`): a checkpoint's ``generation_config.json`` is never trusted to set
``do_sample``. ``torch.manual_seed`` is set before every ``generate`` (there is no seed
argument); same seed + device + library versions → same audio.

Offline loading: the processor is built from its parts and the DAC codec is loaded from its own
local folder (``synth.codec_path``), because ``DiaProcessor.from_pretrained`` always reloads the
codec from the hub id recorded in ``processor_config.json``. Models load lazily, once per
process, on the first call.

**Runaway / truncation guard.** ``max_new_tokens`` is derived from the slowest plausible
speaking rate for the text (``synth.chars_per_s_min``), so an output that never emits EOS comes
out longer than the bound; an output shorter than the fastest plausible rate allows
(``synth.chars_per_s_max``) is truncated. Either way the item is retried on a new seed
(``seed_for(seed, "retry", attempt)``), at most ``synth.max_retries`` times; every attempt is
recorded in :attr:`Synthesis.notes`. When retries run out a :class:`SynthesisError` rejects the
dialogue.

Weights: ``nari-labs/Dia-1.6B-0626`` (Apache-2.0) and ``descript/dac_44khz`` (MIT); English only.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from duetflow.audio.io import Audio
from duetflow.config import SynthConfig
from duetflow.errors import BackendError, ConfigError
from duetflow.hashing import path_checksum
from duetflow.seeding import seed_for
from duetflow.tts.backend import (
    Synthesis,
    SynthesisError,
    Voice,
    count_speech_chars,
    expected_duration_bounds,
)
from duetflow.tts.voices import load_voice_audio

log = logging.getLogger(__name__)

SAMPLE_RATE = 44100
HOP = 512  # DAC samples per frame: ~86 frames/s
MAX_DELAY = 15  # Dia's delay pattern [0, 8, ..., 15]: frames spent flushing the codebooks
CONTEXT_FRAMES = 3072  # decoder context, prompt included
MARGIN_FRAMES = 8  # past the slowest plausible duration → clearly a runaway

#: Generation parameters from the Dia README / transformers docs, always passed explicitly.
GENERATION: dict[str, Any] = {
    "do_sample": True,
    "guidance_scale": 3.0,
    "temperature": 1.8,
    "top_p": 0.90,
    "top_k": 45,
}


def build_prompt(transcript: str, text: str) -> str:
    """Transcript-first single-speaker cloning prompt with a trailing speaker tag."""
    return f"[S1] {transcript.strip()} [S1] {text.strip()} [S1]"


def max_new_tokens_for(text: str, config: SynthConfig) -> int:
    """Frames to allow: the slowest plausible duration + codebook flush + a small margin."""
    _, max_s = expected_duration_bounds(text, config)
    return int(math.ceil(max_s * SAMPLE_RATE / HOP)) + MAX_DELAY + 1 + MARGIN_FRAMES


class DiaBackend:
    """Dia-1.6B voice cloning (transformers port); 44.1 kHz mono output."""

    name = "dia"
    clones = True

    def __init__(self, config: SynthConfig | None = None) -> None:
        self.config = config or SynthConfig()
        if not self.config.model_path:
            raise ConfigError("synth.model_path: the dia backend needs a local Dia model folder")
        if not self.config.codec_path:
            raise ConfigError("synth.codec_path: the dia backend needs a local DAC codec folder")
        self.model_path = Path(self.config.model_path)
        self.codec_path = Path(self.config.codec_path)
        for p in (self.model_path, self.codec_path):
            if not p.is_dir():
                raise BackendError(f"{p}: model folder not found")
        import torch  # noqa: F401  (fail early, at construction, when the extra is missing)
        import transformers  # noqa: F401

        self._model: Any = None
        self._processor: Any = None
        self._lock = threading.Lock()
        self._checksums: tuple[str, str] | None = None
        self._ref_cache: dict[str, Audio] = {}

    @property
    def sample_rate(self) -> int:
        return SAMPLE_RATE

    def _load(self) -> tuple[Any, Any]:
        if self._model is None:
            import importlib

            import torch

            tf: Any = importlib.import_module("transformers")  # untyped: keep mypy out of it
            device = self.config.device
            dtype = torch.float32 if device == "cpu" else torch.bfloat16
            model = tf.DiaForConditionalGeneration.from_pretrained(self.model_path, dtype=dtype)
            codec = tf.DacModel.from_pretrained(self.codec_path)
            self._processor = tf.DiaProcessor(
                tf.AutoFeatureExtractor.from_pretrained(self.model_path),
                tf.AutoTokenizer.from_pretrained(self.model_path),
                audio_tokenizer=codec.to(device).eval(),
            )
            self._model = model.to(device).eval()
            log.info(
                "loaded Dia from %s (codec %s) on %s", self.model_path, self.codec_path, device
            )
        return self._model, self._processor

    def _reference(self, voice: Voice) -> Audio:
        ref = self._ref_cache.get(voice.clip_id)
        if ref is None:
            ref, _ = load_voice_audio(voice, SAMPLE_RATE)
            self._ref_cache = {voice.clip_id: ref}  # keep one: voices alternate per dialogue
        return ref

    def generate(
        self, prompts: Sequence[str], ref: Audio, seed: int, max_new_tokens: int
    ) -> list[Audio]:
        """One seeded batch ``generate`` + prompt-free decode (the real code path, no guard)."""
        import torch

        model, processor = self._load()
        inputs = processor(
            text=list(prompts), audio=[ref] * len(prompts), padding=True, return_tensors="pt"
        ).to(self.config.device)
        prompt_len = processor.get_audio_prompt_len(inputs["decoder_attention_mask"])
        budget = CONTEXT_FRAMES - int(prompt_len)
        if budget <= MAX_DELAY + 1:
            raise SynthesisError(
                f"reference prompt uses {prompt_len} of {CONTEXT_FRAMES} frames", "prompt_too_long"
            )
        torch.manual_seed(seed)
        with torch.inference_mode():
            out = model.generate(**inputs, max_new_tokens=min(max_new_tokens, budget), **GENERATION)
            wavs = processor.batch_decode(out, audio_prompt_len=prompt_len)
        return [np.asarray(w.float().cpu().numpy(), dtype=np.float32).reshape(-1) for w in wavs]

    def synthesize(self, texts: Sequence[str], voice: Voice, seed: int) -> list[Synthesis]:
        """Clone ``voice`` for every text: one batch, then per-item guarded retries."""
        if not texts:
            return []
        if voice.language != "en":
            raise SynthesisError(
                f"Dia speaks English only; voice {voice.speaker_id} is {voice.language!r}",
                "unsupported_language",
            )
        with self._lock:
            ref = self._reference(voice)
            prompts = [build_prompt(voice.transcript, t) for t in texts]
            cap = max(max_new_tokens_for(t, self.config) for t in texts)
            first = self.generate(prompts, ref, seed, cap)
            results: list[Synthesis] = []
            for i, (text, prompt) in enumerate(zip(texts, prompts, strict=True)):
                audio, used, notes = first[i], seed, []
                for attempt in range(self.config.max_retries + 1):
                    verdict = self.check(text, audio)
                    if verdict is None:
                        break
                    notes.append(f"attempt {attempt + 1} seed {used}: {verdict}")
                    if attempt == self.config.max_retries:
                        raise SynthesisError(
                            f"Dia output for {text[:40]!r} failed the guard after "
                            f"{attempt + 1} attempts: {'; '.join(notes)}",
                            verdict.split(":")[0],
                        )
                    used = seed_for(seed, "retry", i, attempt + 1) & 0x7FFFFFFF
                    audio = self.generate(
                        [prompt], ref, used, max_new_tokens_for(text, self.config)
                    )[0]
                results.append(
                    Synthesis(audio, SAMPLE_RATE, used, attempts=len(notes) + 1, notes=tuple(notes))
                )
            return results

    def check(self, text: str, audio: Audio) -> str | None:
        """Guard verdict: None if the duration is plausible for the text, else the reason."""
        lo, hi = expected_duration_bounds(text, self.config)
        dur = len(audio) / SAMPLE_RATE
        if dur > hi:
            return f"runaway: {dur:.2f} s > {hi:.2f} s for {count_speech_chars(text)} chars"
        if dur < lo:
            return f"truncated: {dur:.2f} s < {lo:.2f} s for {count_speech_chars(text)} chars"
        return None

    def provenance(self) -> dict[str, Any]:
        if self._checksums is None:
            self._checksums = (path_checksum(self.model_path), path_checksum(self.codec_path))
        import transformers

        return {
            "backend": self.name,
            "engine": f"transformers {transformers.__version__} DiaForConditionalGeneration",
            "model_path": str(self.model_path),
            "model_checksum": self._checksums[0],
            "codec_path": str(self.codec_path),
            "codec_checksum": self._checksums[1],
            "clones": True,
            "generation": dict(GENERATION),
            "device": self.config.device,
            "license": "Dia-1.6B weights Apache-2.0; DAC MIT",
            "output_licence": "Apache-2.0 AND MIT",
        }
