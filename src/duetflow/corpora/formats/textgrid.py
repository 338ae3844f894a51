"""Praat TextGrid (text formats) → turns: one interval tier per speaker.

Praat writes a TextGrid as a text file in one of two formats, both read here (Praat's manual,
*TextGrid file formats*):

* the **long** ("text file") format, ``File type = "ooTextFile"`` followed by ``xmin = 0``,
  ``item [1]:``, ``intervals: size = 3`` ... lines;
* the **short** ("short text file") format, the same values one per line without the names.

Both are the same sequence of values: Praat reads only *free-standing* numbers (whitespace on
both sides), strings in double quotes (``""`` inside one is a literal quote; a string may span
lines) and flags (``<exists>``); everything else (``xmin =``, ``item [1]:``, text after ``!``)
is a comment. So one tokenizer reads both, and the declared counts (tiers, intervals per tier)
are checked: a truncated file is ``malformed_line``, never silently shorter. Praat saves a
TextGrid holding non-ASCII text as UTF-16 with a byte-order mark; the file is decoded by
:func:`duetflow.corpora.text.read_text_as` (UTF-8, BOM-marked UTF-16, then the corpus's listed
legacy encodings), so a TextGrid obeys the same text rules as every other annotation. Binary
TextGrids (``ooBinaryFile``) are refused with that reason.

Each interval tier is a speaker (or the tiers ``speakers=`` names, mapped to speaker ids);
intervals with an empty label are silence and skipped; a label that is one bracketed token
(``<laugh>``, ``[noise]``) is non-speech (``NONSPEECH_LABEL``). Point tiers (``TextTier``) have
no extent and are listed as ignored.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from duetflow.corpora.formats.annotation import (
    NONSPEECH_LABEL,
    Annotation,
    finish,
    kind_of,
    number,
)
from duetflow.corpora.text import DEFAULT_ENCODINGS, MAX_TEXT_BYTES, decode_text_as, read_bounded
from duetflow.errors import InputError
from duetflow.records.dialogue import Turn

_TOKEN = re.compile(
    r'"(?P<str>(?:[^"]|"")*+)"'  # a string; "" is a literal quote
    r"|(?P<flag><[a-z]+>)"  # <exists> / <absent>
    r"|(?P<comment>![^\n]*)"  # ! to the end of the line
    r"|(?P<word>[^\s\"]+)"  # a free-standing number, or a comment word
    r'|(?P<open>")'  # a string that never ends
)
_NUMBER = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")


@dataclass(frozen=True)
class _Token:
    kind: str  # "str" | "num" | "flag"
    value: str
    line: int


def _tokens(text: str) -> Iterator[_Token]:
    line = 1
    pos = 0
    for m in _TOKEN.finditer(text):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        kind = m.lastgroup
        if kind == "str":
            yield _Token("str", m.group("str").replace('""', '"'), line)
        elif kind == "flag":
            yield _Token("flag", m.group("flag"), line)
        elif kind == "open":
            yield _Token("open", '"', line)
        elif kind == "word" and _NUMBER.match(m.group("word")):
            yield _Token("num", m.group("word"), line)
        # comments and words such as "xmin", "=", "item", "[1]:" are skipped


class _Reader:
    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.it = _tokens(text)
        self.line = 1

    def next(self, kind: str, what: str) -> str:
        tok = next(self.it, None)
        if tok is None:
            raise InputError(
                self.path, f"the file ends where {what} should be (truncated?)",
                reason="malformed_line", line=self.line,
            )  # fmt: skip
        self.line = tok.line
        if tok.kind == "open":
            raise InputError(self.path, "a string that is never closed (a missing quote)",
                             reason="malformed_line", line=tok.line)  # fmt: skip
        if tok.kind != kind:
            raise InputError(
                self.path, f"expected {what}, found {tok.value!r}", reason="malformed_line",
                line=tok.line,
            )  # fmt: skip
        return tok.value

    def num(self, what: str) -> float:
        return number(self.path, self.next("num", what), what, self.line)

    def count(self, what: str) -> int:
        n = self.num(what)
        if n < 0 or n != int(n):
            raise InputError(self.path, f"{what} {n} is not a count", reason="malformed_line",
                             line=self.line)  # fmt: skip
        return int(n)


@dataclass(frozen=True)
class Tier:
    """One tier as the file holds it: intervals ``(start, end, label, line)`` or points."""

    cls: str
    name: str
    intervals: tuple[tuple[float, float, str, int], ...]


def parse_textgrid(path: Path, text: str) -> tuple[float, float, tuple[Tier, ...]]:
    """``(xmin, xmax, tiers)`` of a TextGrid's text (long or short format)."""
    r = _Reader(path, text)
    if r.next("str", 'the file type ("ooTextFile")') != "ooTextFile":
        raise InputError(path, "not a Praat text file (File type is not \"ooTextFile\")",
                         reason="malformed_line", line=1)  # fmt: skip
    if (cls := r.next("str", 'the object class ("TextGrid")')) != "TextGrid":
        raise InputError(path, f"a Praat {cls!r} file, not a TextGrid", reason="malformed_line",
                         line=r.line)  # fmt: skip
    xmin, xmax = r.num("xmin"), r.num("xmax")
    if r.next("flag", "<exists>") != "<exists>":
        return xmin, xmax, ()
    tiers: list[Tier] = []
    for _ in range(r.count("the number of tiers")):
        tier_cls = r.next("str", "a tier class")
        name = r.next("str", "a tier name")
        r.num("the tier's xmin")
        r.num("the tier's xmax")
        n = r.count(f"the size of tier {name!r}")
        items: list[tuple[float, float, str, int]] = []
        if tier_cls == "IntervalTier":
            for i in range(n):
                a = r.num(f"interval {i + 1} of tier {name!r}: xmin")
                line = r.line
                b = r.num(f"interval {i + 1} of tier {name!r}: xmax")
                items.append((a, b, r.next("str", f"the text of interval {i + 1}"), line))
        elif tier_cls == "TextTier":
            for i in range(n):
                t = r.num(f"point {i + 1} of tier {name!r}: time")
                items.append((t, t, r.next("str", f"the mark of point {i + 1}"), r.line))
        else:
            raise InputError(path, f"unknown tier class {tier_cls!r} (tier {name!r})",
                             reason="malformed_line", line=r.line)  # fmt: skip
        tiers.append(Tier(tier_cls, name, tuple(items)))
    return xmin, xmax, tuple(tiers)


