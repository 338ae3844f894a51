"""One colour of room tone for HH and PH (``render.tone_tilt_db_oct``), measured on the files.

An HH window whose recording's room is bright (-3 dB/oct) is rendered by the renderer and a PH
dialogue whose reference's room is dark (-9 dB/oct) is assembled; their pauses' tilt is read
by the cue audit's own instrument (``pause_tilt_db_oct``: :func:`duetflow.fairness.cues.
spectral_tilt` over the pauses of the written rows). Off, they differ as their rooms do; on,
they match. The gap, loudness and floor contracts hold and the files are byte-reproducible.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from duetflow.audio.loudness import measure
from duetflow.config import RunConfig, build_config
from duetflow.demo.voice import FEMALE, MALE, speech
from duetflow.fairness.cues import (
    TurnSpan,
    energy_frequency,
    pause_spans,
    power_spectrum,
    spectral_tilt,
    speech_spans,
)
from duetflow.records.dialogue import PerSpeakerSource
from duetflow.rendering.render import render_dialogue
from duetflow.tts.assemble import assemble
from duetflow.tts.backend import Synthesis, Voice
from duetflow.tts.script import Script, ScriptLine
from render_signals import make, script

SR = 16000
PH_RATE = 24000


def coloured(slope_db_oct: float, seconds: float, seed: int, db: float) -> np.ndarray:
    """Noise of ``slope_db_oct`` (above 50 Hz) at ``db`` dBFS."""
    rng = np.random.default_rng(seed)
    n = int(seconds * SR)
    f = np.maximum(np.fft.rfftfreq(n, 1 / SR), 50.0)
    y = np.fft.irfft(np.fft.rfft(rng.standard_normal(n)) * f ** (slope_db_oct / 6.0206), n=n)
    return (y / np.sqrt(np.mean(y * y)) * 10 ** (db / 20)).astype(np.float32)


def pause_tilt(y: np.ndarray, sr: int, rows: list[dict]) -> float:
    """The audit's ``pause_tilt_db_oct`` of a written file and its rows."""
    spans = [TurnSpan(r["speaker"], r["kind"], r["start_s"], r["end_s"]) for r in rows]
    pauses = pause_spans(speech_spans(spans))
    return spectral_tilt(power_spectrum(np.asarray(y, np.float64), sr, pauses), sr)


def render_hh(tmp: Path, cfg: RunConfig) -> tuple[np.ndarray, list[dict], dict]:
    """An HH window whose room is bright: -3 dB/oct noise under both speakers' tracks."""
    d = make("per_speaker", tmp / "src", script(4, n=12), seed=4, noise=False)
    assert isinstance(d.source, PerSpeakerSource)
    for k, path in enumerate(sorted(d.source.paths.values())):
        x, sr = sf.read(path, dtype="float32")
        sf.write(path, x + coloured(-3.0, len(x) / sr, 10 + k, -58.0), sr, subtype="PCM_16")
    res = render_dialogue(d, cfg, tmp / "hh")
    y, sr = sf.read(tmp / "hh" / res.row["audio_path"], dtype="float32")
    return np.asarray(y), list(res.turns), json.loads(res.row["provenance"])


def _voice(name: str, noise: str) -> Voice:
    return Voice(
        speaker_id=name, language="en", gender="M" if name == "a" else "F", pitch_hz=None,
        clip_id=f"clip_{name}", clip_path="", transcript="", duration_s=5.0,
        sample_rate=SR, snr_db=40.0, noise_path=noise, source_dialogue_id=f"hh__{name}",
        licence="CC0-1.0",
    )  # fmt: skip


