"""A chat-completions client for any OpenAI-compatible endpoint, with transport retries.

The ``openai`` package is the maintained client for the protocol that hosted APIs, vLLM, Ollama
and llama.cpp's server all speak; it is an optional dependency (``pip install 'duetflow[llm]'``)
imported only when a client is built, so the core install and the offline demo never need it.

Transport failures are retried here, with exponential backoff (``llm.backoff_s`` doubling up to
``llm.max_backoff_s``, or the server's ``Retry-After`` when it sends one), at most
``llm.max_retries`` times: timeouts, connection errors, HTTP 408/409/429 and 5xx. The client's
own retry loop is switched off so the attempts are counted and recorded. Other answers are not
retried: 401/403/404 mean the endpoint, key or model is wrong for every request (a
:class:`~duetflow.errors.BackendError` stops the run), any other 4xx is that one request's
problem (:class:`RequestFailed`, a rejection of that script).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

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

    ``reason`` is the rejection code: ``llm_unavailable`` (transport, retried out) or
    ``llm_error`` (the endpoint refused this request).
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


def _retry_after_s(exc: Any) -> float | None:
    """The server's requested pause (``Retry-After`` seconds, or ``retry-after-ms``), if any."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    for key, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(key)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            return None  # an HTTP date: fall back to our own backoff
    return None


class OpenAIChat:
    """:class:`ChatClient` over ``openai.OpenAI`` (any OpenAI-compatible base URL)."""

    def __init__(
        self,
        config: LLMConfig,
        *,
        sleep: Callable[[float], None] = time.sleep,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        if not config.configured:
            raise ConfigError("llm: set llm.base_url and llm.model (or --llm-base-url/--llm-model)")
        try:
            import openai
        except ImportError:
            raise BackendError(
                "script generation needs the 'openai' client: pip install 'duetflow[llm]'"
            ) from None
        env = os.environ if environ is None else environ
        # Local servers (vLLM, Ollama, llama.cpp) take any key; the client insists on one.
        key = env.get(config.api_key_env) or "no-key"
        self.config = config
        self._openai = openai
        self._client = openai.OpenAI(
            base_url=config.base_url, api_key=key, timeout=config.timeout_s, max_retries=0
        )
        self._sleep = sleep
        self._lock = threading.Lock()
        self.requests = 0  # HTTP requests sent by this client (all threads)

    def _delay(self, attempt: int, exc: Any) -> float:
        server = _retry_after_s(exc)
        cfg = self.config
        own = min(cfg.max_backoff_s, cfg.backoff_s * (2**attempt))
        return min(cfg.max_backoff_s, server) if server is not None else own

    def complete(self, messages: Sequence[Message], *, seed: int | None) -> ChatAnswer:
        """One chat completion, retrying transport failures (see the module docstring)."""
        oa = self._openai
        cfg = self.config
        last = ""
        failure: Any = None
        for attempt in range(cfg.max_retries + 1):
            with self._lock:
                self.requests += 1
            try:
                resp = self._client.chat.completions.create(
                    model=str(cfg.model),
                    messages=[dict(m) for m in messages],  # type: ignore[misc]
                    temperature=cfg.temperature,
                    seed=seed,
                    max_tokens=cfg.max_tokens,
                )
            except (oa.APITimeoutError, oa.APIConnectionError) as e:
                failure, last = e, f"{type(e).__name__}: {e}"
            except oa.APIStatusError as e:
                status = int(e.status_code)
                if status in FATAL_STATUSES:
                    raise BackendError(
                        f"llm endpoint {cfg.base_url} answered HTTP {status} for model "
                        f"{cfg.model!r}: {e.message} (check llm.base_url, llm.model and "
                        f"${cfg.api_key_env})"
                    ) from None
                if status not in RETRY_STATUSES and status < 500:
                    raise RequestFailed(
                        f"llm endpoint refused the request: HTTP {status}: {e.message}",
                        "llm_error",
                        attempt + 1,
                    ) from None
                failure, last = e, f"HTTP {status}: {e.message}"
            else:
                choice = resp.choices[0] if resp.choices else None
                text = choice.message.content if choice is not None else None
                return ChatAnswer(
                    text=text,
                    model=str(getattr(resp, "model", None) or cfg.model),
                    finish_reason=getattr(choice, "finish_reason", None),
                    attempts=attempt + 1,
                )
            if attempt < cfg.max_retries:
                delay = self._delay(attempt, failure)
                log.info("llm: %s; retry %d in %.2f s", last, attempt + 1, delay)
                self._sleep(delay)
        raise RequestFailed(
            f"llm endpoint {cfg.base_url} failed {cfg.max_retries + 1} time(s): {last}",
            "llm_unavailable",
            cfg.max_retries + 1,
        )
