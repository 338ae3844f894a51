"""How long a text takes to say: one per-language speaking-rate estimate for every stage.

Script generation checks that an LLM's dialogue lasts 40–50 s of speech, and sample scripts and
synthesis guards need the same yardstick, so the estimate lives here, once.

A text is split into units a speaker pronounces at a roughly constant rate:

* **CJK characters** (Han, kana): one syllable each. Conversational Mandarin runs at about
  4–5 syllables per second; we use **4.5 characters/s** for ``zh``.
* **Latin-script words** (letters and digits, apostrophes and hyphens inside a word): English
  conversation runs at about 150–160 words per minute; we use **2.6 words/s** for ``en``.
  A digit group counts as one word per two digits ("1990" is said as "nineteen ninety").
* Everything else (punctuation, spaces, emoji) takes no time.

Mixed text is summed unit by unit (a Chinese line with an English brand name). Other languages
use the English word rate for Latin words and the Mandarin rate for CJK characters until a rate
is added to :data:`RATES`. The numbers are conversational averages, not a model of any one
speaker or TTS voice: the estimate decides whether a script is about the right length, it is
not a duration prediction for synthesis (backends are checked against their own audio).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

__all__ = ["RATES", "SpeakingRate", "estimate_speaking_time_s", "speaking_rate"]


@dataclass(frozen=True)
class SpeakingRate:
    """Units per second of running speech (pauses between turns not included)."""

    words_per_s: float
    cjk_chars_per_s: float


#: Conversational speaking rates by primary language subtag.
RATES: dict[str, SpeakingRate] = {
    "en": SpeakingRate(words_per_s=2.6, cjk_chars_per_s=4.5),
    "zh": SpeakingRate(words_per_s=2.6, cjk_chars_per_s=4.5),
}
_FALLBACK = SpeakingRate(words_per_s=2.6, cjk_chars_per_s=4.5)

_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_UNIT = re.compile(
    rf"(?P<cjk>[{_CJK}])|(?P<digits>\d+)|(?P<word>[^\W\d_{_CJK}]+(?:['’-][^\W\d_{_CJK}]+)*)"
)


def speaking_rate(language: str) -> SpeakingRate:
    """The rate for a BCP-47 code (``zh-CN`` and ``cmn`` → ``zh``; unknown → the fallback)."""
    code = language.lower().replace("_", "-")
    primary = "zh" if code.startswith(("zh", "cmn")) else code.split("-")[0]
    return RATES.get(primary, _FALLBACK)


def estimate_speaking_time_s(text: str, language: str) -> float:
    """Seconds of speech ``text`` takes at the conversational rate of ``language``.

    ``estimate_speaking_time_s("How was your weekend?", "en")`` is 4 words / 2.6 ≈ 1.54 s;
    ``estimate_speaking_time_s("你周末过得怎么样？", "zh")`` is 8 characters / 4.5 ≈ 1.78 s.
    """
    rate = speaking_rate(language)
    words = 0.0
    cjk = 0
    for m in _UNIT.finditer(text):
        if m.group("cjk"):
            cjk += 1
        elif m.group("digits"):
            words += math.ceil(len(m.group("digits")) / 2)
        else:
            words += 1
    return words / rate.words_per_s + cjk / rate.cjk_chars_per_s
