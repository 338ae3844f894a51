"""Sample corpora and the voice synthesiser: speech-like, distinguishable, deterministic."""

from __future__ import annotations

import hashlib
import itertools
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from corpora.helpers import truth
from duetflow.audio.io import read_frames
from duetflow.audio.vad import VadParams, detect_speech
from duetflow.cli import main
from duetflow.demo import load_truth, make_samples
from duetflow.demo.voice import FEMALE, MALE, Voice, room_tone, speech

# --- voice --------------------------------------------------------------------------------------


def _rms_db(x: np.ndarray) -> float:
    return float(20 * np.log10(np.sqrt(np.mean(np.square(x, dtype=np.float64)))))


@pytest.mark.parametrize("sr", [16000, 44100])
@pytest.mark.parametrize("voice", [MALE, FEMALE], ids=["male", "female"])
def test_vad_finds_generated_speech_where_it_was_put(sr: int, voice: Voice) -> None:
    rng = np.random.default_rng(5)
    placed = [(1.0, 3.6), (4.5, 5.4), (6.3, 9.0)]
    x = room_tone(10.0, sr, -55.0, rng)
    for a, b in placed:
        s = speech(b - a, sr, voice, rng)
        x[round(a * sr) : round(a * sr) + len(s)] += s
    # no hangover: it keeps speech on after the last voiced frame on purpose (for trimming)
    found = detect_speech(x, sr, VadParams(hangover_ms=0))
    assert len(found) == len(placed), found
    for (a, b), (fa, fb) in zip(placed, found, strict=True):
        assert abs(fa - a) <= 0.06 and abs(fb - b) <= 0.06, (placed, found)


def _f0(x: np.ndarray, sr: int) -> float:
    """Median autocorrelation pitch of loud 40 ms frames."""
    n = int(0.04 * sr)
    est = []
    for i in range(0, len(x) - n, n):
        f = x[i : i + n].astype(np.float64)
        if np.sqrt(np.mean(f**2)) < 0.05:
            continue
        ac = np.correlate(f, f, mode="full")[n - 1 :]
        lo, hi = sr // 400, sr // 70
        est.append(sr / (lo + int(np.argmax(ac[lo:hi]))))
    return float(np.median(est))


