"""Speaking time of a script estimated from its text, at one conversational rate per language.

The seed study's PH scripts run 40–50 s of speech (the defaults of ``scripts.speaking_s_min`` /
``speaking_s_max``, :data:`duetflow.config.synth.SCRIPT_SPEECH_S`). Whatever writes or
checks a script (the sample scripts, ``duetflow scripts generate/rewrite``) estimates its length
here, so there is one rate per language in the project:

* English: words per second. Conversational English runs at roughly 160–190 words per minute
  (Yuan, Liberman & Cieri 2006 measured about 170 wpm in telephone conversation); 2.8 words/s.
* Mandarin (and other CJK text): characters per second, one character being one syllable.
  Conversational Mandarin runs at roughly 4–5.5 syllables per second, read speech and most TTS
  voices nearer 4; 4.0 characters/s, the slow end, so that a script estimated at 50 s does not
  render past 60 s (the offline eSpeak NG voice speaks Mandarin at about 3.5 characters/s).

Other languages written with spaces use the English word rate. Non-speech tags (``[laughter]``,
``<noise>``, ``(laughs)``) and punctuation take no time. The estimate is of speech only: the
rendered PH dialogue adds a 180–230 ms pause per line change and the edge silences.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "SPEAKING_RATES",
    "SpeakingRate",
    "dialogue_rate_cps",
    "rate_for",
    "script_speaking_time_s",
    "speaking_time_s",
    "speech_units",
    "spoken_characters",
]


@dataclass(frozen=True)
class SpeakingRate:
    """How fast a language is spoken: ``per_s`` ``unit``s per second."""

    unit: Literal["word", "char"]
    per_s: float


#: Conversational speaking rate per language (ISO 639-1; see the module docstring).
SPEAKING_RATES: dict[str, SpeakingRate] = {
    "en": SpeakingRate("word", 2.8),
    "zh": SpeakingRate("char", 4.0),
}

#: A transcript tag (``[+]``, ``[LAUGH]``, ``<noise>``) is not a spoken character.
_SPOKEN_TAG = re.compile(r"\[[^\]]*\]|<[^>]*>")
_TAGS = re.compile(r"\[[^\]]*\]|<[^>]*>|\([^)]*\)|（[^）]*）|\{[^}]*\}")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")


def rate_for(language: str) -> SpeakingRate:
    """The rate of ``language`` (``zh-CN`` → ``zh``); unknown languages speak like English."""
    base = language.lower().replace("_", "-").split("-")[0]
    if base in SPEAKING_RATES:
        return SPEAKING_RATES[base]
    if base in ("cmn", "yue", "ja"):
        return SPEAKING_RATES["zh"]
    return SPEAKING_RATES["en"]


def speech_units(text: str, language: str) -> float:
    """Words (or CJK characters) of ``text`` that take time to say, in the language's unit.

    Mixed text counts each part in its own unit, converted to the language's unit by the two
    rates (a Latin word inside Chinese text takes as long as an English word).
    """
    clean = _TAGS.sub(" ", text)
    chars = len(_CJK.findall(clean))
    words = len(_WORD.findall(_CJK.sub(" ", clean)))
    rate = rate_for(language)
    en, zh = SPEAKING_RATES["en"].per_s, SPEAKING_RATES["zh"].per_s
    if rate.unit == "char":
        return chars + words * zh / en
    return words + chars * en / zh


def speaking_time_s(text: str, language: str) -> float:
    """Estimated seconds of speech to say ``text`` in ``language``."""
    return speech_units(text, language) / rate_for(language).per_s


def script_speaking_time_s(texts: Iterable[str], language: str) -> float:
    """Estimated seconds of speech of a whole script (its lines' texts)."""
    return sum(speaking_time_s(t, language) for t in texts)


def spoken_characters(text: str) -> int:
    """Letters, digits and ideographs of a turn's text (tags such as ``[+]`` and punctuation
    left out): the unit of a dialogue's measured speaking rate."""
    return sum(ch.isalnum() for ch in _SPOKEN_TAG.sub(" ", text))


def dialogue_rate_cps(turns: Iterable[tuple[float, float, str]]) -> float:
    """A dialogue's speaking rate: spoken characters of its turns per second of speech.

    ``turns``: (start s, end s, text) of its speech turns (turns and backchannels, not
    non-speech); the seconds of speech are the union of the turns (an overlap counts once).
    The one definition the cue audit (``speech_rate_cps``, docs/fairness.md) and the PH rate
    draw (:mod:`duetflow.tts.length_match`) share. NaN without speech or without characters
    (turns found by VAD carry no transcript).
    """
    rows = list(turns)
    spans = sorted((float(s), float(e)) for s, e, _ in rows if e > s)
    chars = sum(spoken_characters(t) for _, _, t in rows)
    secs, end = 0.0, -math.inf
    for s, e in spans:
        if e <= end:
            continue
        secs += e - max(s, end)
        end = e
    return chars / secs if secs > 0 and chars > 0 else math.nan
