"""One exception hierarchy, so callers can catch duetflow's failures without catching bugs.

Every message names *what* (file, line, field) and *what was expected*, because the person reading
it is usually a data engineer looking at a corpus they did not write.
"""

from __future__ import annotations

import errno
import os
import reprlib
from pathlib import Path

#: Longest cause an InputError keeps (a rejection detail is one readable line, not a dump).
MAX_CAUSE_CHARS = 2000

_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxlist = _REPR.maxtuple = _REPR.maxset = _REPR.maxdict = 4
_REPR.maxstring = _REPR.maxother = 80


def brief_repr(value: object, limit: int = 200) -> str:
    """``repr`` of a (possibly huge or deeply nested) value, bounded to ``limit`` characters."""
    text = _REPR.repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def cap_text(text: str, limit: int = MAX_CAUSE_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    cut = len(text) - limit
    return f"{text[:limit]}… [{cut} more characters cut]"


def printable(text: str) -> str:
    """``text`` safe to print and to store as UTF-8: undecodable bytes of a file name become
    ``\\xNN`` escapes (a name read with ``surrogateescape``), other lone surrogates ``\\udNNN``.

    Valid text is returned unchanged, so it costs nothing on the normal path.
    """
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")


def is_utf8(text: str) -> bool:
    """Whether ``text`` (a path or name as the OS gave it) is valid UTF-8 text."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class DuetflowError(Exception):
    """Base class of every error duetflow raises on purpose."""


class InputError(DuetflowError):
    """Bad input data: corrupt audio, malformed annotation, missing file, path escaping a root.

    ``reason`` is a short machine-readable code (``missing_file``, ``bad_audio`` ...) that becomes
    the rejection reason when the item is quarantined.
    """

    def __init__(
        self,
        path: str | Path | None,
        cause: str,
        *,
        reason: str = "bad_input",
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.path = cap_text(printable(str(path)), 1000) if path is not None else None
        cause = printable(cause)
        self.cause = cap_text(cause)
        self.reason = reason
        self.line = line
        self.field = field
        where = self.path or "<input>"
        if line is not None:
            where += f":{line}"
        if field is not None:
            where += f" [{field}]"
        super().__init__(f"{where}: {cause}")


class ConfigError(DuetflowError):
    """Invalid configuration: unknown key, wrong type, value out of range."""


class StorageError(DuetflowError):
    """A store could not be read or written, or an object failed its checksum."""


class ManifestError(DuetflowError):
    """A manifest failed validation; ``table`` holds the readable failure table."""

    def __init__(self, message: str, table: str = "") -> None:
        self.table = table
        super().__init__(message + (f"\n{table}" if table else ""))


class BackendError(DuetflowError):
    """A pluggable backend (TTS, diarisation) is unavailable or failed."""


class ServerError(DuetflowError):
    """A background server duetflow records could not be started, identified or stopped; when it
    cannot be identified nothing is signalled (the message names the pid and the cause)."""


class WorkdirInUseError(DuetflowError):
    """Another live process holds the work directory's lock (one run per work directory)."""


#: errno values of a full disk (or an exhausted quota)
DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)


class DiskFullError(DuetflowError):
    """No space was left on the device holding ``path``: the write failed and the step that
    wrote it left nothing behind; after freeing space a re-run gives the same output."""

    def __init__(self, path: str | Path, cause: str = "No space left on device") -> None:
        self.path = cap_text(str(path), 1000)
        super().__init__(
            f"{self.path}: disk full ({cause}); the unfinished step left nothing behind, "
            "finished steps are kept: free space and run again"
        )

    @classmethod
    def of(cls, exc: BaseException, path: str | Path) -> DiskFullError | None:
        """``exc`` as a DiskFullError when it is one (an OSError with ENOSPC or EDQUOT, also
        as pyarrow words it), else None; ``path`` is named when ``exc`` names no file."""
        if isinstance(exc, DiskFullError):
            return exc
        if not isinstance(exc, OSError):
            return None
        text = str(exc)
        if exc.errno in DISK_FULL_ERRNOS:
            return cls(exc.filename or path, os.strerror(exc.errno))
        for code in DISK_FULL_ERRNOS:
            if os.strerror(code) in text or f"[errno {code}]" in text:
                return cls(exc.filename or path, os.strerror(code))
        return None
