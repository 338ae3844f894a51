"""``default`` backend: eSpeak NG from the ``espeakng-loader`` wheel, driven through ctypes.

The wheel ships ``libespeak-ng.so`` and its voice data, so this runs offline everywhere with no
system package and no torch. It does **not** clone: it picks a stock male/female variant by
the reference's gender and sets pitch and rate from the reference's measured pitch and speaking
rate. Provenance says ``clones: false`` so nobody mistakes its output for cloned speech; it
exists so the whole PH pipeline (and the demo, and CI) runs on any machine.

eSpeak NG keeps synthesis state in C statics that survive ``espeak_Terminate``, so the same
text spoken twice in one process differs by a few samples. Each :meth:`EspeakBackend.synthesize`
call therefore runs in a fresh, stdlib-only subprocess (:mod:`duetflow.tts._espeak_worker`,
~30 ms to start): output is a pure function of (texts, voice settings).
"""

from __future__ import annotations

import json
import logging
import math
import struct
import subprocess
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

from duetflow.audio.io import Audio
from duetflow.config import SynthConfig
from duetflow.errors import BackendError
from duetflow.tts.backend import Synthesis, Voice

log = logging.getLogger(__name__)

WORKER = Path(__file__).with_name("_espeak_worker.py")
# pipeline language code -> eSpeak NG voice name
LANGUAGE_VOICES: dict[str, str] = {"en": "en-us", "zh": "cmn", "cmn": "cmn", "yue": "yue"}
# stock variants used per gender (deterministic; chosen for intelligibility)
GENDER_VARIANTS: dict[str, str] = {"M": "m3", "F": "f3"}
# typical conversational F0 per gender: pitch parameter 50 = engine default at these values
_CENTER_HZ: dict[str, float] = {"M": 120.0, "F": 210.0}
#: eSpeak NG's default rate parameter, words per minute.
DEFAULT_RATE_WPM = 165
#: What eSpeak NG speaks at :data:`DEFAULT_RATE_WPM` per unit of a reference's rate, in spoken
#: characters (letters, digits, ideographs) per second, per language: calibrated so that the
#: rendered PH dialogues' speaking rate, as the cue audit reads it (``speech_rate_cps``: per
#: second of the turns, docs/fairness.md), matches the human dialogues whose speakers lend the
#: voices. Per trimmed utterance eSpeak NG speaks 12.56 (en-us) and 3.53 (cmn) characters/s at
#: 165 wpm on the sample scripts; a reference's rate (its transcript over its clip, pauses
#: inside the clip included) reads about 8 % under its speakers' dialogues in English and 3 %
#: over in Chinese, and a PH turn holds its line's pauses: the scale-16 sample build measured
#: PH at 9.74 vs humans 11.4-12.1 characters/s (en) and 4.98 vs 4.56 (zh) with 12.56 and 3.53
#: here, hence 10.37 and 3.86 (docs/equalisation.md). The rate scales linearly (200 wpm: 15.4
#: and 4.45 per utterance).
CHARS_PER_S_AT_DEFAULT: dict[str, float] = {"en": 10.37, "zh": 3.86}
#: What a rendered PH dialogue spoken at :data:`DEFAULT_RATE_WPM` reads as its speaking rate
#: by the cue audit (``speech_rate_cps``: spoken characters per second of the turns), per
#: language: the unit of a target rate drawn from the human dialogues
#: (:attr:`Voice.speaking_rate_cps`, ``synth.match_human_rate``). Measured on two scale-16
#: sample builds paced by their references (32 PH dialogues per language each): the audit's
#: rate × 165 / the dialogue's mean rate parameter is 12.54-12.60 (sd 0.25-0.45) in English and
#: 3.74 (sd 0.11) in Chinese, the rate correlating with the parameter at r 0.97-0.99; paced by
#: targets (a third build), PH read 1.001 (sd 0.019) and 1.021 (sd 0.013) × their targets with
#: 12.6 and 3.74, hence 12.6 and 3.82 (docs/equalisation.md).
DIALOGUE_CPS_AT_DEFAULT: dict[str, float] = {"en": 12.6, "zh": 3.82}
#: The rate parameter is kept inside this range (wpm): beyond it eSpeak NG turns unnatural. It
#: spans the sample build's human dialogues (en 9.3-14 characters/s: 122-183 wpm; zh
#: 3.7-5.6: 163-247 wpm).
RATE_RANGE_WPM = (110, 250)


def _loader_version() -> str:
    try:
        return version("espeakng-loader")
    except PackageNotFoundError:  # pragma: no cover
        return "unknown"


def _paths() -> tuple[str, str]:
    try:
        import espeakng_loader
    except ImportError as e:  # pragma: no cover - core dependency
        raise BackendError("espeakng-loader is not installed (a core dependency)") from e
    return espeakng_loader.get_library_path(), espeakng_loader.get_data_path()


