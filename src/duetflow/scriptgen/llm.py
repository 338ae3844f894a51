"""A chat-completions client for any OpenAI-compatible endpoint, bounded and with retries.

The protocol hosted APIs, vLLM, Ollama and llama.cpp's server all speak is one JSON POST
(``{base_url}/chat/completions``); it is sent through :mod:`duetflow.bounded_http`, so every
request has a **total deadline** (``llm.timeout_s``: connecting, sending and the whole answer;
an answer that trickles in is cut off) and a **maximum answer size** (``llm.max_answer_bytes``).

Failed attempts are retried here, with exponential backoff (``llm.backoff_s`` doubling up to
``llm.max_backoff_s``, or the server's ``Retry-After`` when it sends one), at most
``llm.max_retries`` times: the deadline passing, an answer over the size limit, connection
errors, HTTP 408/409/429 and 5xx, and every **malformed answer** — a 200 whose body is HTML,
not UTF-8, truncated JSON, or JSON without ``choices[0].message.content`` as a string or null.
Retried out, the request fails with :class:`RequestFailed` (``llm_unavailable`` for transport
failures, ``llm_bad_answer`` for malformed answers): a rejection of that script with the last
cause, never an exception, and not persisted, so a re-run asks for it again. Other answers are
not retried: 401/403/404 mean the endpoint, key or model is wrong for every request (a
:class:`~duetflow.errors.BackendError` stops the run), any other 4xx is that one request's
problem (:class:`RequestFailed` ``llm_error``, a rejection of that script).
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from duetflow.bounded_http import HttpFailure, Limits, request
from duetflow.config import LLMConfig
from duetflow.errors import BackendError, ConfigError

log = logging.getLogger(__name__)

Message = Mapping[str, str]

#: HTTP statuses that mean the request as sent can never succeed on this endpoint.
FATAL_STATUSES = frozenset({401, 403, 404})
#: HTTP statuses worth retrying after a pause.
RETRY_STATUSES = frozenset({408, 409, 429})


class RequestFailed(BackendError):
    """One request failed for good (retries exhausted, or a 4xx for this request only).

    ``reason`` is the rejection code: ``llm_unavailable`` (transport, retried out),
    ``llm_bad_answer`` (malformed answers, retried out) or ``llm_error`` (the endpoint refused
    this request).
    """

    def __init__(self, message: str, reason: str, attempts: int) -> None:
        super().__init__(message)
        self.reason = reason
        self.attempts = attempts


@dataclass(frozen=True)
class ChatAnswer:
    """What one successful request returned and how many HTTP attempts it took."""

    text: str | None
    model: str
    finish_reason: str | None
    attempts: int


@runtime_checkable
class ChatClient(Protocol):
    """Anything that answers a chat (the OpenAI client below; a fake in unit tests)."""

    def complete(self, messages: Sequence[Message], *, seed: int | None) -> ChatAnswer:
        """Send ``messages``; return the answer or raise RequestFailed / BackendError."""
        ...


def _retry_after_s(headers: Mapping[str, str]) -> float | None:
    """The server's requested pause (``Retry-After`` seconds, or ``retry-after-ms``), if any."""
    for key, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(key)
        if value is None:
            continue
        try:
            pause = float(value) * scale
        except ValueError:
            return None  # an HTTP date: fall back to our own backoff
        return max(0.0, pause) if math.isfinite(pause) else None  # "inf"/"nan": our own
    return None


class _BadAnswer(Exception):
    """A 200 answer that is not a chat completion (HTML, not UTF-8, truncated, wrong shape)."""


