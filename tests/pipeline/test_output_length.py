"""The rendered length contract in the process stage: 20–60 s measured on the rendered audio.

Windows are chosen by their predicted rendered length; what the prediction cannot see (here:
annotations with a second of slack around every turn, which trimming removes) is caught on the
rendered audio and rejected with a reason code, and the file is not left behind.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import soundfile as sf

from duetflow.config import build_config
from duetflow.demo.voice import FEMALE, MALE, speech
from duetflow.pipeline.process import process_dialogues
from duetflow.records.dialogue import Category, Dialogue, PerSpeakerSource, Speaker, Turn
from duetflow.records.manifest import DIALOGUES, REJECTIONS, iter_rows
from duetflow.turntaking.rendered_length import predict_length

SR = 16000


def _sloppy(root: Path, slack_s: float, n: int = 8, dur: float = 1.2) -> Dialogue:
    """``n`` alternating turns of ``dur`` s of speech, each annotated ``slack_s`` wider."""
    rng = np.random.default_rng(5)
    step = dur + 2 * slack_s + 0.3
    total = n * step + 1.0
    tracks = {s: rng.normal(0, 1e-3, int(total * SR)).astype(np.float32) for s in "AB"}
    turns = []
    for k in range(n):
        spk = "AB"[k % 2]
        t0 = 0.5 + k * step + slack_s
        sig = speech(dur, SR, MALE if spk == "A" else FEMALE, rng, -20.0)
        i = int(round(t0 * SR))
        tracks[spk][i : i + len(sig)] += sig
        turns.append(Turn(spk, round(t0 - slack_s, 3), round(t0 + dur + slack_s, 3), f"t{k}"))
    root.mkdir(parents=True, exist_ok=True)
    paths = {}
    for s, x in tracks.items():
        paths[s] = str(root / f"{s}.flac")
        sf.write(paths[s], x, SR, subtype="PCM_16")
    return Dialogue(
        id=f"test__sloppy{int(slack_s * 10)}",
        corpus="test",
        source_id="sloppy",
        category=Category.HH,
        language="en",
        topic="tests",
        speakers=(Speaker("A"), Speaker("B")),
        turns=tuple(turns),
        source=PerSpeakerSource(paths),
        duration_s=total,
    )


def test_window_rendering_shorter_than_min_is_rejected_and_removed(tmp_path: Path) -> None:
    # acoustic timing off: the annotation's slack reaches the length model (the safety net on
    # the rendered audio is what is tested here)
    cfg = build_config({"turns": {"acoustic_timing": False}})
    d = _sloppy(tmp_path / "src", slack_s=1.0)
    predicted = predict_length(d, cfg)
    assert predicted is not None and predicted.lo_s >= cfg.window.select_range[0]
    out = tmp_path / "out"
    res = process_dialogues([d], cfg, out)
    assert res.dialogues == [] and res.units == 1
    [rej] = res.rejections
    assert (rej.stage, rej.reason) == ("render", "rendered_too_short")
    detail = json.loads(rej.detail)
    # measured on the audio the renderer made: about 8 x 1.2 s of speech + 7 gaps + edges
    assert 8 * 1.2 + 7 * 0.17 + 0.3 <= detail["duration_s"] < cfg.window.min_s
    assert detail["window"] == [d.turns[0].start, d.turns[-1].end]
    assert not list((out / "audio").glob("*"))  # no orphan audio
    assert [r["reason"] for r in iter_rows(out / REJECTIONS)] == ["rendered_too_short"]
    assert list(iter_rows(out / DIALOGUES)) == []
    stats = json.loads((out / "stats.json").read_text())["total"]
    assert stats["kept"] == 0 and stats["rejected_by_reason"] == {"rendered_too_short": 1}


def test_tight_annotation_renders_in_range_and_is_kept(tmp_path: Path) -> None:
    cfg = build_config({})
    d = _sloppy(tmp_path / "src", slack_s=0.0, n=12, dur=2.0)
    res = process_dialogues([d], cfg, tmp_path / "out")
    [row] = res.dialogues
    info = sf.info(tmp_path / "out" / row.audio_path)
    assert cfg.window.min_s <= info.duration <= cfg.window.max_s
    predicted = predict_length(d, cfg)
    assert predicted is not None
    # the prediction brackets what was rendered (to within a VAD frame per change)
    assert predicted.lo_s - 0.35 <= info.duration <= predicted.hi_s + 0.35


def test_acoustic_timing_sees_the_slack_before_windows_are_chosen(tmp_path: Path) -> None:
    """With acoustic timing (the default) the same sloppy dialogue is predicted as what it
    renders to: too short for any window, rejected before rendering, no audio written."""
    cfg = build_config({})
    d = _sloppy(tmp_path / "src", slack_s=1.0)
    res = process_dialogues([d], cfg, tmp_path / "out")
    assert res.dialogues == [] and res.units == 1
    [rej] = res.rejections
    assert (rej.stage, rej.reason) == ("window", "no_window")
    predicted = json.loads(rej.detail)["predicted_s"]
    # about 8 x 1.2 s of speech + 7 gaps + edges, as the renderer would make it
    assert 8 * 1.2 + 7 * 0.17 <= predicted[0] <= predicted[1] <= 8 * 1.2 + 7 * 0.24 + 1.0
    assert not (tmp_path / "out" / "audio").exists() or not list(
        (tmp_path / "out" / "audio").glob("*")
    )
