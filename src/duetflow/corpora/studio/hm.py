"""HM design checks on a studio transcript: identity disclosure, target language, opening line.

Pure text functions; :func:`hm_checks` applies them to an HM session's transcript before any
audio is decoded and says which check failed and why (a rejection reason and detail).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from duetflow.config import StudioConfig
from duetflow.corpora.studio.sidecar import SessionSidecar
from duetflow.corpora.studio.transcript import TranscriptTurn
from duetflow.records.dialogue import TurnKind

_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "`": "'"})
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")


def _normalise(text: str) -> str:
    return " ".join(text.translate(_APOSTROPHES).lower().split())


def find_disclosure(text: str, phrases: Mapping[str, Sequence[str]]) -> str | None:
    """The first identity-disclosure phrase in ``text`` (any language's list), or None.

    Matching is case-insensitive on whole words for alphabetic phrases; phrases with CJK
    characters are matched with all whitespace removed (CJK text has no word spaces).
    """
    norm = _normalise(text)
    squeezed = norm.replace(" ", "")
    for lang in sorted(phrases):
        for phrase in phrases[lang]:
            p = _normalise(phrase)
            if not p:
                continue
            if _CJK.search(p):
                if p.replace(" ", "") in squeezed:
                    return phrase
            elif re.search(r"(?<!\w)" + re.escape(p) + r"(?!\w)", norm):
                return phrase
    return None


_SCRIPT_RANGES: tuple[tuple[str, str], ...] = (
    ("han", r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"),
    ("kana", r"\u3040-\u30ff"),
    ("hangul", r"\uac00-\ud7af\u1100-\u11ff"),
    ("cyrillic", r"\u0400-\u04ff"),
    ("arabic", r"\u0600-\u06ff"),
    ("latin", r"A-Za-z\u00c0-\u024f"),
)
_SYLLABIC = {"han", "kana", "hangul"}  # one character = one unit; else one word = one unit
_UNIT = re.compile(
    "|".join(f"(?P<{n}>[{r}]{'' if n in _SYLLABIC else '+'})" for n, r in _SCRIPT_RANGES)
)
_EXPECTED_SCRIPTS: Mapping[str, frozenset[str]] = {
    "zh": frozenset({"han"}),
    "yue": frozenset({"han"}),
    "ja": frozenset({"han", "kana"}),
    "ko": frozenset({"hangul", "han"}),
    "ru": frozenset({"cyrillic"}),
    "uk": frozenset({"cyrillic"}),
    "bg": frozenset({"cyrillic"}),
    "ar": frozenset({"arabic"}),
    "fa": frozenset({"arabic"}),
}


def script_units(text: str) -> dict[str, int]:
    """Count writing-system units: CJK/kana/hangul characters, alphabetic words."""
    counts: dict[str, int] = {}
    for m in _UNIT.finditer(text):
        name = m.lastgroup or ""
        counts[name] = counts.get(name, 0) + 1
    return counts


def non_target_language(text: str, language: str, min_units: int = 3) -> str | None:
    """The dominant foreign script of ``text`` when most of it is not in ``language``'s script.

    A script-level check (no language model is available offline): it tells Chinese from
    English, not English from German. Text with fewer than ``min_units`` units is not judged,
    so a lone "OK" in a Chinese dialogue passes.
    """
    primary = language.split("-")[0].split("_")[0].lower()
    expected = _EXPECTED_SCRIPTS.get(primary, frozenset({"latin"}))
    units = script_units(text)
    total = sum(units.values())
    if total < min_units:
        return None
    foreign = {k: v for k, v in units.items() if k not in expected}
    if sum(foreign.values()) * 2 > total:
        return max(sorted(foreign), key=lambda k: foreign[k])
    return None


_PUNCT_SPACE = re.compile(r"[\W_]+", re.UNICODE)


def _plain(text: str) -> str:
    """Text reduced to lower-case letters/digits, one space between words (none around CJK)."""
    words = _PUNCT_SPACE.sub(" ", _normalise(text)).split()
    out = ""
    for w in words:
        if out and not (_CJK.search(out[-1]) or _CJK.search(w[0])):
            out += " "
        out += w
    return out


def opening_line_similarity(opening_line: str, first_turn: str) -> float:
    """How well a first turn says the opening line, in [0, 1] (1: same words).

    Both are reduced to lower-case words without punctuation; the turn may go on after the
    line, so the score is the better of the whole turn and its prefix of the line's length
    (difflib's ratio: 2 × matching characters / total characters).
    """
    line, turn = _plain(opening_line), _plain(first_turn)
    if not line or not turn:
        return 0.0
    whole = difflib.SequenceMatcher(None, line, turn, autojunk=False).ratio()
    prefix = difflib.SequenceMatcher(None, line, turn[: len(line)], autojunk=False).ratio()
    return max(whole, prefix)


def _snippet(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def hm_checks(
    meta: SessionSidecar, transcript: list[TranscriptTurn] | None, scfg: StudioConfig
) -> dict[str, Any]:
    """Identity disclosure, non-target language and the opening line on an HM transcript.

    Status values are ``passed``, ``failed``, ``not checked`` (no transcript: never
    ``passed``) and ``not applicable`` (HH sessions).
    """
    if meta.category != "HM":
        return {
            "status": {
                "identity_disclosure": "not applicable",
                "target_language": "not applicable",
                "opening_line": "not applicable",
            }
        }
    if not transcript:
        return {
            "status": {
                "identity_disclosure": "not checked",
                "target_language": "not checked",
                "opening_line": "not checked",
                "why": "no transcript",
            }
        }
    machines = {sp.id for sp in meta.speakers if sp.role == "machine"}
    status: dict[str, Any] = {
        "identity_disclosure": "passed",
        "target_language": "passed",
        "opening_line": "passed",
    }
    rejection: tuple[str, str] | None = None
    first = next(
        (t for t in transcript if t.speaker not in machines and t.kind is TurnKind.TURN),
        None,
    )
    score = opening_line_similarity(meta.opening_line, first.text if first else "")
    status["opening_line_similarity"] = round(score, 3)
    opening: tuple[str, str] | None = None
    if score < scfg.opening_line_min_similarity:
        status["opening_line"] = "failed"
        opening = (
            "opening_line_mismatch",
            f"the human's first turn {_snippet(first.text if first else '')!r} does not say "
            f"the opening line {_snippet(meta.opening_line)!r} (similarity {score:.2f} < "
            f"studio.opening_line_min_similarity {scfg.opening_line_min_similarity})",
        )
    for i, t in enumerate(transcript):
        if t.speaker in machines:
            phrase = find_disclosure(t.text, scfg.disclosure_phrases)
            if phrase is not None:
                status["identity_disclosure"] = "failed"
                rejection = rejection or (
                    "identity_disclosure",
                    f"identity disclosure {phrase!r} in turn {i} by {t.speaker}: "
                    f"{_snippet(t.text)!r}",
                )
        script = non_target_language(t.text, meta.language, scfg.non_target_min_units)
        if script is not None:
            status["target_language"] = "failed"
            rejection = rejection or (
                "non_target_language",
                f"turn {i} by {t.speaker} is in {script} script, session language "
                f"{meta.language!r}: {_snippet(t.text)!r}",
            )
    return {"status": status, "rejection": rejection or opening}
