"""A voice cache entry of the wrong shape is rebuilt, never a crash (issue 24, item 3)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from tts_helpers import tts_config

from duetflow.tts.voices import build_voice_pool


@pytest.mark.parametrize(
    "bad", [[], "x", {"voice": "not a voice"}, {"voice": {"nope": 1}, "score": "high"}, b"\xff"]
)
def test_voice_cache_of_the_wrong_shape_is_rebuilt(
    voices_workdir: Path, tmp_path: Path, bad: object, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = tts_config()
    first = build_voice_pool(voices_workdir, cfg, tmp_path / "cache")
    metas = sorted((tmp_path / "cache").rglob("meta.json"))
    assert metas and first.voices
    for m in metas:
        if isinstance(bad, bytes):
            m.write_bytes(bad)
        else:
            m.write_text(json.dumps(bad), "utf-8")
    caplog.set_level(logging.WARNING)
    again = build_voice_pool(voices_workdir, cfg, tmp_path / "cache")
    assert [v.speaker_id for v in again.voices] == [v.speaker_id for v in first.voices]
    assert "ignoring voice cache" in caplog.text
