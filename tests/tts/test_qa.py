"""Clone QA: Resemblyzer similarity separates speakers; thresholds turn failures into rejections."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tts_helpers import tts_config

from duetflow.audio.io import read_frames
from duetflow.pipeline.commands import synthesize
from duetflow.records.manifest import iter_rows
from duetflow.tts.qa import SpeakerEncoder, similarity
from duetflow.tts.voices import build_voice_pool

pytestmark = [pytest.mark.tts, pytest.mark.usefixtures("torch_one_thread")]


@pytest.fixture(scope="module")
def encoder() -> SpeakerEncoder:
    enc = SpeakerEncoder.get()
    assert enc.available, enc.error  # resemblyzer ships its weights in the wheel: offline
    return enc


def _other_turns(workdir: Path, speaker: str, exclude: set[int]) -> np.ndarray:
    """Audio of a speaker's turns that are *not* in its reference clip."""
    rows = [t for t in iter_rows(workdir / "turns.parquet") if t["speaker"] == speaker]
    did = rows[0]["dialogue_id"]
    x, sr = read_frames(workdir / "audio" / f"{did}.flac")
    parts = [
        x[int(t["start_s"] * sr) : int(t["end_s"] * sr)]
        for t in rows
        if t["turn_index"] not in exclude and t["kind"] == "turn"
    ]
    return np.concatenate(parts)


def test_same_speaker_more_similar_than_other(
    encoder: SpeakerEncoder, voices_workdir: Path, tmp_path: Path
) -> None:
    pool = build_voice_pool(voices_workdir, tts_config(), tmp_path / "cache")
    by_id = {v.speaker_id: v for v in pool.voices}
    for me, other in (("en_m", "en_f"), ("en_f", "en_m"), ("zh_m", "zh_f")):
        ref, sr = read_frames(by_id[me].clip_path)
        used = {int(i) for i in by_id[me].clip_id.split(":")[1].split("-")}
        mine = _other_turns(voices_workdir, me, used)
        theirs, sr2 = read_frames(by_id[other].clip_path)
        same = similarity(encoder, ref, sr, mine, 16000)
        diff = similarity(encoder, ref, sr, theirs, sr2)
        assert same is not None and diff is not None
        assert same > diff + 0.02, (me, same, diff)


def test_stage_records_similarity_and_rejects_below_threshold(
    encoder: SpeakerEncoder, voices_workdir: Path, sample_scripts: Path, tmp_path: Path
) -> None:
    script = sample_scripts / "en-kitchen.json"
    synthesize(script, voices_workdir, tts_config(), tmp_path / "ok", qa=True)
    row = next(iter_rows(tmp_path / "ok" / "dialogues.parquet"))
    prov = json.loads(row["provenance"])
    assert prov["clone_qa"].startswith("measured")
    assert -1.0 <= prov["clone_similarity_a"] <= 1.0 and -1.0 <= prov["clone_similarity_b"] <= 1.0

    strict = tts_config({"synth": {"similarity_min": 0.999}})
    rep = synthesize(script, voices_workdir, strict, tmp_path / "strict", qa=True)
    assert rep.kept == 0 and rep.reasons == {"clone_similarity": 1}
    assert not any((tmp_path / "strict" / "audio").iterdir())  # no orphaned audio


def test_speaking_rate_outside_band_is_rejected(
    voices_workdir: Path, sample_scripts: Path, tmp_path: Path
) -> None:
    cfg = tts_config({"synth": {"chars_per_s_max": 5.0}})
    rep = synthesize(sample_scripts / "en-kitchen.json", voices_workdir, cfg, tmp_path, qa=False)
    assert rep.kept == 0 and rep.reasons == {"speaking_rate": 1}
    (rej,) = iter_rows(tmp_path / "rejections.parquet")
    assert rej["stage"] == "synthesize" and "chars/s outside [4.0, 5.0]" in rej["detail"]
