"""HM transcript checks: identity disclosure and non-target language."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from duetflow.config import StudioConfig, build_config
from duetflow.corpora.studio import (
    StudioAdapter,
    find_disclosure,
    non_target_language,
    script_units,
)
from duetflow.records.dialogue import Dialogue, Rejection
from studio_helpers import NO_STATE, transcript, write_session

PHRASES = StudioConfig().disclosure_phrases


@pytest.mark.parametrize(
    ("text", "phrase"),
    [
        ("Well, as an AI I can't travel.", "as an ai"),
        ("I’m an assistant, happy to help", "i'm an assistant"),
        ("I AM  A VIRTUAL\tASSISTANT.", "i am a virtual assistant"),
        ("你好，我是人工智能，可以帮你。", "我是人工智能"),
        ("其实 我是 AI 助手", "我是ai"),
        ("I'm a large language model.", "language model"),
    ],
)
def test_disclosure_found(text: str, phrase: str) -> None:
    assert find_disclosure(text, PHRASES) == phrase


@pytest.mark.parametrize(
    "text",
    ["Haiti is lovely in spring.", "Chairs are an aid to sitting.", "我是人类", "Are you an AI?"],
)
def test_disclosure_not_found(text: str) -> None:
    assert find_disclosure(text, PHRASES) is None


def test_script_units_and_language() -> None:
    assert script_units("我们去 starbucks 吧") == {"han": 4, "latin": 1}
    assert non_target_language("我们去 starbucks 吧", "zh") is None
    assert non_target_language("OK", "zh") is None  # too short to judge
    assert non_target_language("Okay, sounds good to me", "zh-CN") == "latin"
    assert non_target_language("我们明天去公园吧", "en") == "han"
    assert non_target_language("Привет, как дела сегодня", "en") == "cyrillic"
    assert non_target_language("Привет, как дела сегодня", "ru") is None
    assert non_target_language("Let us meet tomorrow", "en-GB") is None


def _item(tmp_path: Path, texts: tuple[str, str, str], **kw: Any) -> Dialogue | Rejection:
    write_session(tmp_path / "s1", "tracks", transcript=transcript(texts, timed=True), **kw)
    [item] = StudioAdapter(tmp_path, NO_STATE, config=build_config({})).scan()
    return item


def test_disclosure_by_the_system_rejects_the_session(tmp_path: Path) -> None:
    texts = ("Hi, plan a trip?", "As an AI, I can only suggest places.", "Fine.")
    write_session(tmp_path / "s1", "tracks", transcript=transcript(texts))
    adapter = StudioAdapter(tmp_path, NO_STATE)
    [r] = adapter.scan()
    assert isinstance(r, Rejection) and r.reason == "identity_disclosure"
    assert "'as an ai'" in r.detail and "system" in r.detail and "turn 1" in r.detail
    assert "transcript.json" in r.detail
    assert adapter.counters.audio_reads == 0  # decided from the transcript alone


def test_the_human_asking_is_not_a_disclosure(tmp_path: Path) -> None:
    d = _item(tmp_path, ("Are you an AI? As an AI you would know.", "Let us plan.", "Fine."))
    assert isinstance(d, Dialogue)
    assert d.provenance["hm_checks"]["identity_disclosure"] == "passed"


def test_configured_phrases_are_used(tmp_path: Path) -> None:
    texts = ("Hi there.", "Beep boop, I compute.", "Fine.")
    write_session(tmp_path / "s1", "tracks", transcript=transcript(texts, timed=True))
    cfg = build_config({"studio": {"disclosure_phrases": {"en": ["beep boop"]}}})
    [r] = StudioAdapter(tmp_path, NO_STATE, config=cfg).scan()
    assert isinstance(r, Rejection) and "'beep boop'" in r.detail


def test_non_target_language_rejects_with_the_text(tmp_path: Path) -> None:
    r = _item(tmp_path, ("Hi, plan a trip?", "我们明天去公园散步吧", "Fine."))
    assert isinstance(r, Rejection) and r.reason == "non_target_language"
    assert "han script" in r.detail and "我们明天去公园散步吧" in r.detail


def test_chinese_session_passes(tmp_path: Path) -> None:
    d = _item(tmp_path, ("我们周末去哪儿？", "去湖边怎么样？", "好的。"), language="zh")
    assert isinstance(d, Dialogue)
    assert d.provenance["hm_checks"] == {
        "identity_disclosure": "passed",
        "target_language": "passed",
        "opening_line": "passed",
        "opening_line_similarity": 1.0,
    }
    r = _item(
        tmp_path, ("我们周末去哪儿？", "作为一个人工智能，我建议去湖边。", "好的。"), language="zh"
    )
    assert isinstance(r, Rejection) and "作为一个人工智能" in r.detail


def test_without_transcript_checks_are_not_checked_never_passed(
    studio_samples: tuple[Path, dict[str, Any]],
) -> None:
    root, truth = studio_samples
    items = {
        (i.source_id if isinstance(i, Dialogue) else i.item_id): i
        for i in StudioAdapter(root, NO_STATE).scan()
    }
    rttm_only = items["hm_mono_rttm"]
    assert isinstance(rttm_only, Dialogue)
    assert rttm_only.provenance["hm_checks"]["identity_disclosure"] == "not checked"
    assert rttm_only.provenance["hm_checks"]["target_language"] == "not checked"
    sample = items["studio__hm_tracks_disclosure"]
    assert isinstance(sample, Rejection) and sample.reason == "identity_disclosure"
    assert truth["hm_tracks_disclosure"]["reason"] == "identity_disclosure"
