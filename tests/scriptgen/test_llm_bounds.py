"""Outside answers are bounded (issue 24, item 4), against a real HTTP server on 127.0.0.1.

An answer that trickles in is cut off at ``llm.timeout_s`` (a total deadline, not a per-read
timeout); an answer over ``llm.max_answer_bytes`` is refused; a 200 that is HTML, not UTF-8,
truncated JSON or JSON of the wrong shape is a failed attempt, retried within
``llm.max_retries``, then a rejection with its cause. The other topics' scripts are kept and
a re-run asks only for what is missing.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from duetflow.bounded_http import HttpFailure, Limits, request
from duetflow.config import build_config
from duetflow.records.manifest import iter_rows
from duetflow.scriptgen import generate_scripts
from duetflow.scriptgen.generate import request_seed
from llm_server import (
    GOOD_EN,
    HTML_PAGE,
    NOT_UTF8,
    TRUNCATED,
    WRONG_SCHEMA,
    Received,
    Reply,
    chat_server,
    client_for,
    sequence,
)

pytestmark = pytest.mark.timeout(120)

CFG = build_config({"llm": {"backoff_s": 0.0, "max_retries": 1, "timeout_s": 1.0}})
BIG = json.dumps({"choices": [{"message": {"content": "x" * 300_000}}]}).encode()

MALFORMED = {
    "html": Reply(raw=HTML_PAGE, content_type="text/html"),
    "not_utf8": Reply(raw=NOT_UTF8),
    "truncated": Reply(raw=TRUNCATED),
    "wrong_schema": Reply(raw=WRONG_SCHEMA),
    "over_size": Reply(raw=BIG),
    "length_lie": Reply(raw=b'{"choices": []}', headers={"content-length": "5000"}),
    "trickle": Reply(content=GOOD_EN, trickle_s=0.02),  # ~1.3 KB: 26 s at this pace
}
CAUSES = {
    "html": "HTML or text",
    "not_utf8": "not UTF-8",
    "truncated": "truncated or invalid JSON",
    "wrong_schema": "wrong schema",
    "over_size": "over the limit",
    "length_lie": "cut off",
    "trickle": "no complete answer within 1 s",
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_bad_answer_then_a_good_one_is_one_retry(tmp_path: Path, case: str) -> None:
    cfg = CFG.model_copy(update={"llm": CFG.llm.model_copy(update={"max_answer_bytes": 100_000})})
    with chat_server(sequence(MALFORMED[case], Reply(content=GOOD_EN))) as srv:
        rep = generate_scripts(["work"], 1, "en", tmp_path, cfg, client_for(srv, cfg))
        assert srv.count() == 2
    assert (rep.written, rep.rejected) == (1, 0)


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_bad_answers_every_time_reject_only_that_script_and_a_rerun_asks_for_it(
    tmp_path: Path, case: str
) -> None:
    cfg = CFG.model_copy(update={"llm": CFG.llm.model_copy(update={"max_answer_bytes": 100_000})})
    bad_seed = request_seed(cfg, "gen-en-work-002")

    def reply(req: Received, index: int) -> Reply:
        return MALFORMED[case] if req.seed == bad_seed else Reply(content=GOOD_EN)

    started = time.monotonic()
    with chat_server(reply) as srv:
        rep = generate_scripts(["work"], 3, "en", tmp_path, cfg, client_for(srv, cfg))
        bad_asks = srv.count(lambda r: r.seed == bad_seed)
    elapsed = time.monotonic() - started
    assert bad_asks == 2  # the attempt and its one retry, no more
    assert rep.written == 2 and rep.rejected == 1
    (rej,) = list(iter_rows(tmp_path / "rejections.parquet"))
    assert rej["item_id"] == "gen-en-work-002"
    assert rej["reason"] in ("llm_bad_answer", "llm_unavailable")
    assert CAUSES[case] in rej["detail"] and "127.0.0.1" in rej["detail"]
    # bounded: two attempts of at most timeout_s each (a trickle would take 26 s per attempt)
    assert elapsed < 15.0
    # a re-run asks only for the missing script
    with chat_server(sequence(Reply(content=GOOD_EN))) as srv:
        rep = generate_scripts(["work"], 3, "en", tmp_path, cfg, client_for(srv, cfg))
        assert srv.count() == 1 and srv.received[0].seed == bad_seed
    assert (rep.written, rep.reused, rep.rejected) == (1, 2, 0)


@pytest.fixture
def slow_status_line() -> Iterator[str]:
    """A raw socket server whose status line arrives one byte every 0.1 s, forever."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(4)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            with conn:
                try:
                    conn.recv(65536)
                    for b in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 10_000:
                        if stop.is_set():
                            break
                        conn.sendall(bytes([b]))
                        time.sleep(0.1)
                except OSError:
                    continue

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1/chat/completions"
    stop.set()
    sock.close()
    t.join(5)


def test_headers_that_trickle_in_end_at_the_deadline(slow_status_line: str) -> None:
    started = time.monotonic()
    with pytest.raises(HttpFailure) as e:
        request("POST", slow_status_line, Limits(0.8, 10_000), body=b"{}")
    assert e.value.kind == "deadline" and "0.8 s" in str(e.value)
    assert time.monotonic() - started < 5.0  # per-read timeouts alone would wait ~17 min


def test_limits_must_be_finite() -> None:
    with pytest.raises(ValueError, match="finite"):
        Limits(float("inf"), 10)
    with pytest.raises(ValueError, match="finite"):
        Limits(float("nan"), 10)
