"""Helpers for the PH synthesis tests: a small *rendered* work directory of real speech.

The "studio recordings" are eSpeak NG speech (a different engine configuration than the one the
default backend picks) mixed with pinkish room noise at a known SNR, written as FLAC with
rendered manifest rows, exactly what the process stage leaves behind.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from duetflow.audio.io import Audio, resample, write_audio
from duetflow.config import RunConfig, build_config
from duetflow.records.convert import dumps
from duetflow.records.manifest import (
    DIALOGUES,
    REJECTION_SCHEMA,
    REJECTIONS,
    RENDERED_DIALOGUE_SCHEMA,
    RENDERED_TURN_SCHEMA,
    TURNS,
    write_table,
)
from duetflow.tts import espeak

SR = 16000
TRUE_SNR_DB = 25.0
#: licence of the voices work directory (PH dialogues inherit it)
VOICE_LICENCE = "CC-BY-SA-4.0"

EN_TURNS = [
    ("A", "Good morning, I wanted to ask you about the schedule for next week."),
    ("B", "Sure, we have the planning meeting on Monday and the review on Thursday."),
    ("A", "Is the review still in the big room on the third floor, next to the kitchen?"),
    ("B", "yeah"),
    ("B", "Yes, it is. Bring your laptop, because we will go through the numbers together."),
    ("A", "Great, thank you. I will prepare the slides about the budget tonight."),
    ("B", "Perfect. Send them to me before lunch so that I can have a look first."),
]
ZH_TURNS = [
    ("A", "你好，我想问一下下个星期的安排是什么样的。"),
    ("B", "星期一我们开计划会议，星期四有一个总结会议。"),
    ("A", "总结会议还是在三楼那个大会议室里面开吗？"),
    ("B", "是的，还是在那里，记得带上你的电脑和资料。"),
    ("A", "好的，谢谢你，我今天晚上就把幻灯片准备好。"),
    ("B", "没问题，明天中午之前发给我，我先看一看。"),
]
DIALOGUE_SPECS: list[dict[str, Any]] = [
    {
        "id": "studio__en1",
        "language": "en",
        "speakers": {"A": ("en_m", "M", "en-us+m3", 30), "B": ("en_f", "F", "en-us+f3", 70)},
        "turns": EN_TURNS,
        "gender_in_manifest": True,
    },
    {
        "id": "studio__zh1",
        "language": "zh",
        "speakers": {"A": ("zh_m", "M", "cmn+m3", 30), "B": ("zh_f", "F", "cmn+f3", 70)},
        "turns": ZH_TURNS,
        "gender_in_manifest": False,
    },
]


def speak(text: str, voice: str, pitch: int, sr: int = SR) -> Audio:
    (wave,), rate = espeak.speak([text], voice, 160, pitch)
    return resample(wave, rate, sr)


def pink_noise(n: int, rng: np.random.Generator) -> Audio:
    """Unit-RMS 1/f noise (spectrum shaped with numpy's FFT)."""
    spec = np.fft.rfft(rng.standard_normal(n))
    f = np.arange(spec.size, dtype=np.float64)
    f[0] = 1.0
    x = np.fft.irfft(spec / np.sqrt(f), n)
    x -= x.mean()
    return (x / x.std()).astype(np.float32)


def build_rendered_workdir(root: Path, snr_db: float = TRUE_SNR_DB) -> Path:
    """Write a rendered workdir (2 dialogues x 2 speakers) with room noise at ``snr_db``."""
    rng = np.random.default_rng(7)
    drows, trows = [], []
    for spec in DIALOGUE_SPECS:
        did = spec["id"]
        pieces: list[tuple[str, str, Audio, str]] = []
        for label, text in spec["turns"]:
            sid, _g, voice, pitch = spec["speakers"][label]
            pieces.append((sid, text, speak(text, voice, pitch), label))
        gap = int(0.5 * SR)
        total = gap + sum(len(p[2]) + gap for p in pieces)
        speech = np.zeros(total, dtype=np.float32)
        pos = gap
        for i, (sid, text, audio, _label) in enumerate(pieces):
            speech[pos : pos + len(audio)] = audio
            kind = "backchannel" if text == "yeah" else "turn"
            trows.append(
                {
                    "dialogue_id": did,
                    "turn_index": i,
                    "speaker": sid,
                    "kind": kind,
                    "start_s": pos / SR,
                    "end_s": (pos + len(audio)) / SR,
                    "orig_start_s": pos / SR,
                    "orig_end_s": (pos + len(audio)) / SR,
                    "text": text,
                }
            )
            pos += len(audio) + gap
        active = np.abs(speech) > 1e-4
        p_speech = float(np.mean(speech[active].astype(np.float64) ** 2))
        noise = pink_noise(total, rng) * np.float32(np.sqrt(p_speech / 10 ** (snr_db / 10)))
        mix = speech + noise
        rel = f"audio/{did}.flac"
        write_audio(root / rel, mix, SR)
        a, b = spec["speakers"]["A"], spec["speakers"]["B"]
        prov: dict[str, Any] = {"note": "test fixture"}
        if spec["gender_in_manifest"]:
            prov["speakers"] = [{"id": a[0], "gender": a[1]}, {"id": b[0], "gender": b[1]}]
        drows.append(
            {
                "dialogue_id": did,
                "source_id": did,
                "corpus": "studio",
                "category": "HH",
                "language": spec["language"],
                "topic": "schedule",
                "speaker_a": a[0],
                "speaker_b": b[0],
                "audio_path": rel,
                "sha256": "",
                "duration_s": total / SR,
                "sample_rate": SR,
                "num_channels": 1,
                "n_turns": len(pieces),
                "loudness_lufs_a": -23.0,
                "loudness_lufs_b": -23.0,
                "gain_db_a": 0.0,
                "gain_db_b": 0.0,
                "gap_ms_min": 500.0,
                "gap_ms_max": 500.0,
                "provenance": dumps(prov),
                "licence": VOICE_LICENCE,
                "source_sample_rate": SR,
            }
        )
    write_table(root / DIALOGUES, RENDERED_DIALOGUE_SCHEMA, drows)
    write_table(root / TURNS, RENDERED_TURN_SCHEMA, trows)
    write_table(root / REJECTIONS, REJECTION_SCHEMA, [])
    return root


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def tts_config(data: dict[str, Any] | None = None) -> RunConfig:
    """A run config whose voice pool takes HH speakers too: the fixture's dialogues are HH
    (the default pool is HM participants only, see ``synth.voice_categories``)."""
    data = dict(data or {})
    data["synth"] = {"voice_categories": ["HM", "HH"], **data.get("synth", {})}
    return build_config(data)
