"""``provenance.bandwidth.source_hz``: one figure per source recording, whatever the window."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from duetflow.acoustics.source_bandwidth import recording_bandwidth_hz
from duetflow.config import build_config
from duetflow.records.dialogue import MixedMonoSource, MultichannelSource
from duetflow.rendering.render import render_dialogue
from render_signals import make, script


def windows(d, k: int = 2):  # type: ignore[no-untyped-def]
    """``d`` cut into ``k`` windows of consecutive turns, each with its own id and window."""
    n = len(d.turns) // k
    out = []
    for j in range(k):
        turns = d.turns[j * n : (j + 1) * n]
        w = (max(0.0, turns[0].start - 0.3), turns[-1].end + 0.3)
        out.append(replace(d, id=f"{d.id}_w{j}", turns=turns, window=w))
    return out


def test_every_window_of_a_recording_records_its_bandwidth(tmp_path: Path) -> None:
    cfg = build_config({"render": {"bandwidth_hz": 3000.0}})
    sr = cfg.sample_rate
    for kind in ("multichannel", "mixed_mono"):
        d = make(kind, tmp_path / kind, script(5, n=12), seed=5)
        src = d.source
        if isinstance(src, MultichannelSource):
            tracks = [(src.path, src.channels["A"]), (src.path, src.channels["B"])]
        else:
            assert isinstance(src, MixedMonoSource)
            tracks = [(src.path, src.channel)]
        want = recording_bandwidth_hz(tracks, sr)
        assert want is not None and want > 3000.0  # measured before the low-pass
        got = []
        for w in windows(d):
            res = render_dialogue(w, cfg, tmp_path / "out")
            got.append(json.loads(res.row["provenance"])["bandwidth"])
        assert got == [{"source_hz": round(want, 1), "limit_hz": 3000.0}] * 2, (kind, got)
