"""Acoustic turn timing on a track with a DC offset (issue 24, item 7).

A cheap interface adds a constant offset to one speaker's file; the offset must not reach the
level decisions (floors, edges): timing on the offset files equals timing on the clean ones,
both checked against the constructed speech (tests/acoustics/timing_corpora.py). On the code before
the fix a 0.2 offset moved edges by up to 249 ms (back to the annotation).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from duetflow.acoustics.timing import refine_timing
from duetflow.audio.levels import file_dc_offsets
from duetflow.config import build_config

from .timing_corpora import build, plan

CFG = build_config({})


def _audio_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.suffix in (".wav", ".flac"))


@pytest.mark.parametrize("layout", ["studio_tracks", "iemocap", "ramc"])
def test_a_dc_offset_does_not_move_turn_edges(tmp_path: Path, layout: str) -> None:
    results = {}
    for offset in (0.0, 0.2):
        root = tmp_path / f"o{offset}"
        items, _ = plan(1, terminal=3)
        b = build(layout, items, root, 1)
        if offset:
            f = _audio_files(root)[0]
            x, sr = sf.read(f, always_2d=True, dtype="float32")
            x[:, 0] += offset
            sf.write(f, x, sr, subtype="FLOAT" if f.suffix == ".wav" else "PCM_24")
            assert abs(file_dc_offsets(f)[0] - offset) < 0.01
        else:
            assert not any(o for f in _audio_files(root) for o in file_dc_offsets(f))
        r = refine_timing(b.dialogue, CFG.turns)
        results[offset] = [(t.start, t.end) for t in r.turns]
        errors = [
            max(abs(t.start - truth[0]), abs(t.end - truth[1]))
            for t, truth in zip(r.turns, b.truth, strict=False)
            if truth is not None
        ]
        assert max(errors) < 0.06, (offset, errors)  # a mono mix blurs edges in overlaps
    clean, offset = np.array(results[0.0]), np.array(results[0.2])
    assert clean.shape == offset.shape and np.abs(clean - offset).max() < 0.002
