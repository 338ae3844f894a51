"""Equalisation: what the pipeline controls is the same for HH/HM windows and PH dialogues.

Each test renders an HH window (the renderer, :func:`duetflow.rendering.render.render_dialogue`)
and assembles a PH dialogue (:func:`duetflow.tts.assemble.assemble`) from constructed speech,
then measures the cue on both files with an instrument written here (plain energy envelopes and
Welch spectra, independent of :mod:`duetflow.audio.edges`). docs/equalisation.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf
from render_signals import make, script
from scipy.signal import welch

from duetflow.config import RunConfig, build_config
from duetflow.demo.voice import FEMALE, MALE, speech
from duetflow.rendering.render import render_dialogue
from duetflow.tts.assemble import assemble
from duetflow.tts.base import Synthesis, Voice
from duetflow.tts.script import Script, ScriptLine

PH_RATE = 24000  # a TTS backend's native rate, unlike the sources'


def _noise_file(path: Path, sr: int, seed: int, db: float = -55.0) -> str:
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 10 ** (db / 20), sr * 3).astype(np.float32)
    sf.write(path, x, sr, subtype="PCM_16")
    return str(path)


def _voice(name: str, noise: str | None, snr: float | None) -> Voice:
    return Voice(
        speaker_id=name, language="en", gender="M" if name == "a" else "F", pitch_hz=None,
        clip_id=f"clip_{name}", clip_path="", transcript="", duration_s=5.0,
        sample_rate=16000, snr_db=snr, noise_path=noise, source_dialogue_id=f"hh__{name}",
        licence="CC0-1.0",
    )  # fmt: skip


def render_hh(tmp: Path, cfg: RunConfig, kind: str = "per_speaker", seed: int = 0) -> np.ndarray:
    """An HH window rendered by the renderer; its samples (float)."""
    d = make(kind, tmp / f"src-{kind}{seed}", script(seed, n=12), seed=seed)
    res = render_dialogue(d, cfg, tmp / "hh")
    y, sr = sf.read(tmp / "hh" / res.row["audio_path"], dtype="float32")
    assert sr == cfg.sample_rate
    return np.asarray(y)


def assemble_ph(tmp: Path, cfg: RunConfig, seed: int = 0, n: int = 12) -> np.ndarray:
    """A PH dialogue assembled from speech at the TTS's native rate over reference ambience."""
    rng = np.random.default_rng(seed)
    lines = tuple(ScriptLine("AB"[k % 2], f"line {k}") for k in range(n))
    syn = [
        Synthesis(speech(float(rng.uniform(1.2, 2.4)), PH_RATE, MALE if k % 2 == 0 else FEMALE,
                         rng, -20.0), PH_RATE, seed=k)
        for k in range(n)
    ]  # fmt: skip
    noise = _noise_file(tmp / f"tone{seed}.wav", 16000, seed)
    voices = (_voice("a", noise, 30.0), _voice("b", noise, 30.0))
    sc = Script(f"eq{seed}", "en", lines)
    out = assemble(sc, voices, syn, cfg, tmp / "ph", {"output_licence": "CC0-1.0"}, "test")
    y, sr = sf.read(out.audio_path, dtype="float32")
    assert sr == cfg.sample_rate
    return np.asarray(y)


# --- the instrument ---------------------------------------------------------------------------


def _levels_db(y: np.ndarray, sr: int, win_s: float = 0.01, hop_s: float = 0.001) -> np.ndarray:
    x = np.asarray(y, dtype=np.float64)
    w, h = int(win_s * sr), int(hop_s * sr)
    c = np.concatenate(([0.0], np.cumsum(x * x)))
    s = np.arange(0, len(x) - w + 1, h)
    return 10 * np.log10(np.maximum((c[s + w] - c[s]) / w, 1e-20))


def lead_tail_s(y: np.ndarray, sr: int) -> tuple[float, float]:
    """(silence before the first speech, after the last) in seconds: speech is a window 15 dB
    over the file's quietest tenth (its floor)."""
    db = _levels_db(y, sr)
    loud = np.flatnonzero(db > np.percentile(db, 10) + 15.0)
    w = 0.01
    return float(loud[0] * 0.001 + w / 2), float(len(y) / sr - (loud[-1] * 0.001 + w / 2))


def energy_99_hz(y: np.ndarray, sr: int) -> float:
    """Frequency under which 99 % of the file's spectral energy lies (Welch, 4096 points)."""
    f, p = welch(np.asarray(y, dtype=np.float64), fs=sr, nperseg=4096)
    c = np.cumsum(p)
    return float(f[np.searchsorted(c, 0.99 * c[-1])])


# --- edge silence: one rule -------------------------------------------------------------------


@pytest.mark.parametrize("edge_ms", [None, 300.0])
def test_edge_silence_is_one_rule_for_every_category(tmp_path: Path, edge_ms: Any) -> None:
    cfg = build_config({"render": {"edge_silence_ms": edge_ms}} if edge_ms else {})
    want = (edge_ms or cfg.render.gap_ms_min) / 1000
    hh = lead_tail_s(render_hh(tmp_path, cfg), cfg.sample_rate)
    ph = lead_tail_s(assemble_ph(tmp_path, cfg), cfg.sample_rate)
    for got in (*hh, *ph):
        assert abs(got - want) < 0.03, (hh, ph, want)
    assert abs(hh[0] - ph[0]) < 0.015 and abs(hh[1] - ph[1]) < 0.015, (hh, ph)
