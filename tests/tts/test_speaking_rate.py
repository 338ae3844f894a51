"""Speaking-time estimate, the sample scripts it sizes, and PH length on the rendered audio."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import pytest
import soundfile as sf
from tts_helpers import tts_config

from duetflow.demo.scripts import SAMPLE_SCRIPTS, SAMPLE_SPEECH_S
from duetflow.pipeline.commands import synthesize
from duetflow.records.manifest import DIALOGUES, REJECTIONS, TURNS, iter_rows
from duetflow.tts.speaking_rate import (
    SPEAKING_RATES,
    dialogue_rate_cps,
    rate_for,
    script_speaking_time_s,
    speaking_time_s,
)

EN, ZH = SPEAKING_RATES["en"].per_s, SPEAKING_RATES["zh"].per_s


def test_units_and_rates() -> None:
    assert speaking_time_s("Well, I don't think so.", "en") == pytest.approx(5 / EN)
    assert speaking_time_s("今天外面好冷啊，你出门了吗？", "zh") == pytest.approx(12 / ZH)
    # tags and punctuation take no time; mixed text counts each part at its own rate
    assert speaking_time_s("[laughter] Oh, (laughs) really?", "en") == pytest.approx(2 / EN)
    assert speaking_time_s("我们用 Python 写", "zh") == pytest.approx(4 / ZH + 1 / EN)
    assert rate_for("zh-CN") == rate_for("cmn") == SPEAKING_RATES["zh"]
    assert rate_for("de") == SPEAKING_RATES["en"]


@pytest.mark.parametrize("script", SAMPLE_SCRIPTS, ids=[s["id"] for s in SAMPLE_SCRIPTS])
def test_sample_scripts_are_shaped_like_the_studys(script: dict) -> None:
    lines = script["lines"]
    est = script_speaking_time_s([ln["text"] for ln in lines], script["language"])
    # long enough to be cut to any human length (synth.match_human_length)
    assert SAMPLE_SPEECH_S[0] <= est <= SAMPLE_SPEECH_S[1], est
    assert {ln["speaker"] for ln in lines} == {"A", "B"}
    assert all(a["speaker"] != b["speaker"] for a, b in itertools.pairwise(lines))
    fillers = ("um", "uh", "oh", "hmm", "huh", "you know", "well", "嗯", "那个", "啊", "哦")
    text = " ".join(ln["text"].lower() for ln in lines)
    assert sum(text.count(f) for f in fillers) >= 2


def test_sample_scripts_cover_english_and_chinese() -> None:
    assert {s["language"] for s in SAMPLE_SCRIPTS} == {"en", "zh"}


def test_ph_dialogues_render_inside_the_window_or_are_rejected(
    voices_workdir: Path, sample_scripts: Path, tmp_path: Path
) -> None:
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    for p in sample_scripts.glob("*.json"):
        (scripts / p.name).write_bytes(p.read_bytes())
    short = {"id": "short", "language": "en", "lines": SAMPLE_SCRIPTS[0]["lines"][:2]}
    long_lines = [ln for s in SAMPLE_SCRIPTS if s["language"] == "en" for ln in s["lines"]] * 2
    long = {"id": "long", "language": "en", "lines": long_lines}
    for d in (short, long):
        (scripts / f"{d['id']}.json").write_text(json.dumps(d), encoding="utf-8")
    cfg = tts_config()  # the fixture's voices are HH speakers
    out = tmp_path / "out"
    # scripts are cut to human lengths (synth.match_human_length): the long one too
    rep = synthesize(scripts, voices_workdir, cfg, out, qa=False)
    assert rep.kept == len(SAMPLE_SCRIPTS) + 1 and rep.rejected == 1
    rejected = {r["item_id"]: r for r in iter_rows(out / REJECTIONS)}
    assert rejected["ph__default__short"]["reason"] == "rendered_too_short"
    written = {p.name for p in (out / "audio").iterdir()}
    assert written == {f"ph__default__{s['id']}.flac" for s in (*SAMPLE_SCRIPTS, long)}
    # uncut, the long script is rejected before anything is written
    whole = tts_config({"synth": {"match_human_length": False}})
    only_long = tmp_path / "only_long"
    only_long.mkdir()
    (only_long / "long.json").write_text(json.dumps(long), encoding="utf-8")
    rep2 = synthesize(only_long, voices_workdir, whole, tmp_path / "out2", qa=False)
    assert rep2.kept == 0 and rep2.rejected == 1
    (r2,) = iter_rows(tmp_path / "out2" / REJECTIONS)
    assert r2["reason"] == "rendered_too_long" and "outside [20.0, 60.0] s" in r2["detail"]
    assert not list((tmp_path / "out2" / "audio").glob("*.flac"))
    for row in iter_rows(out / DIALOGUES):
        info = sf.info(out / row["audio_path"])
        assert cfg.window.min_s <= info.duration <= cfg.window.max_s, (row["dialogue_id"], info)
        # the length drawn from the fixture's human dialogues, the lines cut to it
        plan = json.loads(row["provenance"])["length_match"]
        assert plan["lines"] == row["n_turns"] <= plan["script_lines"]
        assert abs(row["duration_s"] - plan["estimated_s"]) < 2.0, (row["dialogue_id"], plan)
    # spoken at the rate of the human dialogue drawn with the length (synth.match_human_rate),
    # as the cue audit reads rates: spoken characters per second of the turns
    by_id: dict[str, list[tuple[float, float, str]]] = {}
    for t in iter_rows(out / TURNS):
        if t["kind"] != "nonspeech":
            by_id.setdefault(t["dialogue_id"], []).append((t["start_s"], t["end_s"], t["text"]))
    for row in iter_rows(out / DIALOGUES):
        match = json.loads(row["provenance"])["human_match"]
        assert match["speaking_rate_cps"] == pytest.approx(match["rate_cps"], abs=1e-3)
        got = dialogue_rate_cps(by_id[row["dialogue_id"]])
        assert got == pytest.approx(match["rate_cps"], rel=0.12), (row["dialogue_id"], match)


def test_dialogue_rate_counts_overlapping_speech_once() -> None:
    """Spoken characters (tags and punctuation out) over the union of the turns."""
    turns = [(0.0, 2.0, "Hello, there [+]"), (1.5, 3.0, "ok!"), (4.0, 5.0, "<noise> 你好")]
    # 10 + 2 + 2 characters over 3.0 + 1.0 s of speech (0.5 s overlap counted once)
    assert dialogue_rate_cps(turns) == pytest.approx(14 / 4.0)
    assert math.isnan(dialogue_rate_cps([(0.0, 1.0, "[laughter]")]))
    assert math.isnan(dialogue_rate_cps([]))
