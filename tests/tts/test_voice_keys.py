"""Voice reference cache keys: derived from the table bytes alone, whatever reads the rows.

The expected keys are rebuilt here straight from the Parquet files (pyarrow, no duetflow
reader) with the key's documented recipe, so a reader change that altered a value (a float
cast, a None turned into "", a reordered turn) would move the cache and fail this test.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow.parquet as pq
from tts_helpers import tts_config

from duetflow.records.convert import dumps
from duetflow.records.manifest import DIALOGUES, TURNS
from duetflow.tts.voices import SELECTION_VERSION, build_voice_pool


def _expected_keys(workdir: Path, min_s: float, max_s: float) -> dict[str, tuple[str, str]]:
    """key → (dialogue id, speaker) for both speakers of every dialogue of a rendered table."""
    dialogues = pq.read_table(workdir / DIALOGUES).to_pylist()
    turns = pq.read_table(workdir / TURNS).to_pylist()
    out: dict[str, tuple[str, str]] = {}
    for d in dialogues:
        own = sorted((t for t in turns if t["dialogue_id"] == d["dialogue_id"]),
                     key=lambda t: t["turn_index"])  # fmt: skip
        spans = [(t["turn_index"], t["speaker"], t["start_s"], t["end_s"], t["text"] or "",
                  t["kind"] or "turn") for t in own]  # fmt: skip
        audio = d["sha256"]  # empty: the hash of the audio file's sha256 (hex)
        if not audio:
            file_hash = hashlib.sha256((workdir / d["audio_path"]).read_bytes()).hexdigest()
            audio = hashlib.sha256(file_hash.encode()).hexdigest()
        for speaker in (d["speaker_a"], d["speaker_b"]):
            doc = {"v": SELECTION_VERSION, "audio": audio, "speaker": speaker,
                   "turns": spans, "min_s": min_s, "max_s": max_s}  # fmt: skip
            out[hashlib.sha256(dumps(doc).encode()).hexdigest()[:20]] = (d["dialogue_id"], speaker)
    return out


def test_reference_cache_keys_come_from_the_table_bytes(
    voices_workdir: Path, tmp_path: Path
) -> None:
    cfg = tts_config()
    cache = tmp_path / "cache"
    pool = build_voice_pool(voices_workdir, cfg, cache)
    expected = _expected_keys(voices_workdir, cfg.synth.reference_min_s, cfg.synth.reference_max_s)
    entries = {p.name for p in cache.iterdir() if (p / "meta.json").exists()}
    assert entries and entries <= set(expected)
    assert pool.voices
    for v in pool.voices:
        key = v.clip_id.split(":", 1)[0]
        assert key in entries
        assert expected[key] == (v.source_dialogue_id, v.speaker_id)
