"""``spark`` backend: Spark-TTS (SparkAudio, arXiv 2503.01710) voice cloning, 16 kHz output.

**Licence: the Spark-TTS-0.5B weights are CC BY-NC-SA 4.0 (non-commercial).** The code is
Apache-2.0. Every dialogue made with this backend carries ``license`` in its provenance, and a
release that contains them inherits the restriction.

How it is wired (mirrors upstream ``cli/SparkTTS.py``, with the fixes batch use needs):

* the Qwen2.5-0.5B LLM and its tokenizer load from ``<model_path>/LLM`` with transformers;
* the BiCodec audio tokenizer (``<model_path>/BiCodec`` + ``wav2vec2-large-xlsr-53``) comes
  from the upstream ``sparktts`` package (repo checkout on ``sys.path``) or the ``spark_tts_lib``
  re-packaging; neither is on PyPI in a form that installs next to torch 2.13 (it needs
  torchaudio), so it is imported lazily and its absence is a clear :class:`BackendError`;
* a reference is tokenized **once per speaker** (global + semantic ids cached by clip id);
* the prompt is the transcript-continuation form (``prompt_text`` given)::

      <|task_tts|><|start_content|>{ref transcript}{text}<|end_content|>
      <|start_global_token|>{32 global tokens}<|end_global_token|>
      <|start_semantic_token|>{reference semantic tokens}

* ``torch.manual_seed(seed)`` before each generate; ``max_new_tokens`` from the slowest
  plausible duration (50 semantic tokens/s) instead of upstream's fixed 3000;
* guard: zero semantic tokens (upstream crashes in the decoder, issue #82), or a token count
  implying an implausible duration, is retried on a new seed at most ``synth.max_retries`` times.

Verified offline (tests): prompt construction, LLM loading, seeded generation, token parsing
and the guard, on a tiny random Qwen2 with the Spark token vocabulary. **Not verified here:**
BiCodec tokenize/detokenize (no installable ``sparktts`` in this environment) and output quality
with the real weights.
"""

from __future__ import annotations

import importlib
import logging
import math
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

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

log = logging.getLogger(__name__)

SAMPLE_RATE = 16000
SEMANTIC_PER_S = 50
MARGIN_TOKENS = 10
LICENSE = "Spark-TTS-0.5B weights CC BY-NC-SA 4.0 (non-commercial); code Apache-2.0"
SEMANTIC_RE = re.compile(r"bicodec_semantic_(\d+)")

#: Sampling parameters of upstream ``SparkTTS.inference`` defaults, passed explicitly.
GENERATION: dict[str, Any] = {"do_sample": True, "temperature": 0.8, "top_k": 50, "top_p": 0.95}


class AudioTokenizer(Protocol):
    """What the backend needs from BiCodec (upstream ``BiCodecTokenizer``)."""

    def tokenize(self, audio_path: str) -> tuple[Any, Any]: ...

    def detokenize(self, global_tokens: Any, semantic_tokens: Any) -> Any: ...


def build_prompt(
    ref_text: str, text: str, global_ids: Sequence[int], semantic_ids: Sequence[int]
) -> str:
    """The upstream voice-cloning prompt with the reference transcript (continuation mode)."""
    glob = "".join(f"<|bicodec_global_{int(i)}|>" for i in global_ids)
    sem = "".join(f"<|bicodec_semantic_{int(i)}|>" for i in semantic_ids)
    return (
        f"<|task_tts|><|start_content|>{ref_text}{text}<|end_content|>"
        f"<|start_global_token|>{glob}<|end_global_token|>"
        f"<|start_semantic_token|>{sem}"
    )


def parse_semantic(decoded: str) -> list[int]:
    """Semantic token ids in generated text (``skip_special_tokens`` decode, then a regex)."""
    return [int(m) for m in SEMANTIC_RE.findall(decoded)]


def max_new_tokens_for(text: str, config: SynthConfig) -> int:
    _, max_s = expected_duration_bounds(text, config)
    return int(math.ceil(max_s * SEMANTIC_PER_S)) + MARGIN_TOKENS


def _to_numpy(x: Any) -> np.ndarray[Any, Any]:
    """Tensor (any device) or array → numpy."""
    if hasattr(x, "detach"):
        x = x.detach().float().cpu().numpy() if x.is_floating_point() else x.detach().cpu().numpy()
    return np.asarray(x)


def _load_bicodec(model_dir: Path, device: str) -> AudioTokenizer:
    for module in ("sparktts.models.audio_tokenizer", "spark_tts_lib.models.audio_tokenizer"):
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        import torch

        tok: AudioTokenizer = mod.BiCodecTokenizer(model_dir, device=torch.device(device))
        return tok
    raise BackendError(
        "spark backend: the BiCodec audio tokenizer is not importable. Put a Spark-TTS checkout "
        "(github.com/SparkAudio/Spark-TTS, package 'sparktts') on PYTHONPATH, or install "
        "'spark-tts-lib' where torchaudio matches torch."
    )


