"""Reading annotation text safely: bounded, regular files only, and honest about encodings.

Every transcript, sidecar and table an adapter reads goes through :func:`read_text` (or
:func:`read_text_as`, which also says which encoding decoded it):

* only a *regular file* is read. A FIFO, a device (``/dev/zero``) or a socket — directly or
  behind a symlink — is refused (``bad_file``) without blocking, because opening a FIFO for
  reading waits for a writer forever and ``/dev/zero`` never ends;
* at most ``max_bytes`` are read (``file_too_large`` beyond), so a hostile file cannot exhaust
  memory;
* UTF-8 (with or without BOM) and BOM-marked UTF-16 are always accepted. A *legacy* encoding
  (``cp1252``, ``gb18030`` ...) is tried only when the adapter lists it for a corpus known to
  use it, and its result must look like text in the corpus's language
  (:func:`implausible_text`): any byte string decodes as cp1252 or GB18030, so a GBK file read
  as cp1252 or a Big5 file read as GB18030 would otherwise become fluent mojibake. Text that
  fails the check is rejected ``bad_encoding`` naming what gave it away.
"""

from __future__ import annotations

import os
import stat
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from duetflow.errors import InputError

#: Encodings tried after UTF-8 when an adapter does not say otherwise: none. A transcript that
#: is not UTF-8 (with or without BOM) or BOM-marked UTF-16 is rejected with the byte offset of
#: the first bad byte, because guessing a legacy code page silently corrupts text.
DEFAULT_ENCODINGS: tuple[str, ...] = ()

#: Largest annotation file read by default (transcripts and tables are kilobytes to megabytes).
MAX_TEXT_BYTES = 64 * 1024 * 1024

_READ_CHUNK = 1 << 20


def read_bounded(path: Path, max_bytes: int = MAX_TEXT_BYTES) -> bytes:
    """The bytes of a regular file of at most ``max_bytes``; never blocks, never follows forever.

    Raises InputError ``missing_file`` (absent, a directory, unreadable), ``bad_file`` (a FIFO,
    device or socket, also behind a symlink) or ``file_too_large``.
    """
    try:
        # O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting forever
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise InputError(path, "file not found", reason="missing_file") from None
    except IsADirectoryError:
        raise InputError(
            path, "expected a file, found a directory", reason="missing_file"
        ) from None
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror or e}", reason="missing_file") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise InputError(path, "expected a file, found a directory", reason="missing_file")
        if not stat.S_ISREG(st.st_mode):
            raise InputError(
                path, f"not a regular file ({_kind(st.st_mode)}); refusing to read it",
                reason="bad_file",
            )  # fmt: skip
        if st.st_size > max_bytes:
            raise InputError(
                path, f"{st.st_size} bytes, more than the {max_bytes} allowed",
                reason="file_too_large",
            )  # fmt: skip
        chunks: list[bytes] = []
        total = 0
        while chunk := os.read(fd, min(_READ_CHUNK, max_bytes + 1 - total)):
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:  # grew while being read
                raise InputError(
                    path, f"more than the {max_bytes} bytes allowed", reason="file_too_large"
                )
        return b"".join(chunks)
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror or e}", reason="missing_file") from None
    finally:
        os.close(fd)


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "a special file"


@dataclass(frozen=True)
class DecodedText:
    """Text and the encoding that decoded it (``utf-8``, ``utf-8-sig``, ``utf-16`` or legacy)."""

    text: str
    encoding: str


def decode_text_as(
    data: bytes,
    path: str | Path,
    encodings: Sequence[str] = DEFAULT_ENCODINGS,
    language: str | None = None,
) -> DecodedText:
    """Decode annotation bytes: UTF-8 (BOM stripped), BOM-marked UTF-16, then ``encodings``.

    A legacy encoding's result must pass :func:`implausible_text` for ``language``. Raises
    InputError ``bad_encoding`` naming the offset of the first invalid UTF-8 byte and, when a
    legacy decode was refused, why.
    """
    if data.startswith(b"\xef\xbb\xbf"):
        try:
            return DecodedText(data[3:].decode("utf-8"), "utf-8-sig")
        except UnicodeDecodeError as e:
            raise InputError(
                path, f"invalid UTF-8 after the BOM at byte {e.start + 3}", reason="bad_encoding"
            ) from None
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return DecodedText(data.decode("utf-16"), "utf-16")
        except UnicodeDecodeError as e:
            raise InputError(
                path, f"invalid UTF-16 at byte {e.start}", reason="bad_encoding"
            ) from None
    try:
        return DecodedText(data.decode("utf-8"), "utf-8")
    except UnicodeDecodeError as e:
        first = e
    refused: list[str] = []
    for enc in encodings:
        try:
            text = data.decode(enc)
        except (UnicodeDecodeError, LookupError):
            continue
        problem = implausible_text(text, language)
        if problem is None:
            return DecodedText(text, enc)
        refused.append(f"as {enc}: {problem}")
    tried = ", ".join(["utf-8", *encodings])
    why = f"; refused {'; '.join(refused)}" if refused else ""
    raise InputError(
        path,
        f"not valid text at byte {first.start} (byte 0x{data[first.start]:02x}); "
        f"tried {tried}{why}",
        reason="bad_encoding",
    )


