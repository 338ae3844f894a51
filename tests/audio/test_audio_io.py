"""Audio core on real files written in the test."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from duetflow.audio.io import (
    audio_info,
    read_channels,
    read_frames,
    read_seconds,
    resample,
    write_audio,
)
from duetflow.errors import InputError


def _sine(freq: float, sr: int, seconds: float, amp: float = 0.5) -> np.ndarray:
    t = np.arange(int(sr * seconds)) / sr
    return (amp * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def _dominant_hz(x: np.ndarray, sr: int) -> float:
    spec = np.abs(np.fft.rfft(x * np.hanning(len(x))))
    return float(np.argmax(spec) * sr / len(x))


@pytest.mark.parametrize("fmt", ["wav", "flac"])
def test_frame_range_matches_full_read(tmp_path: Path, fmt: str) -> None:
    sr = 16000
    stereo = np.stack([_sine(220, sr, 3.0), _sine(330, sr, 3.0, 0.3)], axis=1)
    path = write_audio(tmp_path / f"a.{fmt}", stereo, sr)
    full, _ = read_frames(path)
    part, got_sr = read_frames(path, 12345, 23456)
    assert got_sr == sr
    np.testing.assert_array_equal(part, full[12345:23456])
    ch1, _ = read_frames(path, 100, 200, channel=1)
    np.testing.assert_array_equal(ch1, full[100:200, 1])
    mono, _ = read_frames(path, 0, 10, mono=True)
    np.testing.assert_allclose(mono, full[:10].mean(axis=1), atol=1e-7)
    secs, _ = read_seconds(path, 1.0, 1.5)
    np.testing.assert_array_equal(secs, full[16000:24000])


def test_resampling_preserves_frequency() -> None:
    x = _sine(1000, 44100, 1.0)
    y = resample(x, 44100, 16000)
    assert len(y) == 16000
    assert abs(_dominant_hz(y, 16000) - 1000) < 2.0


def test_write_is_deterministic(tmp_path: Path) -> None:
    x = _sine(440, 16000, 1.0)
    a = write_audio(tmp_path / "a.flac", x, 16000).read_bytes()
    b = write_audio(tmp_path / "b.flac", x, 16000).read_bytes()
    assert a == b
    assert not list(tmp_path.glob(".*tmp"))


def test_bad_files_raise_input_error_naming_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.wav"
    empty.write_bytes(b"")
    junk = tmp_path / "junk.wav"
    junk.write_bytes(b"RIFF\x00\x00\x00\x00not really a wave file")
    missing = tmp_path / "missing.wav"
    for path, reason in ((empty, "bad_audio"), (junk, "bad_audio"), (missing, "missing_file")):
        with pytest.raises(InputError) as err:
            read_frames(path)
        assert str(path) in str(err.value)
        assert err.value.reason == reason


def test_truncated_wav_is_detected(tmp_path: Path) -> None:
    path = write_audio(tmp_path / "t.wav", _sine(440, 16000, 2.0), 16000)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # header still claims 2 s
    with pytest.raises(InputError) as err:
        read_frames(path)
    assert err.value.reason in {"truncated_audio", "bad_audio"}
    assert "t.wav" in str(err.value)


def test_nan_samples_rejected(tmp_path: Path) -> None:
    x = _sine(440, 16000, 0.5)
    x[100] = np.nan
    path = tmp_path / "nan.wav"
    sf.write(path, x, 16000, subtype="FLOAT")
    with pytest.raises(InputError, match="NaN"):
        read_frames(path)


def test_channel_out_of_range(tmp_path: Path) -> None:
    path = write_audio(tmp_path / "m.wav", _sine(440, 16000, 0.5), 16000)
    with pytest.raises(InputError, match="channel 1"):
        read_frames(path, channel=1)
    assert audio_info(path).channels == 1


@pytest.mark.parametrize("subtype", ["PCM_16", "FLOAT"])
def test_read_channels_gives_read_frames_samples(tmp_path: Path, subtype: str) -> None:
    """One read of the frames, each channel the same float32 samples as its own read."""
    sr = 16000
    x = np.random.default_rng(3).uniform(-1, 1, (sr, 3)).astype(np.float32)
    path = write_audio(tmp_path / "c.wav", x, sr, subtype=subtype)
    got, got_sr = read_channels(path, 1000, 9000, [2, 0, 2], info=audio_info(path))
    assert got_sr == sr and len(got) == 3
    for c, ch in zip([2, 0, 2], got, strict=True):
        want, _ = read_frames(path, 1000, 9000, channel=c)
        assert ch.dtype == np.float32 and ch.flags.c_contiguous
        assert ch.tobytes() == want.tobytes()
    assert got[0] is not got[2]  # a channel asked for twice: two arrays
    both, _ = read_channels(path, 0, None, [1])
    assert both[0].tobytes() == read_frames(path, channel=1)[0].tobytes()
    with pytest.raises(InputError, match="channel 3"):
        read_channels(path, 0, 10, [0, 3])


def test_pcm16_reads_are_libsndfiles_float_values(tmp_path: Path) -> None:
    """A 16-bit file read as integers and scaled gives libsndfile's own float read, in every
    shape read_frames returns (all channels, one, their mean, a mono file)."""
    sr = 16000
    x = np.random.default_rng(4).uniform(-1, 1, (4000, 2)).astype(np.float32)
    path = write_audio(tmp_path / "s.flac", x, sr)
    ref, _ = sf.read(path, dtype="float32", always_2d=True)
    assert read_frames(path)[0].tobytes() == ref.tobytes()
    assert read_frames(path, channel=1)[0].tobytes() == np.ascontiguousarray(ref[:, 1]).tobytes()
    mono_ref = ref.mean(axis=1, dtype=np.float32)
    assert read_frames(path, mono=True)[0].tobytes() == mono_ref.tobytes()
    one = write_audio(tmp_path / "m.flac", x[:, 0], sr)
    assert read_frames(one)[0].tobytes() == sf.read(one, dtype="float32")[0].tobytes()


@pytest.mark.parametrize("n_channels", [1, 2, 3])
def test_read_channels_are_the_same_without_the_kernels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n_channels: int
) -> None:
    """A 16-bit file's channels scaled by the compiled pass (one array each, straight from the
    integers) are numpy's ``int16 * 2^-15`` of each channel, every level from -32768 to
    32767 among them, in any order and repeated; an empty range gives empty arrays."""
    from duetflow.audio import kernels

    sr = 16000
    levels = np.arange(-32768, 32768, dtype=np.int64)
    rng = np.random.default_rng(5)
    x = np.stack([rng.permutation(levels) for _ in range(n_channels)], axis=1).astype(np.int16)
    path = tmp_path / "l.wav"
    sf.write(path, x, sr, subtype="PCM_16")
    orders = [[c] for c in range(n_channels)] + [
        list(range(n_channels)),
        list(range(n_channels))[::-1],
        [n_channels - 1, 0, n_channels - 1, 0],
    ]
    ranges = [(0, None), (7, 60_001), (100, 100)]

    def read() -> list[list[bytes]]:
        out = []
        for chans in orders:
            for a, b in ranges:
                got, _ = read_channels(path, a, b, chans)
                assert all(g.dtype == np.float32 and g.flags.c_contiguous for g in got)
                out.append([g.tobytes() for g in got])
        return out

    fast = read()
    want = x * np.float32(2.0**-15)
    assert fast[0][0] == np.ascontiguousarray(want[:, 0]).tobytes()
    monkeypatch.setattr(kernels, "sample_kernels", lambda: None)
    assert read() == fast