def _envelope(x: np.ndarray) -> np.ndarray:
    frames = x[: len(x) // 512 * 512].reshape(-1, 512) * np.hanning(512)
    spec = np.log(np.abs(np.fft.rfft(frames, axis=1)) + 1e-6).mean(axis=0)
    bands = spec[:256].reshape(32, 8).mean(axis=1)
    return bands - bands.mean()


def test_two_voices_are_distinguishable() -> None:
    sr = 16000
    m1, m2 = (speech(6.0, sr, MALE, np.random.default_rng(s)) for s in (1, 2))
    f1 = speech(6.0, sr, FEMALE, np.random.default_rng(3))
    assert 95 < _f0(m1, sr) < 140 and 180 < _f0(f1, sr) < 260
    same = np.linalg.norm(_envelope(m1) - _envelope(m2))
    other = np.linalg.norm(_envelope(m1) - _envelope(f1))
    assert other > 2 * same, (same, other)


def test_speech_is_deterministic_and_levelled() -> None:
    a = speech(3.0, 44100, MALE, np.random.default_rng(9))
    b = speech(3.0, 44100, MALE, np.random.default_rng(9))
    assert a.dtype == np.float32 and len(a) == 3 * 44100
    assert np.array_equal(a, b)
    assert abs(_rms_db(a) - (-20.0)) < 0.5 and np.max(np.abs(a)) <= 0.95
    tone = room_tone(2.0, 16000, -57.0, np.random.default_rng(0))
    assert abs(_rms_db(tone) - (-57.0)) < 0.1


# --- sample corpora -----------------------------------------------------------------------------


def _hashes(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def test_same_seed_same_bytes_and_scale_adds_dialogues(tmp_path: Path) -> None:
    res = CliRunner().invoke(
        main, ["samples", "make", str(tmp_path / "a"), "--seed", "4", "--only", "dailytalk"]
    )
    assert res.exit_code == 0, res.output
    assert "dailytalk: " in res.output and "7 broken on purpose" in res.output
    make_samples(tmp_path / "b", seed=4, include=["dailytalk"])
    assert _hashes(tmp_path / "a") == _hashes(tmp_path / "b")
    big = make_samples(tmp_path / "c", seed=4, scale=2, include=["dailytalk"])
    small = load_truth(tmp_path / "a")
    assert len(big["dialogues"]) == 2 * len(small["dialogues"])
    assert len(big["broken"]) == 2 * len(small["broken"])
    shapes = Counter(e["shape"] for e in small["dialogues"].values())
    assert Counter(e["shape"] for e in big["dialogues"].values()) == shapes + shapes
    # the first unit is the scale-1 corpus, clip for clip
    a, c = (
        _hashes(tmp_path / "a" / "dailytalk" / "data"),
        _hashes(tmp_path / "c" / "dailytalk" / "data"),
    )
    assert a.items() <= c.items()
    with pytest.raises(ValueError, match="unknown sample corpora"):
        make_samples(tmp_path / "d", include=["nope"])


def _gaps(entry: dict[str, Any]) -> list[float]:
    """Floor-transfer gaps at speaker changes, planted interruptions left out (a mid-turn
    interruption overlaps the host by the time the host talks on, 0.5-0.9 s)."""
    main_turns = [t for t in entry["turns"] if not t["backchannel"] and "kind" not in t]
    cut_in = {round(i["time"], 6) for i in entry["interruptions"]}
    return [
        b["start"] - a["end"]
        for a, b in itertools.pairwise(main_turns)
        if a["speaker"] != b["speaker"]
        and "collection_header" not in a.get("labels", {})
        and round(b["start"], 6) not in cut_in
    ]


def test_truth_covers_every_case(sample_root: Path) -> None:
    t = truth(sample_root)
    dialogues = t["dialogues"]
    for corpus, (lo, hi) in {
        "dailytalk": (20, 45),
        "iemocap": (70, 130),
        "magicdata_ramc": (120, 180),
    }.items():
        mine = [e for e in dialogues.values() if e["corpus"] == corpus]
        assert mine and all(lo <= e["duration_s"] <= hi for e in mine), corpus
        assert any(e["imbalanced"] for e in mine) == (corpus != "magicdata_ramc"), corpus
        assert sum(e["shape"] in ("balanced", "backchannels") for e in mine) >= len(mine) / 2
        for e in mine:
            gaps = _gaps(e)
            assert gaps and all(-0.3 <= g <= 0.8 + 1e-9 for g in gaps), (e["source_id"], gaps)
    assert sum(len(e["interruptions"]) for e in dialogues.values()) >= 2
    assert sum(len(e["backchannels"]) for e in dialogues.values()) >= 4
    reasons = {b["reason"] for b in t["broken"]}
    assert {
        "truncated_audio", "bad_audio", "wrong_sample_rate", "malformed_line", "bad_encoding",
        "duplicate_id", "path_escape", "missing_file", "bad_timing", "wrong_channels",
    } <= reasons  # fmt: skip
    assert (sample_root / "dailytalk/data/7/2_0_d7.wav").stat().st_size == 0  # zero-byte
    assert (sample_root / "dailytalk/data/11/2_0_d11.wav").is_symlink()


def test_room_tone_under_everything(sample_root: Path) -> None:
    clip, _ = read_frames(sample_root / "dailytalk/data/0/0_1_d0.wav", 0, 2000)
    assert -60 <= _rms_db(clip) <= -50
    dlg, _ = read_frames(
        sample_root / "MagicData-RAMC/MDT2021S003/WAV/CTS-CN-F2F-2019-11-15-100.wav", 0, 8000
    )
    assert -60 <= _rms_db(dlg[:4000]) <= -50  # before the collection header starts
