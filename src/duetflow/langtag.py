"""Language tags: the well-formed syntax of BCP 47 (RFC 5646, section 2.1), checked once.

Only the grammar is checked (``en``, ``zh-Hans-CN``, ``sr-Latn-RS``, ``de-CH-1996``,
``x-private``, the grandfathered tags), not the IANA registry: a tag that parses is
*well-formed*; ``en_US``, ``english``, ``e``, or a tag with markup in it is not.
"""

from __future__ import annotations

import re

_ALNUM = "[A-Za-z0-9]"
_LANGUAGE = r"(?:[A-Za-z]{2,3}(?:-[A-Za-z]{3}){0,3}|[A-Za-z]{4,8})"
_SCRIPT = r"(?:-[A-Za-z]{4})?"
_REGION = r"(?:-(?:[A-Za-z]{2}|[0-9]{3}))?"
_VARIANTS = rf"(?:-(?:{_ALNUM}{{5,8}}|[0-9]{_ALNUM}{{3}}))*"
_EXTENSIONS = rf"(?:-[0-9A-WYZa-wyz](?:-{_ALNUM}{{2,8}})+)*"
_PRIVATE = rf"[xX](?:-{_ALNUM}{{1,8}})+"
_IRREGULAR = (  # the grandfathered tags the grammar does not cover
    *("en-GB-oed", "i-ami", "i-bnn", "i-default", "i-enochian", "i-hak", "i-klingon", "i-lux"),
    *("i-mingo", "i-navajo", "i-pwn", "i-tao", "i-tay", "i-tsu", "sgn-BE-FR", "sgn-BE-NL"),
    "sgn-CH-DE",
)
_TAG = re.compile(
    rf"(?:{_LANGUAGE}{_SCRIPT}{_REGION}{_VARIANTS}{_EXTENSIONS}(?:-{_PRIVATE})?"
    rf"|{_PRIVATE}|{'|'.join(re.escape(t) for t in _IRREGULAR)})",
    re.IGNORECASE,
)
#: Longest tag accepted (the grammar has no limit; real tags are short).
MAX_TAG_CHARS = 64


def is_language_tag(tag: str) -> bool:
    """Whether ``tag`` is a well-formed BCP 47 language tag (case-insensitive)."""
    return len(tag) <= MAX_TAG_CHARS and _TAG.fullmatch(tag) is not None


def language_tag_problem(tag: object) -> str | None:
    """Why ``tag`` is not a well-formed BCP 47 tag (None when it is); the value is shown escaped."""
    if isinstance(tag, str) and is_language_tag(tag):
        return None
    shown = ascii(tag) if not isinstance(tag, str) or len(tag) <= 80 else ascii(tag[:80]) + "…"
    return f"language {shown} is not a well-formed BCP 47 tag (e.g. en, zh, en-GB, zh-Hans-CN)"


__all__ = ["MAX_TAG_CHARS", "is_language_tag", "language_tag_problem"]
