"""One exception hierarchy, so callers can catch duetflow's failures without catching bugs.

Every message names *what* (file, line, field) and *what was expected*, because the person reading
it is usually a data engineer looking at a corpus they did not write.
"""

from __future__ import annotations

from pathlib import Path


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
        self.path = str(path) if path is not None else None
        self.cause = cause
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
