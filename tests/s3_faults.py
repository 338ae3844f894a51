"""S3 test helpers shared by the release tests: a config pointing at an endpoint,
botocore-level fault injection and a connection-dropping TCP proxy in front of moto.

Kept out of conftest.py so test modules import them by a name no other test folder uses.
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import struct
import threading
from collections.abc import Iterator
from typing import Any

from botocore.awsrequest import AWSResponse
from botocore.exceptions import ConnectionClosedError

from duetflow.config import RunConfig, build_config


def s3_config(endpoint: str, **release: Any) -> RunConfig:
    """A run config whose release section points at ``endpoint`` (fast backoff for tests)."""
    return build_config(
        {"release": {"endpoint_url": endpoint, "max_attempts": 4, **release}}, environ={}
    )


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._body


class FaultHook:
    """botocore ``before-send`` hook: every ``every``-th matching request fails.

    ``mode`` is ``"503"`` (a SlowDown response) or ``"drop"`` (a dropped connection).
    ``kill_after`` raises a non-retryable error once that many PutObject calls went through,
    simulating a publish process dying midway.
    """

    def __init__(
        self,
        every: int = 0,
        mode: str = "503",
        operations: tuple[str, ...] = (),
        kill_after: int | None = None,
        fail_times: int | None = None,
    ) -> None:
        self.every = every
        self.mode = mode
        self.operations = operations
        self.kill_after = kill_after
        self.fail_times = fail_times
        self.calls = 0
        self.injected = 0
        self.puts = 0
        self.lock = threading.Lock()

    def __call__(self, request: Any, **kwargs: Any) -> AWSResponse | None:
        op = kwargs.get("event_name", "").rsplit(".", 1)[-1]
        with self.lock:
            if self.kill_after is not None and op == "PutObject":
                if self.puts >= self.kill_after:
                    raise RuntimeError("publisher killed (injected)")
                self.puts += 1
            if self.operations and op not in self.operations:
                return None
            self.calls += 1
            fail = self.every and self.calls % self.every == 0
            if self.fail_times is not None:
                fail = self.injected < self.fail_times
            if not fail:
                return None
            self.injected += 1
        if self.mode == "drop":
            raise ConnectionClosedError(endpoint_url=request.url)
        body = (
            b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>'
            b"<Message>Please reduce your request rate.</Message></Error>"
        )
        return AWSResponse(request.url, 503, {"Content-Type": "application/xml"}, _Raw(body))


def attach(store: Any, hook: FaultHook) -> FaultHook:
    store.client.meta.events.register("before-send.s3.*", hook)
    return hook


class FlakyProxy:
    """A TCP proxy in front of moto that drops the first and then every ``every``-th
    connection mid-request.

    The dropped connection forwards nothing: the client has sent its request (headers, maybe
    part of the body) and gets a reset instead of a response — a real network fault.
    """

    def __init__(self, upstream: str, every: int) -> None:
        host, port = upstream.removeprefix("http://").split(":")
        self.upstream = (host, int(port))
        self.every = every
        self.counter = itertools.count(1)
        self.dropped = 0
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.endpoint = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            n = next(self.counter)
            threading.Thread(target=self._handle, args=(client, n), daemon=True).start()

    @staticmethod
    def _reset(s: socket.socket) -> None:
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        finally:
            s.close()

    def _handle(self, client: socket.socket, n: int) -> None:
        if self.every and (n - 1) % self.every == 0:  # the 1st, then every every-th
            try:
                client.settimeout(5)
                client.recv(65536)  # the request has started...
            except OSError:
                pass
            self.dropped += 1
            self._reset(client)  # ... and the connection dies
            return
        upstream = socket.create_connection(self.upstream)

        def pipe(a: socket.socket, b: socket.socket) -> None:
            try:
                while data := a.recv(65536):
                    b.sendall(data)
            except OSError:
                pass
            finally:
                for s in (a, b):
                    with contextlib.suppress(OSError):
                        s.shutdown(socket.SHUT_RDWR)

        t = threading.Thread(target=pipe, args=(upstream, client), daemon=True)
        t.start()
        pipe(client, upstream)
        t.join(timeout=30)
        client.close()
        upstream.close()

    def close(self) -> None:
        self._stop = True
        self.sock.close()
