"""Audio writing: equal samples give equal bytes, whatever the format and whenever written."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from duetflow.audio.io import write_audio


@pytest.mark.parametrize(
    ("name", "subtype"), [("a.wav", "FLOAT"), ("a.wav", "PCM_16"), ("a.flac", "PCM_16")]
)
def test_same_samples_same_bytes_a_second_later(tmp_path: Path, name: str, subtype: str) -> None:
    x = np.random.default_rng(0).normal(0, 0.01, (8000, 2)).astype(np.float32)
    digests = []
    for k in range(2):
        if k:
            time.sleep(1.1)  # libsndfile's float-WAV PEAK chunk carries a time in seconds
        p = write_audio(tmp_path / str(k) / name, x, 16000, subtype=subtype)
        digests.append(hashlib.sha256(p.read_bytes()).hexdigest())
    assert digests[0] == digests[1]
    back, sr = sf.read(tmp_path / "0" / name, dtype="float32")
    assert sr == 16000 and back.shape == x.shape
    tol = 0 if subtype == "FLOAT" else 1 / 32768
    assert np.max(np.abs(back - x)) <= tol