def _completion(body: bytes, default_model: str) -> tuple[str | None, str, str | None]:
    """(content, model, finish_reason) of a chat-completion body; _BadAnswer when malformed."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _BadAnswer(f"answer is not UTF-8 (byte {e.start})") from None
    try:
        data = json.loads(text)
    except ValueError as e:
        head = text.lstrip()[:1]
        what = "HTML or text" if head and head not in "{[" else "truncated or invalid JSON"
        raise _BadAnswer(f"answer is {what}, not a chat completion ({e})") from None
    choices = data.get("choices") if isinstance(data, dict) else None
    choice = choices[0] if isinstance(choices, list) and choices else None
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict) or not isinstance(message.get("content"), str | None):
        raise _BadAnswer("answer JSON has no choices[0].message.content (wrong schema)")
    model = data.get("model")
    finish = choice.get("finish_reason") if isinstance(choice, dict) else None
    return (
        message.get("content"),
        model if isinstance(model, str) and model else default_model,
        finish if isinstance(finish, str) else None,
    )


def _error_message(body: bytes) -> str:
    """The ``error.message`` of an error answer, else its first 200 characters (escaped)."""
    text = body[:4096].decode("utf-8", "replace")
    try:
        data = json.loads(text)
        msg = data["error"]["message"]
        if isinstance(msg, str):
            return msg[:500]
    except (ValueError, KeyError, TypeError):
        pass
    return ascii(text[:200])


class OpenAIChat:
    """:class:`ChatClient` for any OpenAI-compatible base URL, over :mod:`duetflow.bounded_http`."""

    def __init__(
        self,
        config: LLMConfig,
        *,
        sleep: Callable[[float], None] = time.sleep,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        if not config.configured:
            raise ConfigError("llm: set llm.base_url and llm.model (or --llm-base-url/--llm-model)")
        env = os.environ if environ is None else environ
        # Local servers (vLLM, Ollama, llama.cpp) take any key; send one anyway.
        key = env.get(config.api_key_env) or "no-key"
        self.config = config
        self._url = str(config.base_url).rstrip("/") + "/chat/completions"
        self._headers = {
            "content-type": "application/json",
            "accept": "application/json",
            "authorization": f"Bearer {key}",
        }
        self._limits = Limits(config.timeout_s, config.max_answer_bytes)
        self._sleep = sleep
        self._lock = threading.Lock()
        self.requests = 0  # HTTP requests sent by this client (all threads)

    def _delay(self, attempt: int, server: float | None) -> float:
        cfg = self.config
        own = min(cfg.max_backoff_s, cfg.backoff_s * (2**attempt))
        return min(cfg.max_backoff_s, server) if server is not None else own

    def complete(self, messages: Sequence[Message], *, seed: int | None) -> ChatAnswer:
        """One chat completion, retrying failed attempts (see the module docstring)."""
        cfg = self.config
        payload = {
            "model": str(cfg.model),
            "messages": [dict(m) for m in messages],
            "temperature": cfg.temperature,
            "seed": seed,
            "max_tokens": cfg.max_tokens,
        }
        body = json.dumps({k: v for k, v in payload.items() if v is not None}).encode()
        last, reason = "", "llm_unavailable"
        for attempt in range(cfg.max_retries + 1):
            with self._lock:
                self.requests += 1
            server_delay: float | None = None
            try:
                answer = request("POST", self._url, self._limits, body=body, headers=self._headers)
            except HttpFailure as e:
                last, reason = f"{e.kind}: {e.cause}", "llm_unavailable"
            else:
                status = answer.status
                if status == 200:
                    try:
                        text, model, finish = _completion(answer.body, str(cfg.model))
                    except _BadAnswer as e:
                        last, reason = f"malformed answer: {e}", "llm_bad_answer"
                    else:
                        return ChatAnswer(text, model, finish, attempt + 1)
                elif status in FATAL_STATUSES:
                    raise BackendError(
                        f"llm endpoint {cfg.base_url} answered HTTP {status} for model "
                        f"{cfg.model!r}: {_error_message(answer.body)} (check llm.base_url, "
                        f"llm.model and ${cfg.api_key_env})"
                    )
                elif status not in RETRY_STATUSES and status < 500:
                    raise RequestFailed(
                        f"llm endpoint refused the request: HTTP {status}: "
                        f"{_error_message(answer.body)}",
                        "llm_error",
                        attempt + 1,
                    )
                else:
                    last = f"HTTP {status}: {_error_message(answer.body)}"
                    reason = "llm_unavailable"
                    server_delay = _retry_after_s(answer.headers)
            if attempt < cfg.max_retries:
                delay = self._delay(attempt, server_delay)
                log.info("llm: %s; retry %d in %.2f s", last, attempt + 1, delay)
                self._sleep(delay)
        raise RequestFailed(
            f"llm endpoint {cfg.base_url} failed {cfg.max_retries + 1} time(s): {last}",
            reason,
            cfg.max_retries + 1,
        )
