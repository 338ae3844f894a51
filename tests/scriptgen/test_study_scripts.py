"""Scripts as the seed study wrote them, against the local OpenAI-compatible server.

* the rewrite request carries the study's refinement instructions (App. B.5): rephrase into
  everyday expressions, add light interjections and fillers, keep the meaning and the turns;
* a rewrite with added fillers is accepted on the first answer; one that drops a turn is
  re-asked (and, dropped every time, rejected ``llm_invalid``);
* the generate prompt keeps its 40-50 s target and JSON-only contract;
* near-duplicate generated scripts of one topic are merged, the rejection recorded.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from duetflow.config import build_config
from duetflow.records.manifest import iter_rows
from duetflow.scriptgen import generate_scripts, rewrite_scripts
from duetflow.scriptgen.dedup import edit_similarity, find_near_duplicates, tokens
from duetflow.scriptgen.generate import generate_requests, request_seed
from duetflow.tts.script import Script, ScriptLine, load_scripts
from llm_server import GOOD_LINES_EN, Received, Reply, chat_server, client_for, lines_json

CFG = build_config({"llm": {"backoff_s": 0.0}})
FILLERS = ("Um, ", "Oh, ", "Well, you know, ")

#: another valid 40-50 s dialogue, on something else entirely
OTHER_LINES_EN = tuple(
    ("A" if i % 2 == 0 else "B", text)
    for i, text in enumerate(
        [
            "So the tomatoes in my garden finally turned red this week.",
            "Really? Mine are still green and the leaves look sick.",
            "You should water them early in the morning, not at night.",
            "My neighbour said the same thing about the slugs too.",
            "Slugs love wet soil, so evening watering just invites them.",
            "Then I will try mornings before work starting tomorrow.",
            "And pinch off the yellow leaves near the bottom first.",
            "Should I throw them away or put them in compost?",
            "Throw them away, otherwise the disease spreads back again.",
            "Good to know, I almost ruined the whole compost pile.",
            "Bring me a photo next time and we can check.",
            "Deal, and maybe I will bring you some basil as well.",
        ]
    )
)


def _scripts(folder: Path) -> dict[str, Script]:
    return {s.id: s for s in load_scripts(folder) if isinstance(s, Script)}


def test_the_rewrite_request_carries_the_study_instructions_and_fillers_pass(
    tmp_path: Path, hh_workdir: Path
) -> None:
    prompts: list[str] = []

    def reply(req: Received, index: int) -> Reply:
        prompts.append(req.first_prompt)
        transcript = json.loads(req.first_prompt.split("Transcript:\n", 1)[1])
        rewritten = [
            {**t, "text": FILLERS[i % 3] + t["text"].lower()} for i, t in enumerate(transcript)
        ]
        return Reply(content=json.dumps(rewritten, ensure_ascii=False))

    with chat_server(reply) as srv:
        rep = rewrite_scripts(hh_workdir, tmp_path, CFG, client_for(srv, CFG))
        assert srv.count() == rep.written > 0  # each accepted on its first answer
    assert rep.rejected == 0
    for prompt in prompts:
        assert "Rephrase each turn into everyday, colloquial expressions" in prompt
        assert "Add light interjections and fillers where natural" in prompt
        assert "Keep the meaning of every turn and the flow of the conversation" in prompt
        assert "Never merge, split or drop a turn" in prompt
        assert "in the same structure as the transcript" in prompt
        assert "Do not add or remove information" not in prompt  # today's "add nothing" is gone
    zh = next(p for p in prompts if "Mandarin" in p)
    assert '"嗯"' in zh  # the language's own fillers
    for s in _scripts(tmp_path).values():
        assert all(ln.text.startswith(FILLERS) for ln in s.lines)
        assert s.provenance["attempts"] == 1


def test_a_rewrite_that_drops_a_turn_is_re_asked(tmp_path: Path, hh_workdir: Path) -> None:
    def reply(req: Received, index: int) -> Reply:
        transcript = json.loads(req.first_prompt.split("Transcript:\n", 1)[1])
        if len(req.messages) == 1:  # the first answer leaves out the middle turn
            del transcript[len(transcript) // 2]
            return Reply(content=json.dumps(transcript, ensure_ascii=False))
        assert "turns; it must have" in req.messages[-1]["content"]  # the error is quoted
        return Reply(content=json.dumps([{**t, "text": "Oh, " + t["text"]} for t in transcript]))

    with chat_server(reply) as srv:
        rep = rewrite_scripts(hh_workdir, tmp_path, CFG, client_for(srv, CFG))
        assert srv.count() == 2 * rep.written and rep.rejected == 0
    for s in _scripts(tmp_path).values():
        assert s.provenance["attempts"] == 2

    def always_short(req: Received, index: int) -> Reply:
        transcript = json.loads(req.first_prompt.split("Transcript:\n", 1)[1])
        return Reply(content=json.dumps(transcript[1:], ensure_ascii=False))

    with chat_server(always_short) as srv:
        out = tmp_path / "never"
        rep = rewrite_scripts(hh_workdir, out, CFG, client_for(srv, CFG))
        n = rep.requested - rep.reasons.get("script_imbalanced", 0)
        assert srv.count() == n * (CFG.llm.max_retries + 1)
    assert rep.kept == 0 and rep.reasons.get("llm_invalid") == n > 0


def test_the_generate_prompt_keeps_its_length_and_json_contract() -> None:
    [req] = list(generate_requests(["work"], 1, "en", CFG))
    assert "40 to 50 seconds when spoken aloud" in req.prompt
    assert "Answer with only a JSON array, nothing before or after it" in req.prompt
    assert '[{"speaker": "A", "text": "..."}, {"speaker": "B", "text": "..."}]' in req.prompt


def _variant(lines, k: int):
    """``lines`` with a different filler at the start of line ``k`` (a near-duplicate)."""
    return tuple((s, ("Well, " + t) if i == k else t) for i, (s, t) in enumerate(lines))


@pytest.mark.parametrize("method", ["tfidf", "edit"])
def test_near_duplicate_scripts_are_merged_with_the_rejection_recorded(
    tmp_path: Path, method: str
) -> None:
    cfg = build_config(
        {"llm": {"backoff_s": 0.0}, "scripts": {"dedup_threshold": 0.8, "dedup_method": method}}
    )
    ids = [f"gen-en-{t}-{k:03d}" for t in ("work", "health") for k in range(1, 5)]
    content = {  # 002 repeats 001, 004 repeats 003
        "gen-en-work-001": GOOD_LINES_EN,
        "gen-en-work-002": _variant(GOOD_LINES_EN, 3),
        "gen-en-work-003": OTHER_LINES_EN,
        "gen-en-work-004": _variant(OTHER_LINES_EN, 5),
    }  # and every health script says work 001's dialogue
    by_seed = {request_seed(cfg, sid): sid for sid in ids}

    def reply(req: Received, index: int) -> Reply:
        return Reply(content=lines_json(content.get(by_seed[req.seed or 0], GOOD_LINES_EN)))

    with chat_server(reply) as srv:
        rep = generate_scripts(["work", "health"], 4, "en", tmp_path, cfg, client_for(srv, cfg))
        asked = srv.count()
        again = generate_scripts(["work", "health"], 4, "en", tmp_path, cfg, client_for(srv, cfg))
        assert srv.count() == asked  # merged scripts are not asked for again
    # health 002..004 are answered with work 001's dialogue: they merge into health 001
    assert sorted(_scripts(tmp_path)) == ["gen-en-health-001", "gen-en-work-001", "gen-en-work-003"]
    assert (rep.requested, rep.kept, rep.rejected, rep.merged) == (8, 3, 5, 5)
    assert rep.reasons == {"near_duplicate": 5}
    assert (again.requested, again.kept, again.rejected) == (8, 3, 5)
    rows = {r["item_id"]: r for r in iter_rows(tmp_path / "rejections.parquet")}
    assert rows["gen-en-work-002"]["reason"] == "near_duplicate"
    assert "merged into gen-en-work-001" in rows["gen-en-work-002"]["detail"]
    assert "merged into gen-en-work-003" in rows["gen-en-work-004"]["detail"]
    assert "scripts.dedup_threshold 0.8" in rows["gen-en-work-004"]["detail"]
    assert (tmp_path / "rejected" / "gen-en-work-002.json.rejected").is_file()


def test_similarity_measures_tell_repeats_from_other_dialogues() -> None:
    def script(sid: str, lines, topic: str = "work", lang: str = "en") -> Script:
        return Script(sid, lang, tuple(ScriptLine(s, t) for s, t in lines), topic=topic)

    a, b = script("a", GOOD_LINES_EN), script("b", OTHER_LINES_EN)
    near = script("c", _variant(GOOD_LINES_EN, 0))
    for method in ("tfidf", "edit"):
        dups = find_near_duplicates([a, b, near], 0.8, method)  # type: ignore[arg-type]
        assert [(d.script_id, d.kept_id) for d in dups] == [("c", "a")]
        assert find_near_duplicates([a, b], 0.5, method) == []  # type: ignore[arg-type]
    assert edit_similarity("abc", "abc") == 1.0
    assert tokens("你好吗 ok") == ["你好", "好吗", "ok"]  # CJK: character bigrams
    zh1 = script("z1", [("A", "我们周末去公园跑步吧"), ("B", "好啊，几点出发呢")], lang="zh")
    zh2 = script("z2", [("A", "我们周末去公园跑步吧"), ("B", "好啊，几点出发")], lang="zh")
    zh3 = script("z3", [("A", "明天的会议改到下午"), ("B", "知道了，我通知大家")], lang="zh")
    dups = find_near_duplicates([zh1, zh2, zh3], 0.8)
    assert [(d.script_id, d.kept_id) for d in dups] == [("z2", "z1")]