def decode_text(
    data: bytes,
    path: str | Path,
    encodings: Sequence[str] = DEFAULT_ENCODINGS,
    language: str | None = None,
) -> str:
    """:func:`decode_text_as` without the encoding."""
    return decode_text_as(data, path, encodings, language).text


def read_text_as(
    path: Path,
    encodings: Sequence[str] = DEFAULT_ENCODINGS,
    language: str | None = None,
    *,
    max_bytes: int = MAX_TEXT_BYTES,
) -> DecodedText:
    """Read (:func:`read_bounded`) and decode (:func:`decode_text_as`) an annotation file."""
    return decode_text_as(read_bounded(path, max_bytes), path, encodings, language)


def read_text(
    path: Path,
    encodings: Sequence[str] = DEFAULT_ENCODINGS,
    language: str | None = None,
    *,
    max_bytes: int = MAX_TEXT_BYTES,
) -> str:
    """Read and decode an annotation file; see :func:`read_text_as`."""
    return read_text_as(path, encodings, language, max_bytes=max_bytes).text


# --- plausibility of a legacy decode --------------------------------------------------------------

_ALLOWED_CONTROLS = frozenset("\t\n\r\f\v")
#: Share of letters that may be non-ASCII in English text read through a Latin code page
#: (accents in names and loanwords: a few per cent at most).
_LATIN_MAX_NON_ASCII = 0.2
#: Share of Han characters that must be among GB2312's 3,755 level-1 (most common) characters
#: in Mandarin text: running simplified Chinese is ~99 % level-1; Big5 read as GB18030 ~25 %.
_ZH_MIN_COMMON = 0.8
_CHINESE = frozenset({"zh", "cmn", "yue"})


def _gb2312_level1(ch: str) -> bool:
    try:
        b = ch.encode("gb2312")
    except UnicodeEncodeError:
        return False
    return len(b) == 2 and 0xB0 <= b[0] <= 0xD7


def _han(ch: str) -> bool:
    return "\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf" or "\uf900" <= ch <= "\ufaff"


def implausible_text(text: str, language: str | None) -> str | None:
    """Why ``text`` (a legacy-encoding decode) is not plausible text in ``language``, or None.

    Always refused: control characters other than whitespace, private-use and unassigned code
    points (what a wrong multi-byte code page produces). English (and other Latin-script
    languages): no run of two or more Latin-1 supplement characters (``ÄãºÃ`` is GBK read as
    cp1252; real accents stand alone: ``café``, ``naïve``) and at most 20 % non-ASCII letters.
    Chinese: at least 80 % of the Han characters among the common (GB2312 level-1) ones, and
    no kana, Cyrillic or Greek (what Big5 read as GB18030 yields).
    """
    for ch in text:
        cat = unicodedata.category(ch)
        if cat == "Cc" and ch not in _ALLOWED_CONTROLS:
            return f"control character U+{ord(ch):04X}"
        if cat in ("Co", "Cn"):
            return f"{'private-use' if cat == 'Co' else 'unassigned'} character U+{ord(ch):04X}"
    if language is None:
        return None
    primary = language.split("-")[0].split("_")[0].lower()
    if primary in _CHINESE:
        return _implausible_chinese(text)
    if primary in ("ja", "ko"):
        return None  # no Latin/Han heuristics for these; the control checks above still apply
    return _implausible_latin(text)


def _implausible_latin(text: str) -> str | None:
    run = 0
    letters = non_ascii = 0
    for i, ch in enumerate(text):
        if "\u00a0" <= ch <= "\u00ff":
            run += 1
            if run >= 2:
                snippet = text[max(0, i - 8) : i + 8].replace("\n", " ")
                return f"looks like mis-decoded multi-byte text near {snippet!r}"
        else:
            run = 0
        if ch.isalpha():
            letters += 1
            non_ascii += not ch.isascii()
        elif not ch.isascii() and not ch.isspace() and unicodedata.category(ch)[0] != "P":
            # symbols such as € ™ ° are rare in transcripts; count them like odd letters
            non_ascii += 1
            letters += 1
    if letters and non_ascii / letters > _LATIN_MAX_NON_ASCII:
        return f"{non_ascii} of {letters} letters are not ASCII, implausible for the language"
    return None


def _implausible_chinese(text: str) -> str | None:
    han = common = 0
    for ch in text:
        if _han(ch):
            han += 1
            common += _gb2312_level1(ch)
            continue
        name = unicodedata.name(ch, "")
        if name.startswith(("HIRAGANA", "KATAKANA", "CYRILLIC", "GREEK", "BOPOMOFO", "BOX ")):
            return f"unexpected {name.split()[0].lower()} character {ch!r} in Chinese text"
    if han == 0:
        return None  # nothing Chinese to judge (tables of ids and numbers)
    if common / han < _ZH_MIN_COMMON:
        return (
            f"only {common} of {han} Chinese characters are common ones "
            f"(expected at least {_ZH_MIN_COMMON:.0%}): probably another encoding"
        )
    return None
