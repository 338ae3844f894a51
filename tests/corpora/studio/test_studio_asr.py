"""The ASR hook (issue 29): untranscribed HM sessions are transcribed so their checks run.

Against a local OpenAI-compatible stub on 127.0.0.1 (tests/corpora/studio/asr_stub.py): a disclosure
said only aloud, a timeout, a malformed answer, an endless answer, resume from the cache.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asr_stub import AsrStub

from duetflow.config import build_config
from duetflow.corpora.studio import StudioAdapter
from duetflow.records.dialogue import Dialogue, Rejection
from studio_helpers import write_session

OPENING = "Hi, shall we plan a trip?"


@pytest.fixture
def stub() -> Iterator[AsrStub]:
    s = AsrStub()
    s.texts = {"user": OPENING, "system": "Sure, where would you like to go?"}
    yield s
    s.close()


def _scan(root: Path, stub: AsrStub, **over: Any) -> list[Dialogue | Rejection]:
    asr = {"base_url": stub.base_url, "timeout_s": 1.5, "retries": 1, **over.pop("asr", {})}
    cfg = build_config({"workdir": str(root / "work"), "asr": asr, **over})
    return list(
        StudioAdapter(root / "studio", {"state_dir": str(root / "state")}, config=cfg).scan()
    )


def _session(root: Path, sid: str = "s1") -> None:
    write_session(root / "studio" / sid, "tracks", session_id=sid, opening_line=OPENING)


def test_a_disclosure_said_only_aloud_is_found_through_the_transcript(
    tmp_path: Path, stub: AsrStub
) -> None:
    _session(tmp_path)
    stub.texts["system"] = "As an AI, I don't travel, but I can help you plan."
    (item,) = _scan(tmp_path, stub)
    assert isinstance(item, Rejection) and item.reason == "identity_disclosure", item
    assert "as an ai" in item.detail
    # each track was sent once, as WAV, with the model and verbose_json
    assert sorted(r["speaker"] for r in stub.requests) == ["system", "user"]
    assert all(r["wav"] and r["path"] == "/v1/audio/transcriptions" for r in stub.requests)
    assert {r["fields"]["response_format"] for r in stub.requests} == {"verbose_json"}


def test_a_clean_session_passes_its_checks_via_asr_and_resumes_from_the_cache(
    tmp_path: Path, stub: AsrStub
) -> None:
    _session(tmp_path)
    (item,) = _scan(tmp_path, stub)
    assert isinstance(item, Dialogue), item
    checks = item.provenance["hm_checks"]
    assert checks["identity_disclosure"] == "passed" and checks["source"] == "asr"
    assert checks["opening_line"] == "passed" and checks["target_language"] == "passed"
    sent = len(stub.requests)
    # a changed sidecar re-processes the session; the tracks' transcriptions are reused
    p = tmp_path / "studio" / "s1" / "session.yaml"
    p.write_text(p.read_text() + "\n# touched\n")
    (again,) = _scan(tmp_path, stub)
    assert isinstance(again, Dialogue)
    assert len(stub.requests) == sent


def test_a_timeout_is_bounded_and_leaves_the_session_unchecked(
    tmp_path: Path, stub: AsrStub
) -> None:
    _session(tmp_path)
    stub.mode, stub.delay_s = "slow", 5.0
    t0 = time.monotonic()
    (item,) = _scan(tmp_path, stub)
    took = time.monotonic() - t0
    assert isinstance(item, Dialogue), item
    assert item.provenance["hm_checks"]["identity_disclosure"] == "not checked"
    assert "ASR failed" in item.provenance["hm_checks"]["why"]
    assert "within asr.timeout_s=1.5" in item.provenance["hm_checks"]["why"]
    assert took < 4.0  # one track's deadline (1.5 s) ends the session's ASR, not 5 s x tries


def test_require_checks_rejects_a_session_that_could_not_be_checked(
    tmp_path: Path, stub: AsrStub
) -> None:
    _session(tmp_path)
    stub.mode = "malformed"
    (item,) = _scan(tmp_path, stub, studio={"require_checks": True})
    assert isinstance(item, Rejection) and item.reason == "unchecked_session", item
    assert "malformed answer" in item.detail
    assert len(stub.requests) == 1  # a malformed answer is not retried
    # the endpoint is fixed: the next run checks the session (the rejection was not cached)
    stub.mode = "ok"
    (item,) = _scan(tmp_path, stub, studio={"require_checks": True})
    assert isinstance(item, Dialogue), item


def test_an_endless_answer_is_cut_at_the_size_cap(tmp_path: Path, stub: AsrStub) -> None:
    _session(tmp_path)
    stub.mode = "huge"
    (item,) = _scan(tmp_path, stub, asr={"max_response_bytes": 65536})
    assert isinstance(item, Dialogue)
    assert "exceeds 65536" in item.provenance["hm_checks"]["why"]


def test_without_asr_an_untranscribed_session_is_not_checked_or_rejected(
    tmp_path: Path,
) -> None:
    _session(tmp_path)
    cfg = build_config({"workdir": str(tmp_path / "work"), "studio": {"require_checks": True}})
    (item,) = list(StudioAdapter(tmp_path / "studio", {"state_dir": None}, config=cfg).scan())
    assert isinstance(item, Rejection) and item.reason == "unchecked_session"
    assert "no transcript" in item.detail
