"""Bounded HTTP: one request with a total deadline and a cap on the answer's size.

Every outside answer the project waits for is bounded here (the LLM client of
:mod:`duetflow.scriptgen.llm`; any other HTTP client, such as an ASR endpoint, should use the
same primitive):

* **deadline** — connecting, sending and reading the *whole* answer must end within
  ``deadline_s``. A per-read timeout is not enough (a server that sends one byte a second
  never trips it), so a watchdog shuts the socket down when the deadline passes, whatever
  the request is doing, and every read is also given only the time left;
* **size** — an answer whose ``Content-Length`` is over ``max_bytes`` is refused before its
  body is read, and a body read in chunks stops as soon as it passes ``max_bytes``.

Failures raise :class:`HttpFailure` with a ``kind`` (``deadline``, ``too_large``,
``connection``, ``protocol``) and a one-line message naming the URL and the cause, so a caller
can retry or reject without a traceback. Only the standard library is used.
"""

from __future__ import annotations

import contextlib
import http.client
import math
import socket
import threading
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field

_CHUNK = 64 * 1024


class HttpFailure(Exception):
    """A request that did not produce a complete answer within its bounds."""

    def __init__(self, url: str, kind: str, cause: str) -> None:
        super().__init__(f"{url}: {cause}")
        self.url = url
        self.kind = kind
        self.cause = cause


def _one_line(text: str, limit: int = 300) -> str:
    """``text`` as one printable line (what a server sent can hold any byte), bounded."""
    out = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)
    return out if len(out) <= limit else out[: limit - 1] + "…"


@dataclass(frozen=True)
class Limits:
    """The bounds of one request: total seconds, and answer bytes."""

    deadline_s: float
    max_bytes: int

    def __post_init__(self) -> None:
        if not (math.isfinite(self.deadline_s) and self.deadline_s > 0):
            raise ValueError(f"deadline_s must be finite and > 0, got {self.deadline_s!r}")
        if self.max_bytes < 1:
            raise ValueError(f"max_bytes must be >= 1, got {self.max_bytes!r}")


@dataclass(frozen=True)
class HttpAnswer:
    """A complete answer: status, headers (names lower-cased) and the body bytes."""

    status: int
    headers: Mapping[str, str] = field(repr=False)
    body: bytes = field(repr=False)
    reason: str = ""


class _Watchdog:
    """Shuts a connection's socket down at the deadline (unblocks any read or write).

    The socket is held here once connected: ``http.client`` drops it from the connection when
    the answer says the connection will close, while the answer is still being read from it.
    """

    def __init__(self, seconds: float) -> None:
        self.fired = False
        self.sock: socket.socket | None = None
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True

    def _fire(self) -> None:
        self.fired = True
        sock = self.sock
        if sock is not None:
            with contextlib.suppress(OSError):  # already closed: nothing to unblock
                sock.shutdown(socket.SHUT_RDWR)

    def __enter__(self) -> _Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()


def request(
    method: str,
    url: str,
    limits: Limits,
    *,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
) -> HttpAnswer:
    """Send one HTTP(S) request and read the whole answer within ``limits``.

    Any status is returned (the caller decides what a 4xx or 5xx means); HttpFailure when the
    answer did not arrive complete within the deadline, was larger than ``max_bytes``, or the
    connection failed or broke the protocol.
    """
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise HttpFailure(url, "protocol", "not an http(s) URL")
    start = time.monotonic()
    end = start + limits.deadline_s
    conn_type = (
        http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    )
    conn = conn_type(parts.hostname, parts.port, timeout=limits.deadline_s)
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    watchdog = _Watchdog(limits.deadline_s)

    def left() -> float:
        remaining = end - time.monotonic()
        if remaining <= 0 or watchdog.fired:
            raise HttpFailure(url, "deadline", f"no complete answer within {limits.deadline_s:g} s")
        return remaining

    try:
        with watchdog:
            try:
                conn.connect()
                sock = watchdog.sock = conn.sock
                if watchdog.fired:  # the deadline passed while connecting
                    left()
                conn.request(method, target, body=body, headers=dict(headers or {}))
                sock.settimeout(left())
                resp = conn.getresponse()
                answer_headers = {k.lower(): v for k, v in resp.getheaders()}
                text = answer_headers.get("content-length", "").strip()
                declared = int(text) if text.isdigit() else None
                if declared is not None and declared > limits.max_bytes:
                    raise HttpFailure(
                        url,
                        "too_large",
                        f"answer of {declared} bytes declared, over the limit of "
                        f"{limits.max_bytes} bytes",
                    )
                chunks: list[bytes] = []
                total = 0
                while True:
                    sock.settimeout(left())
                    chunk = resp.read1(_CHUNK)
                    if not chunk:
                        break
                    total += len(chunk)
                    if total > limits.max_bytes:
                        raise HttpFailure(
                            url,
                            "too_large",
                            f"answer over the limit of {limits.max_bytes} bytes",
                        )
                    chunks.append(chunk)
                left()  # a watchdog that fired while the last read returned: still too late
                if declared is not None and total < declared:
                    raise HttpFailure(
                        url, "protocol", f"answer cut off: {total} of {declared} bytes"
                    )
                return HttpAnswer(resp.status, answer_headers, b"".join(chunks), resp.reason)
            except HttpFailure:
                raise
            except (OSError, http.client.HTTPException, ValueError) as e:
                if watchdog.fired or time.monotonic() >= end:
                    raise HttpFailure(
                        url, "deadline", f"no complete answer within {limits.deadline_s:g} s"
                    ) from None
                kind = "protocol" if isinstance(e, http.client.HTTPException) else "connection"
                raise HttpFailure(url, kind, _one_line(f"{type(e).__name__}: {e}")) from None
    finally:
        conn.close()


__all__ = ["HttpAnswer", "HttpFailure", "Limits", "request"]
