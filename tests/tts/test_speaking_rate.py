"""Speaking-time estimate, the sample scripts it sizes, and PH length on the rendered audio."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
import soundfile as sf
from tts_helpers import tts_config

from duetflow.demo.scripts import SAMPLE_SCRIPTS
from duetflow.manifest import DIALOGUES, REJECTIONS, iter_rows
from duetflow.pipeline.commands import synthesize
from duetflow.tts.speaking_rate import (
    SCRIPT_SPEECH_S,
    SPEAKING_RATES,
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
    assert SCRIPT_SPEECH_S[0] <= est <= SCRIPT_SPEECH_S[1], est
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
    rep = synthesize(scripts, voices_workdir, cfg, out, qa=False)
    assert rep.kept == len(SAMPLE_SCRIPTS) and rep.rejected == 2
    rejected = {r["item_id"]: r for r in iter_rows(out / REJECTIONS)}
    assert rejected["ph__default__short"]["reason"] == "rendered_too_short"
    assert rejected["ph__default__long"]["reason"] == "rendered_too_long"
    assert "outside [20.0, 60.0] s" in rejected["ph__default__long"]["detail"]
    written = {p.name for p in (out / "audio").iterdir()}
    assert written == {f"ph__default__{s['id']}.flac" for s in SAMPLE_SCRIPTS}  # nothing else
    for row in iter_rows(out / DIALOGUES):
        info = sf.info(out / row["audio_path"])
        assert cfg.window.min_s <= info.duration <= cfg.window.max_s, (row["dialogue_id"], info)
