"""Studio ingest under stress: long sessions, special files, unlistable folders, the state.

Streamed turn detection is checked against the in-memory :func:`detect_turns` (the reference:
the same audio read block by block, at any block size and sample rate, must give identical
turns), and its memory with tracemalloc (every numpy buffer is traced): the peak must not grow
with the session's length. The state must never replay a rejection the invocation may have
caused, and hashing must never open a FIFO, a device or a file outside the session.
"""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf

from duetflow.audio.io import read_frames, resample, write_audio
from duetflow.config import SegmentConfig
from duetflow.corpora.studio import StudioAdapter
from duetflow.corpora.studio.segment import (
    ANALYSIS_RATE,
    TrackSource,
    detect_turns,
    detect_turns_in_files,
)
from duetflow.corpora.studio.state import StudioState, content_hash
from duetflow.records.dialogue import Dialogue, Rejection
from studio_helpers import NO_STATE, SR, tracks, write_session


@pytest.mark.parametrize("rate", [16000, 44100, 48000])
def test_streamed_turns_equal_in_memory_turns(tmp_path: Path, rate: int) -> None:
    a, b = tracks(seed=4)
    if rate != SR:
        a, b = resample(a, SR, rate), resample(b, SR, rate)
    write_audio(tmp_path / "a.wav", a, rate)
    write_audio(tmp_path / "ab.wav", np.stack([a, b], axis=1), rate)
    xa, _ = read_frames(tmp_path / "a.wav")
    xab, _ = read_frames(tmp_path / "ab.wav")
    ref = detect_turns({"a": xa, "b": xab[:, 1]}, rate, SegmentConfig())
    assert len(ref.turns) >= 3
    for block in (1000, 4097, 1 << 16):
        got = detect_turns_in_files(
            {"a": TrackSource(tmp_path / "a.wav"), "b": TrackSource(tmp_path / "ab.wav", 1)},
            SegmentConfig(),
            block_frames=block,
        )
        assert got.turns == ref.turns and got.duration_s == ref.duration_s
        assert got.provenance() == ref.provenance()


def _long_session(folder: Path, minutes: float) -> None:
    """Two mic tracks of ``minutes``: the 4 s helper dialogue repeated, written in blocks."""
    folder.mkdir(parents=True)
    a, b = tracks(seed=1)
    reps = int(minutes * 60 / (len(a) / SR))
    for name, x in (("a.wav", a), ("b.wav", b)):
        with sf.SoundFile(folder / name, "w", SR, 1, "PCM_16") as f:
            for _ in range(reps):
                f.write(x)
    write_session(folder / "_meta")  # a sidecar for these two tracks
    os.replace(folder / "_meta" / "session.yaml", folder / "session.yaml")
    for p in (folder / "_meta").iterdir():
        p.unlink()
    (folder / "_meta").rmdir()


def _peak_bytes(root: Path) -> tuple[int, Dialogue | Rejection]:
    adapter = StudioAdapter(root, NO_STATE)
    tracemalloc.start()
    try:
        (item,) = list(adapter.scan())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, item


def test_studio_ingest_memory_does_not_grow_with_session_length(tmp_path: Path) -> None:
    peaks = {}
    for minutes in (2.0, 8.0):
        root = tmp_path / f"m{minutes:g}"
        _long_session(root / "s", minutes)
        peaks[minutes], item = _peak_bytes(root)
        assert isinstance(item, Dialogue), item
        assert len(item.turns) >= minutes * 60 / 4 * 3 * 0.9  # three turns per 4 s repeat
    samples_8min = 8 * 60 * ANALYSIS_RATE * 4  # one track of float32 samples: 30.7 MB
    # what grows with length is the 10 ms feature grid (~2 MB per track-hour), not samples
    assert peaks[8.0] < samples_8min / 4, peaks
    assert peaks[8.0] < 1.5 * peaks[2.0] + 2_000_000, peaks


def test_uncacheable_rejections_are_not_replayed(tmp_path: Path) -> None:
    root = tmp_path / "studio"
    outside = tmp_path / "outside.wav"
    folder = write_session(root / "s", session_id="s")
    os.replace(folder / "a.wav", outside)
    (folder / "a.wav").symlink_to(outside)
    state = tmp_path / "state"
    (item,) = list(StudioAdapter(root, {"state_dir": str(state)}).scan())
    assert isinstance(item, Rejection) and item.reason == "path_escape"
    assert StudioState(state).get("s") is None  # worked out again next time, never replayed


def test_content_hash_never_opens_special_or_outside_files(tmp_path: Path) -> None:
    folder = write_session(tmp_path / "s")
    os.mkfifo(folder / "pipe")
    (folder / "zero").symlink_to("/dev/zero")
    (folder / "out").symlink_to(tmp_path.parent)
    h1, n1 = content_hash(folder, ["session.yaml", "a.wav", "b.wav", "pipe", "zero"])
    assert n1 == sum((folder / f).stat().st_size for f in ("session.yaml", "a.wav", "b.wav"))
    h2, _ = content_hash(folder, ["session.yaml", "a.wav", "b.wav", "pipe", "zero"])
    assert h1 == h2
    (folder / "notes.txt").write_text("x")  # a new name changes the hash
    assert content_hash(folder, ["session.yaml", "a.wav", "b.wav"])[0] != h1


def test_a_folder_that_cannot_be_listed_is_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "studio"
    write_session(root / "ok", session_id="ok")
    (root / "locked").mkdir()
    real_scandir = os.scandir

    def scandir(path: Any = ".") -> Any:
        if Path(path).name == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    adapter = StudioAdapter(root, NO_STATE)
    items = list(adapter.scan())
    assert adapter.count_sources() == len(items) == 2
    (rej,) = [i for i in items if isinstance(i, Rejection)]
    assert rej.item_id == "studio__locked" and rej.reason == "missing_file"
    assert "Permission denied" in rej.detail
