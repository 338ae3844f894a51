"""``default`` backend: eSpeak NG through ctypes, from the ``espeakng-loader`` wheel.

The wheel ships ``libespeak-ng.so`` and its voice data, so this runs offline everywhere with no
system package and no torch. It does **not** clone: it picks a stock male/female variant by
the reference's gender and sets pitch and rate from the reference's measured pitch and speaking
rate. Provenance says ``clones: false`` so nobody mistakes its output for cloned speech; it
exists so the whole PH pipeline (and the demo, and CI) runs on any machine.

eSpeak NG keeps global state in the process, so calls are serialised by a lock.
"""

from __future__ import annotations

import ctypes
import logging
import math
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from duetflow.audio.io import Audio
from duetflow.config import SynthConfig
from duetflow.errors import BackendError
from duetflow.tts.base import Synthesis, Voice

log = logging.getLogger(__name__)

_AUDIO_OUTPUT_RETRIEVAL = 1
_INITIALIZE_DONT_EXIT = 0x8000
_POS_CHARACTER = 1
_CHARS_UTF8 = 1
_PARAM_RATE = 1
_PARAM_PITCH = 3
_PARAM_RANGE = 4

# pipeline language code -> eSpeak NG voice name
LANGUAGE_VOICES: dict[str, str] = {"en": "en-us", "zh": "cmn", "cmn": "cmn", "yue": "yue"}
# stock variants used per gender (deterministic; chosen for intelligibility)
GENDER_VARIANTS: dict[str, str] = {"M": "m3", "F": "f3"}
# typical conversational F0 per gender: pitch parameter 50 = engine default at these values
_CENTER_HZ: dict[str, float] = {"M": 120.0, "F": 210.0}

_SynthCallback = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p
)


class _Engine:
    """The process-wide eSpeak NG instance (library state is global)."""

    _instance: _Engine | None = None
    _guard = threading.Lock()

    def __init__(self) -> None:
        try:
            import espeakng_loader
        except ImportError as e:  # pragma: no cover - core dependency
            raise BackendError("espeakng-loader is not installed (core dependency)") from e
        self.library_path = espeakng_loader.get_library_path()
        self.data_path = espeakng_loader.get_data_path()
        lib = ctypes.CDLL(self.library_path)
        lib.espeak_Initialize.restype = ctypes.c_int
        lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        lib.espeak_SetVoiceByName.restype = ctypes.c_int
        lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
        lib.espeak_SetParameter.restype = ctypes.c_int
        lib.espeak_Synth.argtypes = [
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_uint,
            ctypes.c_int,
            ctypes.c_uint,
            ctypes.c_uint,
            ctypes.c_void_p,
            ctypes.c_void_p,
        ]
        lib.espeak_Synth.restype = ctypes.c_int
        lib.espeak_Info.restype = ctypes.c_char_p
        lib.espeak_Info.argtypes = [ctypes.c_void_p]
        rate = lib.espeak_Initialize(
            _AUDIO_OUTPUT_RETRIEVAL, 0, self.data_path.encode(), _INITIALIZE_DONT_EXIT
        )
        if rate <= 0:
            raise BackendError(f"eSpeak NG failed to initialise (data at {self.data_path})")
        self.sample_rate = int(rate)
        self.version = (lib.espeak_Info(None) or b"?").decode()
        self._chunks: list[Audio] = []
        self._callback = _SynthCallback(self._collect)  # keep a reference: C holds a pointer
        lib.espeak_SetSynthCallback(self._callback)
        self.lib = lib
        self.lock = threading.Lock()

    @classmethod
    def get(cls) -> _Engine:
        with cls._guard:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance

    def _collect(self, wav: Any, n: int, events: Any) -> int:
        if n > 0 and wav:
            pcm = np.ctypeslib.as_array(wav, shape=(n,))
            self._chunks.append((pcm.astype(np.float32) / 32768.0).astype(np.float32))
        return 0

    def speak(self, text: str, voice_name: str, rate_wpm: int, pitch: int) -> Audio:
        with self.lock:
            if self.lib.espeak_SetVoiceByName(voice_name.encode()) != 0:
                raise BackendError(f"eSpeak NG has no voice {voice_name!r}")
            self.lib.espeak_SetParameter(_PARAM_RATE, rate_wpm, 0)
            self.lib.espeak_SetParameter(_PARAM_PITCH, pitch, 0)
            self.lib.espeak_SetParameter(_PARAM_RANGE, 50, 0)
            data = text.encode("utf-8")
            buf = ctypes.create_string_buffer(data)
            self._chunks = []
            rc = self.lib.espeak_Synth(
                buf, len(data) + 1, 0, _POS_CHARACTER, 0, _CHARS_UTF8, None, None
            )
            self.lib.espeak_Synchronize()
            if rc != 0:
                raise BackendError(f"eSpeak NG synthesis failed (code {rc}) for {text[:40]!r}")
            chunks, self._chunks = self._chunks, []
        if not chunks:
            return np.zeros(0, dtype=np.float32)
        return np.concatenate(chunks).astype(np.float32)


def _loader_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("espeakng-loader")
    except PackageNotFoundError:  # pragma: no cover
        return "unknown"


def voice_settings(voice: Voice) -> tuple[str, int, int]:
    """(eSpeak voice name, rate in words/min, pitch 0–100) chosen for a reference voice.

    Gender picks the variant; the reference's median F0 moves the pitch parameter around 50
    (one octave = 40 steps); the reference transcript's speaking rate sets the rate.
    """
    lang = LANGUAGE_VOICES.get(voice.language, voice.language)
    gender = voice.gender or "M"
    name = f"{lang}+{GENDER_VARIANTS[gender]}"
    pitch = 50
    if voice.pitch_hz and voice.pitch_hz > 0:
        pitch = int(round(50 + 40 * math.log2(voice.pitch_hz / _CENTER_HZ[gender])))
        pitch = max(10, min(90, pitch))
    rate = 165
    if voice.transcript and voice.duration_s > 0 and voice.language == "en":
        cps = len(voice.transcript) / voice.duration_s
        rate = int(round(max(130.0, min(200.0, cps * 60 / 6.0))))
    return name, rate, pitch


class EspeakBackend:
    """eSpeak NG formant synthesis; picks a voice by gender/pitch, never clones."""

    name = "default"
    clones = False

    def __init__(self, config: SynthConfig | None = None) -> None:
        self.config = config or SynthConfig()
        self._engine = _Engine.get()

    @property
    def sample_rate(self) -> int:
        return self._engine.sample_rate

    def synthesize(self, texts: Sequence[str], voice: Voice, seed: int) -> list[Synthesis]:
        """Speak each text; deterministic, so ``seed`` is only recorded."""
        name, rate, pitch = voice_settings(voice)
        out = []
        for text in texts:
            audio = self._engine.speak(text, name, rate, pitch)
            if audio.size == 0:
                raise BackendError(f"eSpeak NG produced no audio for {text[:40]!r} ({name})")
            out.append(
                Synthesis(
                    audio=audio,
                    sample_rate=self.sample_rate,
                    seed=seed,
                    notes=(f"voice={name} rate={rate} pitch={pitch}",),
                )
            )
        return out

    def provenance(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "engine": "eSpeak NG",
            "engine_version": self._engine.version,
            "model_path": f"espeakng-loader {_loader_version()}: espeak-ng-data",
            "model_checksum": None,
            "clones": False,
            "note": "stock eSpeak NG voice chosen by the reference's gender/pitch; no cloning",
            "license": "GPL-3.0-or-later (eSpeak NG); generated audio unrestricted",
        }