def read_textgrid(
    path: Path,
    *,
    speakers: Mapping[str, str] | None = None,
    encodings: Sequence[str] = DEFAULT_ENCODINGS,
    language: str | None = None,
    nonspeech: re.Pattern[str] | None = NONSPEECH_LABEL,
    max_bytes: int = MAX_TEXT_BYTES,
) -> Annotation:
    """The turns of a Praat TextGrid, one interval tier per speaker.

    ``speakers`` maps tier names to speaker ids and reads only those tiers (a named tier that
    is missing is ``speaker_mismatch``); without it every interval tier is read and its name is
    the speaker id. Raises InputError (``bad_encoding``, ``malformed_line`` with the line,
    ``bad_timing``, ``overlapping_turns``, ``no_turns``, and the file checks of
    :func:`~duetflow.corpora.text.read_bounded`).
    """
    data = read_bounded(path, max_bytes)
    if data.lstrip().startswith(b"ooBinaryFile"):
        raise InputError(path, "a binary TextGrid; save it from Praat as a text file",
                         reason="malformed_line")  # fmt: skip
    decoded = decode_text_as(data, path, encodings, language)
    _, xmax, tiers = parse_textgrid(path, decoded.text)
    names = [t.name for t in tiers]
    if speakers is not None:
        missing = [n for n in speakers if n not in names]
        if missing:
            raise InputError(path, f"no tier {missing[0]!r}; the file has {names}",
                             reason="speaker_mismatch")  # fmt: skip
    used: dict[str, str] = {}
    ignored: list[str] = []
    turns: list[Turn] = []
    where: dict[int, str] = {}
    for tier in tiers:
        if tier.cls != "IntervalTier" or (speakers is not None and tier.name not in speakers):
            ignored.append(tier.name)
            continue
        if tier.name in used:
            raise InputError(path, f"two tiers named {tier.name!r}", reason="duplicate_id")
        spk = speakers[tier.name] if speakers is not None else tier.name
        used[tier.name] = spk
        for start, end, label, line in tier.intervals:
            if not label.strip():
                continue  # silence
            where[len(turns)] = f"line {line} (tier {tier.name!r})"
            turns.append(Turn(spk, start, end, label.strip(), kind_of(label, nonspeech)))
    return finish(path, turns, extent_s=xmax, encoding=decoded.encoding, tiers=used,
                  ignored=ignored, where=where)  # fmt: skip