def assemble_ph(tmp: Path, cfg: RunConfig) -> tuple[np.ndarray, list[dict], dict]:
    """A PH dialogue over a dark reference room: -9 dB/oct noise."""
    rng = np.random.default_rng(5)
    n = 12
    lines = tuple(ScriptLine("AB"[k % 2], f"line {k}") for k in range(n))
    syn = [
        Synthesis(speech(float(rng.uniform(1.2, 2.4)), PH_RATE, MALE if k % 2 == 0 else FEMALE,
                         rng, -20.0), PH_RATE, seed=k)
        for k in range(n)
    ]  # fmt: skip
    tmp.mkdir(parents=True, exist_ok=True)
    noise = tmp / "tone.wav"
    sf.write(noise, coloured(-9.0, 4.0, 6, -60.0), SR, subtype="PCM_16")
    voices = (_voice("a", str(noise)), _voice("b", str(noise)))
    out = assemble(Script("tc", "en", lines), voices, syn, cfg, tmp / "ph",
                   {"output_licence": "CC0-1.0"}, "test")  # fmt: skip
    y, _ = sf.read(out.audio_path, dtype="float32")
    rows = [r.model_dump() if hasattr(r, "model_dump") else dict(vars(r)) for r in out.turn_records]
    return np.asarray(y), rows, json.loads(str(out.record.provenance))


def _contracts(y: np.ndarray, rows: list[dict], cfg: RunConfig) -> None:
    """Gaps at speaker changes in band, every speaker at the loudness target, no digital
    silence in the pauses."""
    sr = cfg.sample_rate
    for spk in {r["speaker"] for r in rows}:
        part = np.concatenate([y[int(r["start_s"] * sr) : int(r["end_s"] * sr)] for r in rows
                               if r["speaker"] == spk and r["kind"] == "turn"])  # fmt: skip
        lufs = measure(part, sr).lufs
        assert abs(lufs - cfg.render.loudness_target_lufs) <= cfg.render.loudness_tolerance_lu
    gaps = [
        (b["start_s"] - a["end_s"]) * 1000
        for a, b in itertools.pairwise(rows)
        if a["speaker"] != b["speaker"] and b["start_s"] > a["end_s"]
    ]
    lo, hi = cfg.render.gap_ms_min, cfg.render.gap_ms_max
    assert gaps and all(lo - 1.0 <= g <= hi + 1.0 for g in gaps), gaps
    first = y[: int(rows[0]["start_s"] * sr)]
    assert np.count_nonzero(first) > 0.99 * first.size  # room tone, not digital silence


def test_hh_and_ph_pauses_come_out_with_one_colour(tmp_path: Path) -> None:
    base = {"floor_db": -33.0}
    off = build_config({"render": base})
    on = build_config({"render": {**base, "tone_tilt_db_oct": {"en": -6.0}}})
    sr = off.sample_rate
    hh_off, hh_rows_off, _ = render_hh(tmp_path / "hh-off", off)
    ph_off, ph_rows_off, _ = assemble_ph(tmp_path / "ph-off", off)
    before = (pause_tilt(hh_off, sr, hh_rows_off), pause_tilt(ph_off, sr, ph_rows_off))
    assert before[0] - before[1] > 3.0, before  # the rooms differ: bright HH, dark PH
    hh, hh_rows, hh_prov = render_hh(tmp_path / "hh-on", on)
    ph, ph_rows, ph_prov = assemble_ph(tmp_path / "ph-on", on)
    after = (pause_tilt(hh, sr, hh_rows), pause_tilt(ph, sr, ph_rows))
    assert abs(after[0] - after[1]) < 0.5, (before, after)
    assert all(abs(t + 6.0) < 0.6 for t in after), (before, after)
    # each bed's own tilt is in the provenance (bright HH room, dark PH reference), the floor
    # rule is untouched
    assert hh_prov["room_tone"]["own_tilt_db_oct"] > -4.5
    assert ph_prov["ambience"]["own_tilt_db_oct"] < -7.5
    assert hh_prov["room_tone"]["floor_dbfs"] == build_hh_floor(tmp_path, off)
    _contracts(hh, hh_rows, on)
    _contracts(ph, ph_rows, on)
    # byte-reproducible
    assert np.array_equal(render_hh(tmp_path / "hh-again", on)[0], hh)
    assert np.array_equal(assemble_ph(tmp_path / "ph-again", on)[0], ph)


