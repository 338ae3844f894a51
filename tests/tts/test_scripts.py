"""Script schema: validation errors name file + item, loaders, derivation from HH dialogues."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tts_helpers import write_json

from duetflow.errors import InputError
from duetflow.records.dialogue import Rejection
from duetflow.records.manifest import DIALOGUES, TURNS, iter_rows
from duetflow.tts.script import (
    Script,
    clean_text,
    is_backchannel_text,
    load_scripts,
    parse_script,
    scripts_from_workdir,
)

GOOD = {
    "id": "s1",
    "language": "en",
    "topic": "t",
    "source": "generated",
    "lines": [{"speaker": "A", "text": "Hello there."}, {"speaker": "B", "text": "Hi!"}],
}


def test_parse_valid_and_bare_array(tmp_path: Path) -> None:
    s = parse_script(GOOD, tmp_path / "s1.json")
    assert s.id == "s1" and [ln.speaker for ln in s.lines] == ["A", "B"]
    bare = parse_script(
        [{"speaker": "A", "text": "你好"}, {"speaker": "B", "text": "你好啊"}],
        tmp_path / "x.json",
        default_id="x",
    )
    assert bare.id == "x" and bare.language == "zh" and bare.source == "generated"


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d["lines"][1].update(speaker="C"), "lines[1].speaker"),
        (lambda d: d["lines"][0].update(text="  "), "lines[0].text"),
        (lambda d: d["lines"][1].update(extra=1), "lines[1]"),
        (lambda d: d.update(source="novel"), "source"),
        (
            lambda d: d.update(
                lines=[{"speaker": "A", "text": "a"}, {"speaker": "A", "text": "b"}]
            ),
            "lines",
        ),
    ],
)
def test_errors_name_file_and_item(tmp_path: Path, mutate: object, field: str) -> None:
    data = json.loads(json.dumps(GOOD))
    mutate(data)  # type: ignore[operator]
    path = tmp_path / "bad.json"
    with pytest.raises(InputError) as ei:
        parse_script(data, path)
    assert ei.value.field == field
    assert str(path) in str(ei.value) and f"[{field}]" in str(ei.value)
    assert ei.value.reason == "bad_script"


def test_load_folder_and_jsonl_reject_bad_items(tmp_path: Path) -> None:
    d = tmp_path / "scripts"
    d.mkdir()
    write_json(d / "a.json", GOOD)
    write_json(d / "b.json", {**GOOD, "lines": [{"speaker": "A"}]})
    (d / "c.json").write_text("{not json", encoding="utf-8")
    good2 = {**GOOD, "id": "s2"}
    (d / "more.jsonl").write_text(
        json.dumps(good2)
        + "\n\n"
        + json.dumps({**GOOD, "id": "s3", "lines": []})
        + "\n"
        + json.dumps(GOOD)
        + "\n",
        encoding="utf-8",
    )
    items = list(load_scripts(d))
    scripts = [i for i in items if isinstance(i, Script)]
    rejections = [i for i in items if isinstance(i, Rejection)]
    assert [s.id for s in scripts] == ["s1", "s2"]
    reasons = sorted((r.item_id, r.reason) for r in rejections)
    assert reasons == [
        ("b", "bad_script"),
        ("c", "bad_script"),
        ("s1", "duplicate_id"),
        ("s3", "bad_script"),
    ]
    jsonl_bad = next(r for r in rejections if r.item_id == "s3")
    assert "more.jsonl:3" in jsonl_bad.detail and "[lines]" in jsonl_bad.detail
    assert len(items) == 6  # inputs = kept + rejected


def test_missing_path_is_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        list(load_scripts(tmp_path / "nope"))


def test_clean_text_and_backchannels() -> None:
    assert clean_text("well [laughter] I <noise> think (laughs) so") == "well I think so"
    assert is_backchannel_text("Uh-huh.") and is_backchannel_text("yeah yeah")
    assert is_backchannel_text("嗯") and not is_backchannel_text("yeah I think so too")


def test_scripts_from_hh_workdir(voices_workdir: Path) -> None:
    items = list(scripts_from_workdir(voices_workdir))
    assert all(isinstance(i, Script) for i in items)
    scripts = [i for i in items if isinstance(i, Script)]
    assert [s.source_dialogue_id for s in scripts] == ["studio__en1", "studio__zh1"]
    en = scripts[0]
    assert en.source == "hh-transcript" and en.id == "hh-studio__en1"
    texts = [ln.text for ln in en.lines]
    assert "yeah" not in texts  # backchannel turn dropped
    turns = [t for t in iter_rows(voices_workdir / TURNS) if t["dialogue_id"] == "studio__en1"]
    assert len(en.lines) == len(turns) - 1
    rows = list(iter_rows(voices_workdir / DIALOGUES))
    assert en.lines[0].speaker == "A" and rows[0]["speaker_a"] == turns[0]["speaker"]


def test_sample_scripts_are_valid(sample_scripts: Path) -> None:
    items = list(load_scripts(sample_scripts))
    assert items and all(isinstance(i, Script) for i in items)
    scripts = [i for i in items if isinstance(i, Script)]
    assert {s.language for s in scripts} == {"en", "zh"}
    assert all({ln.speaker for ln in s.lines} == {"A", "B"} for s in scripts)