class SparkBackend:
    """Spark-TTS voice cloning with reference transcript; 16 kHz mono output."""

    name = "spark"
    clones = True

    def __init__(self, config: SynthConfig | None = None) -> None:
        self.config = config or SynthConfig()
        if not self.config.model_path:
            raise ConfigError("synth.model_path: the spark backend needs a Spark-TTS model folder")
        self.model_path = Path(self.config.model_path)
        if not (self.model_path / "LLM").is_dir():
            raise BackendError(f"{self.model_path}: no LLM/ folder (Spark-TTS-0.5B layout)")
        import torch  # noqa: F401  (fail at construction when the tts extra is missing)

        self._lm: Any = None
        self._tokenizer: Any = None
        self._codec: AudioTokenizer | None = None
        self._speakers: dict[str, tuple[Any, Any]] = {}
        self._lock = threading.Lock()
        self._checksum: str | None = None

    @property
    def sample_rate(self) -> int:
        return SAMPLE_RATE

    def load_lm(self) -> tuple[Any, Any]:
        """The LLM and its tokenizer from ``<model_path>/LLM`` (lazy, once)."""
        if self._lm is None:
            tf: Any = importlib.import_module("transformers")
            lm_dir = self.model_path / "LLM"
            self._tokenizer = tf.AutoTokenizer.from_pretrained(lm_dir)
            self._lm = tf.AutoModelForCausalLM.from_pretrained(lm_dir).to(self.config.device).eval()
        return self._lm, self._tokenizer

    def generate_semantic(self, prompt: str, seed: int, max_new_tokens: int) -> list[int]:
        """Seeded LLM continuation of ``prompt``; returns the generated semantic token ids."""
        import torch

        lm, tok = self.load_lm()
        inputs = tok([prompt], return_tensors="pt").to(self.config.device)
        torch.manual_seed(seed)
        with torch.inference_mode():
            out = lm.generate(**inputs, max_new_tokens=max_new_tokens, **GENERATION)
        new = out[0][inputs["input_ids"].shape[1] :]
        return parse_semantic(tok.decode(new, skip_special_tokens=True))

    def check(self, text: str, semantic: Sequence[int]) -> str | None:
        """Guard verdict on the token count (50 tokens/s), before any decoding."""
        if not semantic:
            return "no_tokens: the LLM generated no semantic tokens"
        lo, hi = expected_duration_bounds(text, self.config)
        dur = len(semantic) / SEMANTIC_PER_S
        n = count_speech_chars(text)
        if dur > hi:
            return f"runaway: {dur:.2f} s > {hi:.2f} s for {n} chars"
        if dur < lo:
            return f"truncated: {dur:.2f} s < {lo:.2f} s for {n} chars"
        return None

    def semantic_with_guard(
        self, text: str, prompt: str, seed: int, index: int = 0
    ) -> tuple[list[int], int, list[str]]:
        """Generate, check, retry on new seeds; returns (tokens, seed used, notes)."""
        used, notes = seed, list[str]()
        for attempt in range(self.config.max_retries + 1):
            sem = self.generate_semantic(prompt, used, max_new_tokens_for(text, self.config))
            verdict = self.check(text, sem)
            if verdict is None:
                return sem, used, notes
            notes.append(f"attempt {attempt + 1} seed {used}: {verdict}")
            used = seed_for(seed, "retry", index, attempt + 1) & 0x7FFFFFFF
        raise SynthesisError(
            f"Spark output for {text[:40]!r} failed the guard after {len(notes)} attempts: "
            + "; ".join(notes),
            notes[-1].split(": ", 1)[1].split(":")[0],
        )

    def _speaker_tokens(self, voice: Voice) -> tuple[Any, Any]:
        cached = self._speakers.get(voice.clip_id)
        if cached is None:
            if self._codec is None:
                self._codec = _load_bicodec(self.model_path, self.config.device)
            cached = self._codec.tokenize(voice.clip_path)
            self._speakers[voice.clip_id] = cached
        return cached

    def synthesize(self, texts: Sequence[str], voice: Voice, seed: int) -> list[Synthesis]:
        """Clone ``voice`` for each text (Spark has no batching: one generate per text)."""
        import torch

        out: list[Synthesis] = []
        with self._lock:
            global_ids, ref_semantic = self._speaker_tokens(voice)
            g = [int(i) for i in _to_numpy(global_ids).reshape(-1)]
            s = [int(i) for i in _to_numpy(ref_semantic).reshape(-1)]
            assert self._codec is not None
            for i, text in enumerate(texts):
                prompt = build_prompt(voice.transcript, text, g, s)
                sem, used, notes = self.semantic_with_guard(text, prompt, seed, i)
                device = torch.device(self.config.device)
                wav = self._codec.detokenize(
                    torch.as_tensor(global_ids).to(device).squeeze(0),
                    torch.tensor(sem, dtype=torch.long, device=device).unsqueeze(0),
                )
                audio: Audio = _to_numpy(wav).astype(np.float32).reshape(-1)
                out.append(Synthesis(audio, SAMPLE_RATE, used, len(notes) + 1, tuple(notes)))
        return out

    def provenance(self) -> dict[str, Any]:
        if self._checksum is None:
            self._checksum = path_checksum(self.model_path)
        return {
            "backend": self.name,
            "engine": "Spark-TTS (BiCodec + Qwen2.5-0.5B)",
            "model_path": str(self.model_path),
            "model_checksum": self._checksum,
            "clones": True,
            "generation": dict(GENERATION),
            "device": self.config.device,
            "license": LICENSE,
            "output_licence": "CC-BY-NC-SA-4.0",
        }
