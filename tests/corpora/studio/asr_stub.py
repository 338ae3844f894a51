"""A local OpenAI-compatible transcription endpoint on 127.0.0.1 for the ASR hook tests.

``POST /v1/audio/transcriptions`` answers per uploaded track: the multipart ``file`` field's
name ends in ``-<speaker id>.wav`` and :attr:`AsrStub.texts` maps the speaker id to what the
"model" heard. :attr:`AsrStub.mode` makes it misbehave: ``slow`` (answers after
:attr:`AsrStub.delay_s`), ``malformed`` (not JSON), ``huge`` (an endless answer).
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class AsrStub:
    def __init__(self) -> None:
        self.texts: dict[str, str] = {}
        self.mode = "ok"
        self.delay_s = 5.0
        self.requests: list[dict[str, Any]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n)
                m = re.search(rb'filename="[^"]*-([A-Za-z0-9._]+)\.wav"', body)
                fields = dict(re.findall(rb'name="(\w+)"\r\n\r\n([^\r]*)\r\n', body))
                spk = m.group(1).decode() if m else ""
                stub.requests.append(
                    {"path": self.path, "speaker": spk, "wav": b"RIFF" in body,
                     "fields": {k.decode(): v.decode() for k, v in fields.items()}}
                )  # fmt: skip
                if stub.mode == "slow":
                    time.sleep(stub.delay_s)
                if self.path != "/v1/audio/transcriptions":
                    self.send_response(404)
                    self.end_headers()
                    return
                if stub.mode == "malformed":
                    out = b"<html>upstream error</html>"
                elif stub.mode == "huge":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    with contextlib.suppress(OSError):
                        self.wfile.write(b'{"text": "' + b"a" * (4 << 20) + b'"}')
                    return
                else:
                    text = stub.texts.get(spk, "")
                    out = json.dumps(
                        {"text": text, "segments": [{"start": 0.3, "end": 1.2, "text": text}]}
                    ).encode()
                with contextlib.suppress(OSError):  # a client past its deadline hung up
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(out)))
                    self.end_headers()
                    self.wfile.write(out)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