def speak(
    texts: Sequence[str], voice_name: str, rate_wpm: int, pitch: int, seed: int = 0
) -> tuple[list[Audio], int]:
    """Synthesize ``texts`` in one fresh worker process; returns (float32 waveforms, rate)."""
    library, data = _paths()
    req = {
        "library": library,
        "data": data,
        "voice": voice_name,
        "rate": rate_wpm,
        "pitch": pitch,
        "seed": seed,
        "texts": list(texts),
    }
    proc = subprocess.run(
        [sys.executable, "-I", str(WORKER)],
        input=json.dumps(req).encode("utf-8"),
        capture_output=True,
        timeout=120 + 10 * len(texts),
        check=False,
    )
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip()
        raise BackendError(f"eSpeak NG worker failed ({proc.returncode}): {err[-500:]}")
    buf = proc.stdout
    (rate,) = struct.unpack_from("<I", buf, 0)
    pos = 4
    out: list[Audio] = []
    for _ in texts:
        (n,) = struct.unpack_from("<I", buf, pos)
        pos += 4
        pcm = np.frombuffer(buf, dtype="<i2", count=n, offset=pos)
        pos += 2 * n
        out.append((pcm.astype(np.float32) / 32768.0).astype(np.float32))
    return out, int(rate)


def voice_settings(voice: Voice) -> tuple[str, int, int]:
    """(eSpeak voice name, rate in words/min, pitch 0–100) chosen for a reference voice.

    Gender picks the variant; the reference's median F0 moves the pitch parameter around 50
    (one octave = 40 steps). The rate: a target set on the voice
    (:attr:`Voice.speaking_rate_cps`, drawn from a human dialogue) over what a PH dialogue
    reads at the default (:data:`DIALOGUE_CPS_AT_DEFAULT`); without one, the reference's
    speaking rate (spoken characters of its transcript per second of clip) over
    :data:`CHARS_PER_S_AT_DEFAULT`, so the voice speaks at its reference's pace. Clamped to
    :data:`RATE_RANGE_WPM`.
    """
    lang = LANGUAGE_VOICES.get(voice.language, voice.language)
    gender = voice.gender or "M"
    name = f"{lang}+{GENDER_VARIANTS[gender]}"
    pitch = 50
    if voice.pitch_hz and voice.pitch_hz > 0:
        pitch = int(round(50 + 40 * math.log2(voice.pitch_hz / _CENTER_HZ[gender])))
        pitch = max(10, min(90, pitch))
    rate = DEFAULT_RATE_WPM
    code = voice.language.split("-")[0].lower()
    lo, hi = RATE_RANGE_WPM
    target = voice.speaking_rate_cps
    if target is not None and target > 0 and code in DIALOGUE_CPS_AT_DEFAULT:
        return (
            name,
            int(round(max(lo, min(hi, rate * target / DIALOGUE_CPS_AT_DEFAULT[code])))),
            pitch,
        )
    base = CHARS_PER_S_AT_DEFAULT.get(code)
    chars = sum(ch.isalnum() for ch in voice.transcript or "")
    if base and chars and voice.duration_s > 0:
        cps = chars / voice.duration_s
        rate = int(round(max(lo, min(hi, DEFAULT_RATE_WPM * cps / base))))
    return name, rate, pitch


class EspeakBackend:
    """eSpeak NG formant synthesis; picks a voice by gender/pitch, never clones."""

    name = "default"
    clones = False

    def __init__(self, config: SynthConfig | None = None) -> None:
        self.config = config or SynthConfig()
        self._sample_rate: int | None = None

    @property
    def sample_rate(self) -> int:
        if self._sample_rate is None:
            _, self._sample_rate = speak([], "en-us", 165, 50)
        return self._sample_rate

    def synthesize(self, texts: Sequence[str], voice: Voice, seed: int) -> list[Synthesis]:
        """Speak each text (one worker process per call); ``seed`` seeds eSpeak's noise source."""
        name, rate, pitch = voice_settings(voice)
        waves, sr = speak(texts, name, rate, pitch, seed)
        self._sample_rate = sr
        out = []
        for text, audio in zip(texts, waves, strict=True):
            if audio.size == 0:
                raise BackendError(f"eSpeak NG produced no audio for {text[:40]!r} ({name})")
            note = f"voice={name} rate={rate} pitch={pitch}"
            out.append(Synthesis(audio=audio, sample_rate=sr, seed=seed, notes=(note,)))
        return out

    def provenance(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "engine": "eSpeak NG",
            "model_path": f"espeakng-loader {_loader_version()}: espeak-ng-data",
            "model_checksum": None,
            "clones": False,
            "note": "stock eSpeak NG voice chosen by the reference's gender/pitch; no cloning",
            "license": "GPL-3.0-or-later (eSpeak NG); generated audio unrestricted",
            "output_licence": None,  # the engine's GPL does not bind what it speaks
        }
