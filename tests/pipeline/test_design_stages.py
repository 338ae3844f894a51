"""The pipeline's design stages end to end: HH ↔ HM matching and LLM scripts → PH."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import yaml

from duetflow.config import load_config
from duetflow.pipeline import driver as run
from duetflow.pipeline.cache import PH_LABEL
from duetflow.pipeline.stages.scripts import scripts_wanted
from duetflow.pipeline.stages.synth import synth_wanted
from duetflow.records import manifest
from flow_helpers import write_config
from llm_server import GOOD_EN, Received, Reply, chat_server


def _rows(path: str | Path) -> list[dict[str, object]]:
    return list(manifest.iter_rows(Path(path) / manifest.DIALOGUES))


def test_matching_mirrors_the_hm_topics_of_the_studio(tmp_path: Path, flow_samples: Path) -> None:
    cfg_path = write_config(
        tmp_path / "run.yaml", flow_samples, corpora=("dailytalk", "studio"), scripts=False
    )
    cfg = load_config(cfg_path)
    res = run.run_pipeline(cfg, publish=False)
    hist: Counter[tuple[str, str, str]] = Counter()
    for m in res.merged:
        for r in _rows(m.path):
            hist[(str(r["category"]), str(r["language"]), str(r["topic"]))] += 1
    hm = {(lang, t): n for (c, lang, t), n in hist.items() if c == "HM"}
    hh_en = {(lang, t): n for (c, lang, t), n in hist.items() if c == "HH" and lang == "en"}
    assert hm and {lang for lang, _ in hm} == {"en"}
    # per topic: as many HH windows as HM dialogues, or all there are; no other topic
    plan = json.loads((Path(cfg.workdir) / "matched" / "match.json").read_text())
    cells = {(c["language"], c["topic"]): c for c in plan["table"]}
    for (lang, topic), c in cells.items():
        assert c["hm"] == hm.get((lang, topic), 0)
        assert hh_en.get((lang, topic), 0) == min(c["hm"], c["hh_available"])
    assert set(hh_en) <= set(hm) and sum(hh_en.values()) > 0
    dt = next(m for m in res.merged if m.label == "dailytalk")
    assert dt.stage == "match" and dt.by_reason.get("match:hh_topic_surplus", 0) > 0
    hh_langs = {lang for (c, lang, _), n in hist.items() if c == "HH"}
    assert plan["unmatched_languages"] == sorted(hh_langs - {"en"})  # no HM there: untouched


def test_llm_scripts_stage_generates_rewrites_and_resumes(
    tmp_path: Path, flow_samples: Path
) -> None:
    def reply(req: Received, index: int) -> Reply:
        prompt = req.first_prompt
        if "Transcript:\n" not in prompt:
            return Reply(content=GOOD_EN)
        transcript = json.loads(prompt.split("Transcript:\n", 1)[1])
        return Reply(content=json.dumps([{**t, "text": "Well, " + t["text"]} for t in transcript]))

    with chat_server(reply) as srv:
        cfg_path = write_config(
            tmp_path / "run.yaml",
            flow_samples,
            scripts=False,
            synth={"enabled": True, "scripts": None, "voice_categories": ["HM", "HH"]},
            llm={"base_url": srv.url, "model": "test-model", "backoff_s": 0.0},
        )
        data = yaml.safe_load(cfg_path.read_text())
        data["scripts"] = {"per_topic": 1, "topics": ["work", "health"], "rewrite_hh": True}
        data["filters"] = {"topics": ["work"]}  # the topics filter keeps the HH side small
        cfg_path.write_text(yaml.safe_dump(data))
        cfg = load_config(cfg_path)
        assert synth_wanted(cfg) and scripts_wanted(cfg)
        first = run.run_pipeline(cfg, publish=False)
        asked = srv.count()
        second = run.run_pipeline(cfg, publish=False)
        assert srv.count() == asked  # every script is on disk: nothing asked again
    ph = next(m for m in first.merged if m.label == PH_LABEL)
    rows = _rows(ph.path)
    hh = _rows(next(m for m in first.merged if m.label == "dailytalk").path)
    sources = Counter(json.loads(str(r["provenance"]))["script_source"] for r in rows)
    # both generated scripts reached synthesis: each is a PH dialogue or a rejection with its
    # reason (the renderer may refuse a pause it cannot confirm in band: gap_unconfirmed)
    refused = {
        str(r["item_id"]): str(r["reason"])
        for r in manifest.iter_rows(Path(ph.path) / manifest.REJECTIONS)
        if str(r["item_id"]).startswith("ph__default__gen-")
    }
    assert sources["generated"] + len(refused) == 2 and sources["generated"] >= 1, refused
    assert set(refused.values()) <= {"gap_unconfirmed"}, refused
    assert 0 < sources["rewritten-hh"] <= len(hh)
    assert {r["topic"] for r in hh} == {"work"}
    hh_source = {r["dialogue_id"]: r["source_id"] for r in hh}
    for r in rows:
        prov = json.loads(str(r["provenance"]))
        assert r["tts_backend"] == "default" and str(r["dialogue_id"]).startswith("ph__default__")
        if prov["script_source"] == "rewritten-hh":
            assert r["source_id"] == hh_source[prov["source_dialogue_id"]]
            assert prov["script_provenance"]["task"] == "rewrite"
        else:
            assert r["topic"] in ("work", "health") and r["source_id"].startswith("gen-en-")
    assert second.computed("synth") == 0
    rewritten = list((Path(cfg.workdir) / "scripts" / "rewritten").rglob("*.json"))
    assert len(rewritten) == sources["rewritten-hh"]
    assert asked == 2 + len(rewritten)  # one valid answer per script, nothing asked twice
