"""Audio writing: equal samples give equal bytes, whatever the format and whenever written."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from duetflow.audio.io import write_audio, write_audio_sha256


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


@pytest.mark.parametrize(
    ("name", "subtype", "dtype"),
    [("a.flac", "PCM_16", np.int16), ("a.flac", "PCM_16", np.float32),
     ("a.wav", "PCM_16", np.int16), ("a.wav", "FLOAT", np.float32)],
)  # fmt: skip
def test_write_audio_sha256_writes_write_audios_bytes_and_their_digest(
    tmp_path: Path, name: str, subtype: str, dtype: type
) -> None:
    """Encoded in memory (libsndfile seeks back to finish a FLAC header there too): the bytes
    of a write to the path, and the digest of the file."""
    rng = np.random.default_rng(1)
    x = rng.normal(0, 0.1, (24000, 2)).astype(np.float32)
    samples = (x * 32767).astype(np.int16) if dtype == np.int16 else x
    ref = write_audio(tmp_path / "ref" / name, samples, 16000, subtype=subtype).read_bytes()
    path, digest = write_audio_sha256(tmp_path / "new" / name, samples, 16000, subtype=subtype)
    assert path.read_bytes() == ref
    assert digest == hashlib.sha256(ref).hexdigest()
    assert sorted(p.name for p in path.parent.iterdir()) == [name]  # no temporary file left


def test_write_audio_sha256_on_a_full_disk_names_the_file_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import builtins
    import errno
    import os

    from duetflow.errors import DiskFullError

    real_open = builtins.open

    class Full:
        def __init__(self, f: object) -> None:
            self.f = f

        def __enter__(self) -> Full:
            return self

        def __exit__(self, *exc: object) -> None:
            self.f.close()  # type: ignore[attr-defined]

        def write(self, data: object) -> int:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def full_open(file: object, mode: str = "r", *a: object, **k: object) -> object:
        f = real_open(file, mode, *a, **k)  # type: ignore[call-overload]
        return Full(f) if "w" in mode and str(file).endswith(".tmp") else f

    monkeypatch.setattr(builtins, "open", full_open)
    target = tmp_path / "audio" / "x.flac"
    with pytest.raises(DiskFullError, match=f"^{target}: disk full"):
        write_audio_sha256(target, np.zeros(1600, np.int16), 16000)
    assert list(target.parent.iterdir()) == []
