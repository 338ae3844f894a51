"""Script generation against a local OpenAI-compatible server: re-asks, retries, resume.

Every test talks HTTP to ``llm_server.ChatServer`` on 127.0.0.1 through the production client
(:class:`~duetflow.scriptgen.llm.OpenAIChat` over :mod:`duetflow.bounded_http`); the server
scripts the answers and counts the requests, which is the ground truth these tests assert on.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from duetflow.config import RunConfig, build_config
from duetflow.errors import BackendError
from duetflow.records.dialogue import Stage
from duetflow.records.manifest import iter_rows
from duetflow.scriptgen import generate_scripts, rewrite_scripts
from duetflow.scriptgen.generate import request_seed
from duetflow.tts.script import Script, load_scripts
from llm_server import (
    GOOD_EN,
    GOOD_LINES_EN,
    MALFORMED,
    SCHEMA_VIOLATION,
    Received,
    Reply,
    chat_server,
    client_for,
    lines_json,
    sequence,
)

CFG = build_config({"llm": {"backoff_s": 0.0}})


def _scripts(folder: Path) -> dict[str, Script]:
    out = {}
    for item in load_scripts(folder):
        assert isinstance(item, Script), item
        out[item.id] = item
    return out


def test_malformed_json_then_a_valid_answer_is_one_recorded_retry(tmp_path: Path) -> None:
    with chat_server(sequence(Reply(content=MALFORMED), Reply(content=GOOD_EN))) as srv:
        rep = generate_scripts(["work"], 1, "en", tmp_path, CFG, client_for(srv, CFG))
        assert srv.count() == 2
        second = srv.received[1].messages
    assert (rep.requested, rep.written, rep.rejected) == (1, 1, 0)
    # the follow-up quotes the invalid answer and says what was wrong with it
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert second[1]["content"] == MALFORMED and "not valid JSON" in second[2]["content"]
    (script,) = _scripts(tmp_path).values()
    assert script.id == "gen-en-work-001" and script.topic == "work"
    assert [(ln.speaker, ln.text) for ln in script.lines] == list(GOOD_LINES_EN)
    prov = script.provenance
    assert prov["attempts"] == 2 and prov["http_attempts"] == 2
    assert len(prov["validation_errors"]) == 1 and "not valid JSON" in prov["validation_errors"][0]
    assert set(prov["templates"]) == {"generate", "repair"}
    assert all(len(h) == 64 for h in prov["templates"].values())
    assert prov["model"] == "test-model" and prov["seed"] == request_seed(CFG, script.id)
    import hashlib

    assert prov["response_sha256"] == hashlib.sha256(GOOD_EN.encode()).hexdigest()
    assert 40 <= prov["speaking_time_s"] <= 50


def test_a_schema_violation_answered_every_time_is_llm_invalid(tmp_path: Path) -> None:
    cfg = build_config({"llm": {"backoff_s": 0.0, "max_retries": 2}})
    with chat_server(sequence(Reply(content=SCHEMA_VIOLATION))) as srv:
        rep = generate_scripts(["health"], 1, "en", tmp_path, cfg, client_for(srv, cfg))
        assert srv.count() == 3  # the first answer + max_retries re-asks
        again = generate_scripts(["health"], 1, "en", tmp_path, cfg, client_for(srv, cfg))
        assert srv.count() == 3  # a final rejection is not asked again
    assert (rep.written, rep.rejected, rep.reasons) == (0, 1, {"llm_invalid": 1})
    (rej,) = rep.rejections
    assert rej.item_id == "gen-en-health-001" and rej.stage is Stage.SCRIPT
    assert "[0].speaker" in rej.detail and "'C' is not one of ['A', 'B']" in rej.detail
    assert not list(tmp_path.glob("*.json"))
    rows = list(iter_rows(tmp_path / "rejections.parquet"))
    assert [(r["item_id"], r["reason"], r["stage"]) for r in rows] == [
        ("gen-en-health-001", "llm_invalid", "script")
    ]
    assert (again.requested, again.rejected, again.requests) == (1, 1, 0)


def test_default_retries_re_ask_three_times(tmp_path: Path) -> None:
    assert RunConfig().llm.max_retries == 3
    with chat_server(sequence(Reply(content="[]"))) as srv:
        rep = generate_scripts(["work"], 1, "en", tmp_path, CFG, client_for(srv, CFG))
        assert srv.count() == 4
    assert rep.reasons == {"llm_invalid": 1}


def test_429_and_5xx_are_retried_with_backoff(tmp_path: Path) -> None:
    cfg = build_config({"llm": {"backoff_s": 0.5, "max_backoff_s": 4.0}})
    pauses: list[float] = []
    replies = sequence(
        Reply(status=429, headers={"retry-after": "2"}),
        Reply(status=500),
        Reply(status=503),
        Reply(content=GOOD_EN),
    )
    with chat_server(replies) as srv:
        client = client_for(srv, cfg)
        client._sleep = pauses.append
        rep = generate_scripts(["tourism"], 1, "en", tmp_path, cfg, client)
        assert srv.count() == 4
    assert rep.written == 1
    # the server's Retry-After first, then our own doubling backoff
    assert pauses == [2.0, 1.0, 2.0]
    (script,) = _scripts(tmp_path).values()
    assert script.provenance["http_attempts"] == 4 and script.provenance["attempts"] == 1


def test_a_timeout_is_retried(tmp_path: Path) -> None:
    cfg = build_config({"llm": {"backoff_s": 0.0, "timeout_s": 0.3}})
    with chat_server(sequence(Reply(content=GOOD_EN, delay_s=1.0), Reply(content=GOOD_EN))) as srv:
        rep = generate_scripts(["finance"], 1, "en", tmp_path, cfg, client_for(srv, cfg))
        assert srv.count() == 2
    assert rep.written == 1


def test_an_endpoint_that_stays_down_rejects_and_is_asked_again_later(tmp_path: Path) -> None:
    cfg = build_config({"llm": {"backoff_s": 0.0, "max_retries": 1}})
    with chat_server(sequence(Reply(status=503))) as srv:
        rep = generate_scripts(["work"], 2, "en", tmp_path, cfg, client_for(srv, cfg))
        assert srv.count() == 4
    assert rep.reasons == {"llm_unavailable": 2} and rep.requested == 2
    with chat_server(sequence(Reply(content=GOOD_EN))) as srv:
        rep = generate_scripts(["work"], 2, "en", tmp_path, cfg, client_for(srv, cfg))
        assert srv.count() == 2  # transient failures are not persisted
    assert (rep.written, rep.rejected) == (2, 0)
    assert not list(iter_rows(tmp_path / "rejections.parquet"))


def test_a_wrong_key_or_model_stops_the_run(tmp_path: Path) -> None:
    with (
        chat_server(sequence(Reply(status=401))) as srv,
        pytest.raises(BackendError, match="HTTP 401"),
    ):
        generate_scripts(["work"], 3, "en", tmp_path, CFG, client_for(srv, CFG))


def test_a_bad_request_rejects_only_that_script(tmp_path: Path) -> None:
    def reply(req: Received, index: int) -> Reply:
        bad = req.seed == request_seed(CFG, "gen-en-work-002")
        return Reply(status=400) if bad else Reply(content=GOOD_EN)

    with chat_server(reply) as srv:
        rep = generate_scripts(["work"], 3, "en", tmp_path, CFG, client_for(srv, CFG))
    assert rep.reasons == {"llm_error": 1} and rep.written == 2
    assert sorted(_scripts(tmp_path)) == ["gen-en-work-001", "gen-en-work-003"]


def test_a_killed_run_resumes_without_asking_for_finished_scripts(tmp_path: Path) -> None:
    """SIGKILL a real ``duetflow scripts generate`` midway, then run it again."""
    out = tmp_path / "out"
    ids = [f"gen-en-work-{k:03d}" for k in range(1, 7)]
    seed_of = {request_seed(CFG, sid): sid for sid in ids}
    cfg_path = tmp_path / "run.yaml"
    cfg_path.write_text("llm: {concurrency: 1, backoff_s: 0.0}\n", encoding="utf-8")

    with chat_server(sequence(Reply(content=GOOD_EN, delay_s=0.4))) as srv:
        cmd = [
            str(Path(sys.executable).with_name("duetflow")),
            "scripts",
            "generate",
            "--topic",
            "work",
            "--per-topic",
            "6",
            "--language",
            "en",
            "--out",
            str(out),
            "--llm-base-url",
            srv.url,
            "--llm-model",
            "test-model",
            "-c",
            str(cfg_path),
        ]
        proc = subprocess.Popen(cmd, start_new_session=True)
        deadline = time.monotonic() + 60
        while len(list(out.glob("*.json"))) < 2:
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        # the server may still be reading a request the killed run sent: let it land in the first
        # run's count before the second run starts (bounded wait for the count to stay put)
        settle = time.monotonic() + 10
        seen = -1
        while seen != len(srv.received) and time.monotonic() < settle:
            seen = len(srv.received)
            time.sleep(0.5)
        finished = sorted(p.stem for p in out.glob("*.json"))
        assert 2 <= len(finished) < 6
        # a request cut off by the kill may be recorded without its body (no seed)
        first_run = [seed_of[r.seed] for r in srv.received if r.seed is not None]
        asked_before = len(srv.received)
        assert set(finished) <= set(first_run)  # each finished script was asked for by the run
        # no half-written script: every file parses as a script
        assert set(_scripts(out)) == set(finished)

        cfg = build_config({"llm": {"backoff_s": 0.0}})
        rep = generate_scripts(["work"], 6, "en", out, cfg, client_for(srv, cfg))
        second_run = [seed_of[r.seed] for r in srv.received[asked_before:]]
    assert not set(second_run) & set(finished)
    assert sorted(second_run) == sorted(set(ids) - set(finished))
    assert (rep.reused, rep.written, rep.rejected) == (len(finished), 6 - len(finished), 0)
    assert sorted(_scripts(out)) == ids


def test_concurrency_does_not_change_the_output(tmp_path: Path) -> None:
    def reply(req: Received, index: int) -> Reply:  # the answer depends on the request only
        opener = ("Um,", "Uh,", "Well,")[(req.seed or 0) % 3]
        lines = [(s, t.replace("Um,", opener)) for s, t in GOOD_LINES_EN]
        return Reply(content=lines_json(lines))

    outs = []
    for conc in (1, 4):
        cfg = build_config({"llm": {"backoff_s": 0.0, "concurrency": conc}})
        with chat_server(reply) as srv:
            generate_scripts(
                ["work", "health"], 4, "en", tmp_path / str(conc), cfg, client_for(srv, cfg)
            )
        outs.append({p.name: p.read_bytes() for p in (tmp_path / str(conc)).glob("*.json")})
    assert len(outs[0]) == 8 and outs[0] == outs[1]
    assert len({json.loads(b)["lines"][0]["text"] for b in outs[0].values()}) > 1


def test_rewrite_keeps_turns_and_links_the_source(tmp_path: Path, hh_workdir: Path) -> None:
    """A rewrite with the wrong turn count is re-asked; the kept one names its HH source."""
    prompts: dict[str, list[dict[str, str]]] = {}

    def reply(req: Received, index: int) -> Reply:
        transcript = json.loads(req.first_prompt.split("Transcript:\n", 1)[1])
        if len(req.messages) == 1:
            return Reply(content=json.dumps(transcript[:-1]))  # one turn short
        prompts[str(req.seed)] = transcript
        return Reply(content=json.dumps([{**t, "text": "Well, " + t["text"]} for t in transcript]))

    with chat_server(reply) as srv:
        rep = rewrite_scripts(hh_workdir, tmp_path, CFG, client_for(srv, CFG))
        assert srv.count() == 2 * rep.written
    rows = list(iter_rows(hh_workdir / "dialogues.parquet"))
    hh = [r for r in rows if r["category"] == "HH"]
    assert rep.requested == len(hh) and rep.written == len(hh) > 0
    scripts = _scripts(tmp_path)
    for row in hh:
        s = scripts[f"rw-{row['dialogue_id']}"]
        assert s.source == "rewritten-hh" and s.source_dialogue_id == row["dialogue_id"]
        assert s.source_id == row["source_id"] and s.topic == row["topic"]
        assert all(ln.text.startswith("Well, ") for ln in s.lines)
        assert s.provenance["attempts"] == 2 and "turns" in s.provenance["validation_errors"][0]


def test_cli_rewrite_and_a_missing_llm(tmp_path: Path, hh_workdir: Path) -> None:
    from click.testing import CliRunner

    from duetflow.cli import main

    no_llm = CliRunner().invoke(
        main, ["scripts", "rewrite", "--from", str(hh_workdir), "--out", str(tmp_path / "x")]
    )
    assert no_llm.exit_code != 0 and "--llm-base-url" in no_llm.output

    def reply(req: Received, index: int) -> Reply:
        transcript = json.loads(req.first_prompt.split("Transcript:\n", 1)[1])
        return Reply(content=json.dumps(transcript))

    with chat_server(reply) as srv:
        res = CliRunner().invoke(
            main,
            [
                "scripts",
                "rewrite",
                "--from",
                str(hh_workdir),
                "--out",
                str(tmp_path / "rw"),
                "--llm-base-url",
                srv.url,
                "--llm-model",
                "m",
            ],
        )
    assert res.exit_code == 0, res.output
    assert "2 scripts: 2 written, 0 already there, 0 rejected (2 request(s) sent)" in res.output
    assert sorted(p.name for p in (tmp_path / "rw").glob("*.json")) == [
        "rw-fx__d1__w000_00000000.json",
        "rw-fx__r3__w001_00030000.json",
    ]
