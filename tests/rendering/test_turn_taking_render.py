"""Terminal overlaps through the renderer, measured on the rendered audio.

A separable source re-times a terminal overlap into an ordinary drawn gap with both turns whole;
a mono mix keeps the overlap as recorded. The instrument is independent of the renderer: each
speaker's source speech is located in the output by normalised cross-correlation, so "no speech
lost" means the whole source segment is found there, intact up to a gain.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import soundfile as sf

from duetflow.config import build_config
from duetflow.demo.voice import FEMALE, MALE, speech
from duetflow.records.dialogue import (
    Category,
    Dialogue,
    MixedMonoSource,
    PerSpeakerSource,
    Speaker,
    Turn,
    TurnKind,
)
from duetflow.rendering.render import render_dialogue
from duetflow.turntaking.overlaps import OverlapClass, classify_overlaps

SR = 16000
# (speaker, speech start, duration): B comes in 0.2 s before A's speech ends (a terminal
# overlap), A answers after a 0.9 s pause. Annotations are tight: turn = speech.
ITEMS = [("A", 0.6, 4.0), ("B", 4.4, 3.2), ("A", 8.5, 2.5)]
NOISE_DB = -60.0


def _source(root: Path, kind: str) -> tuple[Dialogue, dict[str, np.ndarray]]:
    rng = np.random.default_rng(11)
    total = 12.0
    tracks = {s: np.zeros(int(total * SR), np.float32) for s in "AB"}
    for spk, t0, dur in ITEMS:
        sig = speech(dur, SR, MALE if spk == "A" else FEMALE, rng, -20.0)
        i = int(round(t0 * SR))
        tracks[spk][i : i + len(sig)] += sig
    noise = {s: rng.normal(0, 10 ** (NOISE_DB / 20), len(x)).astype(np.float32)
             for s, x in tracks.items()}  # fmt: skip
    root.mkdir(parents=True, exist_ok=True)
    if kind == "per_speaker":
        paths = {}
        for s, x in tracks.items():
            paths[s] = str(root / f"{s}.flac")
            sf.write(paths[s], x + noise[s], SR, subtype="PCM_16")
        source: PerSpeakerSource | MixedMonoSource = PerSpeakerSource(paths)
    else:
        p = root / "mix.wav"
        sf.write(p, tracks["A"] + tracks["B"] + noise["A"], SR, subtype="PCM_16")
        source = MixedMonoSource(str(p))
    turns = tuple(Turn(s, t0, round(t0 + d, 3), f"t{k}") for k, (s, t0, d) in enumerate(ITEMS))
    d = Dialogue(
        id=f"test__terminal_{kind}",
        corpus="test",
        source_id="terminal",
        category=Category.HH,
        language="en",
        topic="tests",
        speakers=(Speaker("A"), Speaker("B")),
        turns=turns,
        source=source,
        duration_s=total,
    )
    return d, tracks


def _locate(y: np.ndarray, seg: np.ndarray) -> tuple[int, float]:
    """Best lag of ``seg`` in ``y`` and the normalised correlation there (1.0: identical)."""
    n = len(y) + len(seg)
    nfft = 1 << (n - 1).bit_length()
    corr = np.fft.irfft(np.fft.rfft(y, nfft) * np.conj(np.fft.rfft(seg, nfft)), nfft)[: len(y)]
    energy = np.concatenate(([0.0], np.cumsum(y.astype(np.float64) ** 2)))
    m = len(seg)
    win = energy[m:] - energy[:-m]
    lags = np.arange(len(win))
    rho = corr[: len(win)] / (np.sqrt(np.maximum(win, 1e-20)) * np.linalg.norm(seg))
    k = int(lags[np.argmax(rho)])
    return k, float(rho[k])


def test_separable_terminal_overlap_becomes_a_drawn_gap_with_both_turns_whole(
    tmp_path: Path,
) -> None:
    d, tracks = _source(tmp_path / "src", "per_speaker")
    cfg = build_config({})
    [ev] = classify_overlaps(d.turns, cfg.turns)
    assert ev.klass is OverlapClass.TERMINAL_OVERLAP
    r = render_dialogue(d, cfg, tmp_path / "out")
    y, sr = sf.read(tmp_path / "out" / r.row["audio_path"], dtype="float32")
    assert sr == SR
    found = []
    for spk, t0, dur in ITEMS:
        i = int(round(t0 * SR))
        seg = tracks[spk][i : i + int(round(dur * SR))]
        lag, rho = _locate(y, seg)
        # the whole source turn is in the output, intact up to a gain
        assert rho > 0.99, (spk, t0, rho)
        found.append((lag / SR, (lag + len(seg)) / SR))
    (_a0, a1), (b0, b1), (c0, _c1) = found
    # the instrument sees a loss: with B's first 0.1 s (its overlapped start) gone, no match
    cut = y.copy()
    cut[int(b0 * SR) : int((b0 + 0.1) * SR)] = 0.0
    i = int(round(ITEMS[1][1] * SR))
    assert _locate(cut, tracks["B"][i : i + int(round(ITEMS[1][2] * SR))])[1] < 0.99
    # laid end to end: B's whole turn after A's whole turn, a drawn speaker-change gap between
    for gap in (b0 - a1, c0 - b1):
        assert 0.18 - 0.02 <= gap <= 0.23 + 0.02, gap
    assert 180 <= r.row["gap_ms_min"] <= r.row["gap_ms_max"] <= 230
    mains = [t for t in r.turns if t["kind"] == "turn"]
    assert [t["speaker"] for t in mains] == ["A", "B", "A"]


def test_mono_mix_keeps_the_terminal_overlap_as_recorded(tmp_path: Path) -> None:
    d, tracks = _source(tmp_path / "src", "mixed_mono")
    cfg = build_config({})
    r = render_dialogue(d, cfg, tmp_path / "out")
    y, _ = sf.read(tmp_path / "out" / r.row["audio_path"], dtype="float32")
    # the overlapped change is one stretch of continuous talk, A's start to B's end, found whole
    # (the overlap included) rather than pulled apart
    i0, i1 = int(round(0.6 * SR)), int(round((4.4 + 3.2) * SR))
    mix = tracks["A"][i0:i1] + tracks["B"][i0:i1]
    lag, rho = _locate(y, mix)
    assert rho > 0.99, rho
    # only the B -> A change (a pause in the source) is a drawn gap; the overlap is not one
    prov = json.loads(r.row["provenance"])
    assert len(prov["gaps_ms"]) == 1 and 180 <= prov["gaps_ms"][0] <= 230
    rows = sorted(
        (t for t in r.turns if t["kind"] == str(TurnKind.TURN)), key=lambda t: t["start_s"]
    )
    a, b = rows[0], rows[1]
    assert (a["speaker"], b["speaker"]) == ("A", "B")
    assert 0.15 <= a["end_s"] - b["start_s"] <= 0.25  # reported as the 0.2 s overlap it is
    assert abs(lag / SR - a["start_s"]) < 0.03