def build_hh_floor(tmp: Path, cfg: RunConfig) -> float:
    """The HH file's floor without the colour step (its provenance's), for the level rule."""
    return float(render_hh(tmp / "hh-floor", cfg)[2]["room_tone"]["floor_dbfs"])


def pause_low(y: np.ndarray, sr: int, rows: list[dict]) -> tuple[float, float]:
    """The audit's pause spectrum of a written file and its rows: the share of its power under
    100 Hz (dB) and its 85 % roll-off (``pause_rolloff_hz``)."""
    spans = [TurnSpan(r["speaker"], r["kind"], r["start_s"], r["end_s"]) for r in rows]
    psd = power_spectrum(np.asarray(y, np.float64), sr, pause_spans(speech_spans(spans)))
    f = np.arange(psd.size) * sr / 1024
    return float(10 * np.log10(psd[f < 100].sum() / psd.sum())), energy_frequency(psd, sr, 0.85)


def test_a_room_s_rumble_under_100_hz_is_matched_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A planted difference under 100 Hz: the same HH window and PH dialogue over the same
    rooms (-3 dB/oct), once as they are and once with a rumble (+12 dB under 90 Hz). With the
    colour matched in the band alone (held under 100 Hz, as before this step) the audit's
    pauses of the rumbling rooms hold 1.7-2.5 dB more of their power under 100 Hz and their
    85 % roll-off lies 650-1000 Hz lower; matched down to MATCH_LOW_HZ, the share is within
    0.75 dB (0.5, 0.0) and the roll-off within 300 Hz (+270 HH, +16 PH: the estimate's own
    noise on the ~50 frames of one dialogue's pauses, the HH window's layout moving with its
    rumble). Contracts and bytes as above."""
    orig = coloured
    rumble_db = {"db": 0.0}

    def rumbling(slope: float, seconds: float, seed: int, db: float) -> np.ndarray:
        y = orig(-3.0, seconds, seed, db)
        spec = np.fft.rfft(y.astype(np.float64))
        f = np.fft.rfftfreq(y.size, 1 / SR)
        z = np.fft.irfft(spec * 10 ** (rumble_db["db"] / (1.0 + (f / 90.0) ** 4) / 20), n=y.size)
        return (z * np.sqrt(np.mean(y.astype(np.float64) ** 2) / np.mean(z * z))).astype(np.float32)

    monkeypatch.setitem(globals(), "coloured", rumbling)
    on = build_config({"render": {"floor_db": -33.0, "tone_tilt_db_oct": {"en": -3.9}}})
    sr = on.sample_rate

    def measured(tag: str, db: float) -> list[tuple[float, float]]:
        rumble_db["db"] = db
        hh, hh_rows, _ = render_hh(tmp_path / f"hh-{tag}", on)
        ph, ph_rows, _ = assemble_ph(tmp_path / f"ph-{tag}", on)
        if tag == "rumble":
            _contracts(hh, hh_rows, on)
            _contracts(ph, ph_rows, on)
            assert np.array_equal(assemble_ph(tmp_path / "ph-again", on)[0], ph)
        return [pause_low(hh, sr, hh_rows), pause_low(ph, sr, ph_rows)]

    plain, rumble = measured("plain", 0.0), measured("rumble", 12.0)
    for (share0, roll0), (share1, roll1) in zip(plain, rumble, strict=True):
        assert abs(share1 - share0) < 0.75 and abs(roll1 - roll0) < 300.0, (plain, rumble)
    monkeypatch.setattr("duetflow.audio.tone_colour.MATCH_LOW_HZ", 100.0)
    plain, rumble = measured("plain-held", 0.0), measured("rumble-held", 12.0)
    for (share0, roll0), (share1, roll1) in zip(plain, rumble, strict=True):
        assert share1 - share0 > 1.5 and roll0 - roll1 > 600.0, (plain, rumble)
