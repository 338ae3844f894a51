"""A small OpenAI-compatible chat-completions server on 127.0.0.1 for the script-generation tests.

It runs in a thread (``http.server``), answers ``POST /v1/chat/completions`` with whatever the
test's ``reply`` function returns for that request, and records every request it received, so
tests can count requests per script and inspect the messages. Nothing leaves the machine.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from duetflow.scriptgen.llm import OpenAIChat


@dataclass(frozen=True)
class Reply:
    """One scripted answer: an HTTP status, the assistant text (for 200) or an error body."""

    status: int = 200
    content: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    #: hostile answers: ``raw`` is sent as the body instead of a chat completion (HTML, bytes
    #: that are not UTF-8, truncated JSON); ``trickle_s`` sends the body one byte at a time
    #: with this pause between bytes; ``content_type`` overrides the header
    raw: bytes | None = None
    trickle_s: float = 0.0
    content_type: str = "application/json"


@dataclass
class Received:
    """One request as the server saw it."""

    body: dict[str, Any]

    @property
    def messages(self) -> list[dict[str, str]]:
        return list(self.body.get("messages", []))

    @property
    def seed(self) -> int | None:
        return self.body.get("seed")

    @property
    def first_prompt(self) -> str:
        return self.messages[0]["content"]


ReplyFn = Callable[[Received, int], Reply]


class ChatServer:
    """The server; ``received`` lists every request (thread-safe), ``url`` is the base URL."""

    def __init__(self, reply: ReplyFn) -> None:
        self.reply = reply
        self.received: list[Received] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                n = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(n) or b"{}")
                req = Received(body)
                with server._lock:
                    server.received.append(req)
                    index = len(server.received) - 1
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                r = server.reply(req, index)
                if r.delay_s:
                    time.sleep(r.delay_s)
                if r.raw is not None:
                    self._send(r.status, None, r.headers, r)
                    return
                if r.status != 200:
                    self._send(r.status, {"error": {"message": f"scripted {r.status}"}}, r.headers)
                    return
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{index}",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body.get("model", "test-model"),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": r.content},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    },
                    r.headers,
                    r,
                )

            def _send(
                self,
                status: int,
                payload: Any,
                headers: dict[str, str] | None = None,
                r: Reply | None = None,
            ) -> None:
                r = r or Reply()
                data = r.raw if r.raw is not None else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", r.content_type)
                    if "content-length" not in (headers or {}):
                        self.send_header("content-length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    if not r.trickle_s:
                        self.wfile.write(data)
                        return
                    for i in range(len(data)):  # an answer that never stops arriving
                        self.wfile.write(data[i : i + 1])
                        self.wfile.flush()
                        time.sleep(r.trickle_s)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up
                    pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> ChatServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def count(self, predicate: Callable[[Received], bool] | None = None) -> int:
        with self._lock:
            return sum(1 for r in self.received if predicate is None or predicate(r))


@contextmanager
def chat_server(reply: ReplyFn) -> Iterator[ChatServer]:
    server = ChatServer(reply).start()
    try:
        yield server
    finally:
        server.stop()


def sequence(*replies: Reply) -> ReplyFn:
    """Answer the n-th request with ``replies[n]`` (the last one repeats)."""

    def reply(_: Received, index: int) -> Reply:
        return replies[min(index, len(replies) - 1)]

    return reply


# --- answers ------------------------------------------------------------------------------------

#: 12 lines of 10 words: 120 words, 46.2 s at 2.6 words/s, A and B six lines each.
GOOD_LINES_EN: Sequence[tuple[str, str]] = tuple(
    ("A" if i % 2 == 0 else "B", text)
    for i, text in enumerate(
        [
            "Um, so did you ever find a place for dinner?",
            "Yeah, we tried that new noodle bar near the station.",
            "Oh nice, I keep walking past it and wondering, honestly.",
            "It was good, you know, the broth was really rich.",
            "Was it busy? That street is always packed on Fridays.",
            "We waited maybe twenty minutes, but it moved pretty fast.",
            "Hmm, twenty minutes is fine if the food is worth it.",
            "I mean, I would go back, maybe earlier next time.",
            "Do they have anything vegetarian? My sister is picky, right.",
            "They had a mushroom one, and it looked pretty good.",
            "Okay, then maybe we could all go together next weekend.",
            "Sure, let's do it, I will book a table tonight.",
        ]
    )
)


def lines_json(lines: Sequence[tuple[str, str]]) -> str:
    return json.dumps([{"speaker": s, "text": t} for s, t in lines], ensure_ascii=False)


GOOD_EN = lines_json(GOOD_LINES_EN)
MALFORMED = 'Sure! Here is the dialogue: [{"speaker": "A", "text": "hi"'
#: 200 answers that are not chat completions (each must be a failed, retried attempt)
HTML_PAGE = b"<!doctype html><html><body><h1>502 Bad Gateway</h1></body></html>"
NOT_UTF8 = b'{"choices": [{"message": {"content": "caf\xe9 \xff"}}]}'
TRUNCATED = b'{"id": "x", "choices": [{"message": {"role": "assistant", "content": "[{\\"spe'
WRONG_SCHEMA = b'{"result": "here is your dialogue", "choices": "none"}'
SCHEMA_VIOLATION = json.dumps(
    [{"speaker": "C", "text": "Hello there."}, {"speaker": "A", "text": "Hi."}]
)


def client_for(server: ChatServer, config: Any, **llm: Any) -> OpenAIChat:
    """The production client, pointed at the test server (no real sleeping between retries)."""
    cfg = config.llm.model_copy(update={"base_url": server.url, "model": "test-model", **llm})
    return OpenAIChat(cfg, sleep=lambda s: None, environ={})
