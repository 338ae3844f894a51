"""DNSMOS from the installed ``speechmos`` wheel (issue 29): real models, no downloads.

The clean signal is real (synthetic) speech from eSpeak NG; the same speech with white noise
at 15 dB SNR and overdriven by 30 dB into hard clipping must rank clean > noisy > clipped on
OVRL (and noise must lower BAK most).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime", reason="the quality extra is not installed")
pytest.importorskip("librosa", reason="the quality extra is not installed")

from duetflow.audio.dnsmos import (
    WINDOW,
    WINDOW_S,
    DnsmosStream,
    get_model,
    score_clip,
    score_file,
)
from duetflow.audio.io import resample, write_audio
from duetflow.tts.espeak import speak

TEXTS = [
    "They closed the old bridge for repairs, so the buses take the long way now.",
    "Remember to take the shopping list from the kitchen table, I always forget it.",
]


@pytest.fixture(scope="module")
def clean() -> np.ndarray:
    got, rate = speak(TEXTS, "en-us+f3", 165, 50)
    x = np.concatenate([resample(np.asarray(w, np.float32), rate, 16000) for w in got])
    return (x / np.max(np.abs(x)) * 0.3).astype(np.float32)


def test_dnsmos_ranks_clean_noisy_clipped(clean: np.ndarray) -> None:
    rng = np.random.default_rng(0)
    rms = float(np.sqrt(np.mean(clean**2)))
    noisy = clean + rng.standard_normal(len(clean)).astype(np.float32) * rms * 10 ** (-15 / 20)
    clipped = np.clip(clean * 10 ** (30 / 20), -0.3, 0.3).astype(np.float32)
    m = get_model()
    s_clean, s_noisy, s_clipped = (score_clip(x, m, WINDOW_S) for x in (clean, noisy, clipped))
    assert s_clean.ovrl > s_noisy.ovrl > s_clipped.ovrl, (s_clean, s_noisy, s_clipped)
    assert s_clean.bak > s_noisy.bak + 0.5
    for s in (s_clean, s_noisy, s_clipped):
        assert all(1.0 <= v <= 5.0 for v in (s.sig, s.bak, s.ovrl, s.p808)), s


def test_streamed_file_score_equals_the_in_memory_windows(
    clean: np.ndarray, tmp_path: Path
) -> None:
    long = np.concatenate([clean, clean, clean])[: 2 * WINDOW + 1000]
    write_audio(tmp_path / "d.wav", long, 16000, subtype="FLOAT")
    got = score_file(tmp_path / "d.wav")
    stream = DnsmosStream()
    for a in range(0, len(long), 7000):
        stream.feed(long[a : a + 7000])
    ref = stream.result()
    assert got.windows == ref.windows == 2
    assert got == ref
    # deterministic: the same signal scores the same twice
    assert score_clip(clean, hop_s=WINDOW_S) == score_clip(clean, hop_s=WINDOW_S)
