"""DailyTalk adapter on generated samples (exact turns, labels, timeline) and on each quirk."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from duetflow.audio.io import audio_info, write_audio
from duetflow.records.dialogue import Category, PerTurnSource, TurnKind

from .helpers import ms, scan, scan_against_truth, timeline, truth_for, truth_timeline

CORPUS = "dailytalk"


def test_samples_match_truth(sample_root: Path) -> None:
    root = sample_root / "dailytalk"
    kept, expected = scan_against_truth(sample_root, CORPUS, root)
    for did, d in kept.items():
        e = expected[did]
        assert d.corpus == CORPUS and d.source_id == e["source_id"]
        assert d.category is Category.HH and d.language == "en"
        assert [s.id for s in d.speakers] == e["speakers"]
        assert {s.id: s.gender for s in d.speakers} == {"0": "M", "1": "F"}
        assert len(d.turns) == len(e["turns"])
        assert timeline(d) == truth_timeline(e)
        assert [t.text for t in d.turns] == [t["text"] for t in e["turns"]]
        for t, te in zip(d.turns, e["turns"], strict=True):
            assert t.kind is TurnKind.TURN
            assert dict(t.labels) == {
                **te["labels"],
                "topic": e["topic"],
                "utterance_index": t.labels["utterance_index"],
            }
        # the samples write DailyDialog topics as snake-case names: they are taxonomy ids
        assert d.topic == e["topic"] and d.design.source_topic == e["topic"]
        assert ms(d.duration_s) == ms(e["duration_s"])
        # the timeline is the clips end to end: each turn starts where the previous ended
        assert all(a.end == b.start for a, b in zip(d.turns, d.turns[1:], strict=False))
        assert isinstance(d.source, PerTurnSource)
        assert len(d.source.paths) == len(d.turns)
        for t, p in zip(d.turns, d.source.paths, strict=True):
            info = audio_info(p)
            assert info.sample_rate == 44100
            assert ms(info.duration_s) == ms(t.end - t.start)


def test_same_speaker_pairs_and_imbalance_are_kept(sample_root: Path) -> None:
    expected, _ = truth_for(sample_root, CORPUS)
    kept, _, _ = scan(CORPUS, sample_root / "dailytalk")
    pairs = {
        did
        for did, d in kept.items()
        if any(a.speaker == b.speaker for a, b in zip(d.turns, d.turns[1:], strict=False))
    }
    assert pairs == {did for did, e in expected.items() if e["same_speaker_pairs"] > 0}
    assert any(e["imbalanced"] for e in expected.values())


def test_rejections_name_the_file(sample_root: Path) -> None:
    t = json.loads((sample_root / "truth.json").read_text(encoding="utf-8"))
    _, rejected, _ = scan(CORPUS, sample_root / "dailytalk")
    for b in (b for b in t["broken"] if b["corpus"] == CORPUS):
        r = rejected[b["item_id"]]
        assert r.source_path == b["path"], (r, b)
        assert b["path"].split("/")[-1] in r.detail
    assert "byte 3" in rejected["dailytalk__d9"].detail  # non-UTF-8: byte offset reported
    assert "outside the corpus root" in rejected["dailytalk__d11"].detail


# --- hand-built corpora for each quirk ----------------------------------------------------------


def _clip(path: Path, seconds: float = 0.3, sr: int = 44100) -> None:
    write_audio(path, np.zeros(int(seconds * sr), dtype=np.float32) + 0.001, sr)


def write_corpus(
    root: Path, dialogs: dict[str, list[tuple[int, str]]], meta_text: str | None = None
) -> None:
    meta: dict[str, Any] = {}
    for d, turns in dialogs.items():
        ddir = root / "data" / d
        ddir.mkdir(parents=True, exist_ok=True)
        meta[d] = {}
        for i, (spk, text) in enumerate(turns):
            _clip(ddir / f"{i}_{spk}_d{d}.wav")
            (ddir / f"{i}_{spk}_d{d}.txt").write_text(f"  {text}  \nsecond line ignored\n")
            meta[d][str(i)] = {
                "index": i,
                "speaker": spk,
                "text": text,
                "turn": i,
                "emotion": "no emotion",
                "act": "inform",
                "topic": "work",
            }
    (root / "metadata.json").write_text(meta_text if meta_text is not None else json.dumps(meta))


def test_text_from_first_line_whitespace_collapsed(tmp_path: Path) -> None:
    write_corpus(tmp_path, {"3": [(0, "hello   there"), (1, "hi"), (1, "again")]})
    kept, _, _ = scan(CORPUS, tmp_path)
    d = kept["dailytalk__d3"]
    assert [t.text for t in d.turns] == ["hello there", "hi", "again"]
    assert [t.speaker for t in d.turns] == ["0", "1", "1"]
    assert [ms(t.start) for t in d.turns] == [0, 300, 600]
    assert d.topic == "work"


def test_folder_without_metadata_and_metadata_without_folder(tmp_path: Path) -> None:
    write_corpus(tmp_path, {"1": [(0, "a"), (1, "b")], "2": [(0, "a"), (1, "b")]})
    meta = json.loads((tmp_path / "metadata.json").read_text())
    meta["9"] = meta["1"]
    del meta["2"]
    (tmp_path / "metadata.json").write_text(json.dumps(meta))
    kept, rejected, n = scan(CORPUS, tmp_path)
    assert n == 3 and set(kept) == {"dailytalk__d1"}
    assert rejected["dailytalk__d2"].reason == "missing_annotation"
    assert rejected["dailytalk__d9"].reason == "missing_file"


def test_duplicate_dialogue_key_in_metadata(tmp_path: Path) -> None:
    write_corpus(tmp_path, {"1": [(0, "a"), (1, "b")]})
    one = json.dumps(json.loads((tmp_path / "metadata.json").read_text())["1"])
    (tmp_path / "metadata.json").write_text(f'{{"1": {one}, "1": {one}}}')
    kept, rejected, n = scan(CORPUS, tmp_path)
    assert n == 2
    assert set(kept) == {"dailytalk__d1"}
    assert [r.reason for r in rejected.values()] == ["duplicate_id"]


def test_speaker_mismatch_and_bad_speaker(tmp_path: Path) -> None:
    write_corpus(tmp_path, {"1": [(0, "a"), (1, "b")], "2": [(0, "a"), (1, "b")]})
    meta = json.loads((tmp_path / "metadata.json").read_text())
    meta["1"]["1"]["speaker"] = 0
    meta["2"]["0"]["speaker"] = 7
    (tmp_path / "metadata.json").write_text(json.dumps(meta))
    _, rejected, _ = scan(CORPUS, tmp_path)
    assert rejected["dailytalk__d1"].reason == "speaker_mismatch"
    assert rejected["dailytalk__d2"].reason == "malformed_line"


def test_bad_root_is_a_config_error(tmp_path: Path) -> None:
    from duetflow.corpora import get_adapter
    from duetflow.errors import ConfigError

    with pytest.raises(ConfigError, match="not a directory"):
        list(get_adapter(CORPUS)(tmp_path / "nope").scan())
    (tmp_path / "data").mkdir()
    (tmp_path / "metadata.json").write_text("{not json")
    with pytest.raises(ConfigError, match="metadata"):
        list(get_adapter(CORPUS)(tmp_path).scan())


def test_unknown_option_is_rejected(tmp_path: Path) -> None:
    from duetflow.corpora import get_adapter
    from duetflow.errors import ConfigError

    with pytest.raises(ConfigError, match="sampel_rate"):
        get_adapter(CORPUS)(tmp_path, {"sampel_rate": 16000})


def test_other_sample_rate_by_option(tmp_path: Path) -> None:
    write_corpus(tmp_path, {"1": [(0, "a"), (1, "b")]})
    _, rejected, _ = scan(CORPUS, tmp_path, {"sample_rate": 22050})
    assert rejected["dailytalk__d1"].reason == "wrong_sample_rate"
