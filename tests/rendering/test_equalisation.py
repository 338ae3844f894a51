"""Equalisation: what the pipeline controls is the same for HH/HM windows and PH dialogues.

Each test renders an HH window (the renderer, :func:`duetflow.rendering.render.render_dialogue`)
and assembles a PH dialogue (:func:`duetflow.tts.assemble.assemble`) from constructed speech,
then measures the cue on both files with an instrument written here (plain energy envelopes and
Welch spectra, independent of :mod:`duetflow.audio.edges`). docs/equalisation.md.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf
from scipy.signal import welch

from duetflow.audio.bandlimit import lowpass
from duetflow.config import RunConfig, build_config
from duetflow.demo.voice import FEMALE, MALE, speech
from duetflow.errors import ConfigError
from duetflow.rendering.render import render_dialogue
from duetflow.tts.assemble import assemble
from duetflow.tts.backend import Synthesis, Voice
from duetflow.tts.script import Script, ScriptLine
from render_signals import make, script

PH_RATE = 24000  # a TTS backend's native rate, unlike the sources'


def _noise_file(path: Path, sr: int, seed: int, db: float = -55.0, dc: float = 0.0) -> str:
    rng = np.random.default_rng(seed)
    x = (rng.normal(0, 10 ** (db / 20), sr * 3) + dc).astype(np.float32)
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


def assemble_ph(
    tmp: Path,
    cfg: RunConfig,
    seed: int = 0,
    n: int = 12,
    tts_bandwidth_hz: float | None = None,
    snr_db: float = 30.0,
    dc: float = 0.0,
    tone_dc: float = 0.0,
) -> np.ndarray:
    """A PH dialogue assembled from speech at the TTS's native rate over reference ambience;
    ``tts_bandwidth_hz``: the TTS's own (narrower) bandwidth; ``dc``: an offset the engine
    adds to every synthesis (as eSpeak NG does)."""
    rng = np.random.default_rng(seed)
    lines = tuple(ScriptLine("AB"[k % 2], f"line {k}") for k in range(n))
    syn = [
        Synthesis(lowpass(speech(float(rng.uniform(1.2, 2.4)), PH_RATE,
                                 MALE if k % 2 == 0 else FEMALE, rng, -20.0),
                          PH_RATE, tts_bandwidth_hz) + np.float32(dc), PH_RATE, seed=k)
        for k in range(n)
    ]  # fmt: skip
    tmp.mkdir(parents=True, exist_ok=True)
    noise = _noise_file(tmp / f"tone{seed}.wav", 16000, seed, dc=tone_dc)
    voices = (_voice("a", noise, snr_db), _voice("b", noise, snr_db))
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


# --- one effective bandwidth per language --------------------------------------------------------


def frames(y: np.ndarray, sr: int, pause: bool) -> np.ndarray:
    """The file's pause frames (20 ms, within 3 dB of its quietest tenth) or its speech frames
    (20 dB over it), concatenated."""
    n = int(0.02 * sr)
    f = np.asarray(y[: len(y) // n * n], dtype=np.float64).reshape(-1, n)
    db = 10 * np.log10(np.maximum((f * f).mean(axis=1), 1e-20))
    q = np.percentile(db, 10)
    return np.asarray((f[db < q + 3.0] if pause else f[db > q + 20.0]).ravel())


def share_above(y: np.ndarray, sr: int, hz: float) -> float:
    f, p = welch(np.asarray(y, dtype=np.float64), fs=sr, nperseg=1024)
    return float(p[f > hz].sum() / p.sum())


def pause_99_hz(y: np.ndarray, sr: int) -> float:
    f, p = welch(frames(y, sr, pause=True), fs=sr, nperseg=256)
    c = np.cumsum(p)
    return float(f[np.searchsorted(c, 0.99 * c[-1])])


def test_every_category_is_band_limited_to_the_language_bandwidth(tmp_path: Path) -> None:
    # the corpus reaches 8 kHz, the TTS 5.5 kHz: without a common limit the pauses (room tone)
    # and the speech of the two differ in how far up they reach
    off = build_config({"render": {"bandwidth_hz": None}})
    sr = off.sample_rate
    hh0, ph0 = render_hh(tmp_path / "off", off), assemble_ph(tmp_path / "off", off, 0, 12, 5500.0)
    above = [share_above(frames(y, sr, pause=False), sr, 5600.0) for y in (hh0, ph0)]
    assert above[0] > 1e-2 and above[1] < 1e-3, above
    assert pause_99_hz(hh0, sr) > 7000.0
    for limit in (4000.0, 3000.0):
        cfg = build_config({"render": {"bandwidth_hz": {"en": limit, "zh": 8000.0}}})
        hh = render_hh(tmp_path / str(limit), cfg)
        ph = assemble_ph(tmp_path / str(limit), cfg, tts_bandwidth_hz=5500.0)
        for y in (hh, ph):
            # the room tone reaches the limit and no further; speech holds nothing above it
            assert abs(pause_99_hz(y, sr) - limit) < 200.0, (limit, pause_99_hz(y, sr))
            assert share_above(frames(y, sr, pause=False), sr, limit + 200.0) < 1e-4
            assert share_above(frames(y, sr, pause=True), sr, limit + 200.0) < 2e-3
        assert abs(pause_99_hz(hh, sr) - pause_99_hz(ph, sr)) < 150.0


def test_band_limit_and_floor_keep_the_gap_and_loudness_contracts(tmp_path: Path) -> None:
    from duetflow.audio.loudness import measure

    cfg = build_config({"render": {"bandwidth_hz": 3000.0, "floor_db": -20.0}})
    for kind in ("per_speaker", "mixed_mono"):
        d = make(kind, tmp_path / kind, script(3, n=12), seed=3)
        res = render_dialogue(d, cfg, tmp_path / "out")
        y, sr = sf.read(tmp_path / "out" / res.row["audio_path"], dtype="float32")
        assert abs(pause_99_hz(y, sr) - 3000.0) < 200.0
        rows = list(res.turns)
        for spk in ("A", "B"):
            part = np.concatenate(
                [y[int(r["start_s"] * sr) : int(r["end_s"] * sr)] for r in rows
                 if r["speaker"] == spk and r["kind"] == "turn"]
            )  # fmt: skip
            lufs = measure(part, sr).lufs
            assert abs(lufs - cfg.render.loudness_target_lufs) <= cfg.render.loudness_tolerance_lu
        gaps = [
            (b["start_s"] - a["end_s"]) * 1000
            for a, b in itertools.pairwise(rows)
            if a["speaker"] != b["speaker"] and b["start_s"] > a["end_s"]
        ]
        assert gaps and all(179.0 <= g <= 231.0 for g in gaps), gaps
        prov = json.loads(res.row["provenance"])
        assert prov["bandwidth"]["limit_hz"] == 3000.0 and prov["bandwidth"]["source_hz"] > 3000.0


def test_band_limit_is_byte_reproducible(tmp_path: Path) -> None:
    cfg = build_config({"render": {"bandwidth_hz": 3500.0}})
    a = assemble_ph(tmp_path / "a", cfg, tts_bandwidth_hz=5500.0)
    b = assemble_ph(tmp_path / "b", cfg, tts_bandwidth_hz=5500.0)
    assert np.array_equal(a, b)
    assert np.array_equal(render_hh(tmp_path / "c", cfg), render_hh(tmp_path / "d", cfg))


# --- one pause floor relative to the speech ----------------------------------------------------


def floor_rel_db(y: np.ndarray, sr: int) -> float:
    """Pause level (median of the quietest tenth of 20 ms frames) less the speech level (mean
    power of the frames 20 dB over it), dB."""
    n = int(0.02 * sr)
    f = np.asarray(y[: len(y) // n * n], dtype=np.float64).reshape(-1, n)
    db = 10 * np.log10(np.maximum((f * f).mean(axis=1), 1e-20))
    quiet = float(np.median(np.sort(db)[: max(1, len(db) // 10)]))
    speech = f[db > np.percentile(db, 10) + 20.0]
    return quiet - 10 * float(np.log10(np.mean(speech * speech)))


def test_one_pause_floor_relative_to_the_speech(tmp_path: Path) -> None:
    # the corpus recordings' backgrounds and the PH reference's SNR (45 dB) differ by > 5 dB
    off = build_config({})
    sr = off.sample_rate
    before = [
        floor_rel_db(render_hh(tmp_path / "off", off, "per_speaker"), sr),
        floor_rel_db(render_hh(tmp_path / "off", off, "mixed_mono", seed=1), sr),
        floor_rel_db(assemble_ph(tmp_path / "off", off, snr_db=45.0), sr),
    ]
    assert max(before) - min(before) > 5.0, before
    cfg = build_config({"render": {"floor_db": -20.0}})  # above every source's background
    after = [
        floor_rel_db(render_hh(tmp_path / "on", cfg, "per_speaker"), sr),
        floor_rel_db(render_hh(tmp_path / "on", cfg, "mixed_mono", seed=1), sr),
        floor_rel_db(assemble_ph(tmp_path / "on", cfg, snr_db=45.0), sr),
    ]
    assert max(after) - min(after) < 1.0, (before, after)
    # byte-reproducible: the same config and seed give the same samples
    again = floor_rel_db(assemble_ph(tmp_path / "again", cfg, snr_db=45.0), sr)
    assert again == after[2]


def test_the_settings_resolve_per_language_and_are_bounded() -> None:
    cfg = build_config({"render": {"bandwidth_hz": {"zh": 3000, "*": 4000}, "floor_db": -33}})
    assert cfg.render.bandwidth_for("zh-CN") == 3000.0
    assert cfg.render.bandwidth_for("en") == 4000.0
    assert (
        build_config({"render": {"bandwidth_hz": {"zh": 3000}}}).render.bandwidth_for("en") is None
    )
    assert cfg.render.floor_target_dbfs == cfg.render.loudness_target_lufs - 33.0
    assert build_config({}).render.bandwidth_hz is None and build_config({}).render.floor_db is None
    for bad in ({"bandwidth_hz": 100.0}, {"bandwidth_hz": {"en": 0}}, {"floor_db": 0.0}):
        with pytest.raises(ConfigError):
            build_config({"render": bad})


def test_a_gap_the_rows_would_carry_outside_the_band_is_rejected(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The rows carry the mixdown's measured gaps and the schema checks hold rows to the band
    within rounding: a gap that corrections leave 5 ms outside is rejected by the renderer
    (found on the sample build at scale 16 with every equalisation on: one PH change at
    172.7 ms passed the mixdown and then failed ``publish`` for the whole release)."""
    import dataclasses

    from test_retime_mixdown import _mix, _utterance_clips

    import duetflow.rendering.mixdown as mixdown_mod
    from duetflow.errors import InputError
    from duetflow.release import table_schemas
    from duetflow.rendering.assembly import Bed

    assert table_schemas.ROW_GAP_TOL_MS is mixdown_mod.ROW_GAP_TOL_MS  # one declaration
    x, truth, seen, tone = _utterance_clips(11, -62.0)
    real = mixdown_mod.measure_change

    def slightly_short(written, sr, prev, nxt, floor_db, analysis=None):  # type: ignore[no-untyped-def]
        m = real(written, sr, prev, nxt, floor_db, analysis)
        assert m is not None
        return dataclasses.replace(m, onset=m.offset + 0.175 * sr)

    monkeypatch.setattr(mixdown_mod, "measure_change", slightly_short)
    with pytest.raises(InputError) as err:
        _mix(x, truth, seen, [0.2, 0.19, 0.225], Bed(tone, 10 ** (-6.2)), positions=False)
    assert err.value.reason == mixdown_mod.GAP_UNCONFIRMED


def test_a_tts_dc_offset_does_not_reach_the_file(tmp_path: Path) -> None:
    """eSpeak NG's output carries ~1e-3 FS of DC; the corpora's recordings do not. A synthesis
    with a planted offset (10x the HH level read by the cue audit) is laid DC-free."""
    cfg = build_config({})
    clean = assemble_ph(tmp_path / "clean", cfg)
    planted = assemble_ph(tmp_path / "dc", cfg, dc=1.5e-3)
    hh = render_hh(tmp_path, cfg)
    dc = {k: float(np.mean(y, dtype=np.float64)) for k, y in
          (("clean", clean), ("planted", planted), ("hh", hh))}  # fmt: skip
    assert abs(dc["clean"]) < 6e-5, dc
    assert abs(dc["planted"]) < 6e-5, dc  # without the DC removal: ~+1e-3
    assert abs(dc["planted"] - dc["hh"]) < 1e-4, dc
    # the offset is gone, the speech is not: same length, same loudness within 0.1 dB
    assert len(planted) == len(clean)
    rms = [float(np.sqrt(np.mean(np.square(y, dtype=np.float64)))) for y in (clean, planted)]
    assert abs(20 * np.log10(rms[1] / rms[0])) < 0.1, rms
    again = assemble_ph(tmp_path / "again", cfg, dc=1.5e-3)
    assert np.array_equal(again, planted)
    # the reference's room tone too (a mean of half its RMS), laid under the whole file
    bed = assemble_ph(tmp_path / "bed", build_config({"render": {"floor_db": -33.0}}),
                      dc=1.5e-3, tone_dc=8e-4)  # fmt: skip
    assert abs(float(np.mean(bed, dtype=np.float64))) < 6e-5


def _murmured(rng: np.random.Generator, k: int) -> np.ndarray:
    """A TTS utterance whose voicing opens with 60 ms of a 40 Hz murmur (-36 dBFS), as
    eSpeak NG's low male Chinese voices do: speech on the level envelope, not on the edge
    envelope (high-passed at 100 Hz, :mod:`duetflow.audio.edges`) that the file's gaps are
    read on."""
    voiced = speech(float(rng.uniform(1.2, 1.8)), PH_RATE, MALE if k % 2 == 0 else FEMALE,
                    rng, -20.0)  # fmt: skip
    t = np.arange(int(0.06 * PH_RATE)) / PH_RATE
    murmur = (10 ** (-36 / 20) * np.sin(2 * np.pi * 40.0 * t)).astype(np.float32)
    silence = np.zeros(int(0.05 * PH_RATE), dtype=np.float32)
    return np.concatenate([silence, murmur, voiced, silence])


def test_pauses_hold_no_part_of_an_utterance(tmp_path: Path) -> None:
    """A PH utterance is trimmed as the file's gaps are read: over the bed. Trimmed on the clean
    clip, a murmur before the voicing stayed in the clip while the file's edges left it out of
    the turn: it sat in the pause, where the cue audit read a louder PH floor (zh floor d -2.0,
    SNR d +2.8 on the scale-16 demo)."""
    cfg = build_config({"render": {"floor_db": -33.0}, "window": {"min_s": 2.0}})  # bed -56 dBFS
    rng = np.random.default_rng(3)
    n = 8
    syn = [Synthesis(_murmured(rng, k), PH_RATE, seed=k) for k in range(n)]
    noise = _noise_file(tmp_path / "tone.wav", 16000, 0)
    voices = (_voice("a", noise, 30.0), _voice("b", noise, 30.0))
    sc = Script("mur", "en", tuple(ScriptLine("AB"[k % 2], f"line {k}") for k in range(n)))
    out = assemble(sc, voices, syn, cfg, tmp_path / "ph", {"output_licence": "CC0-1.0"}, "t")
    y, sr = sf.read(out.audio_path, dtype="float64")
    floor = cfg.render.loudness_target_lufs - 33.0
    pauses = []
    for a, b in itertools.pairwise(out.turn_records):
        assert 0.18 - 1e-3 <= b.start_s - a.end_s <= 0.23 + 1e-3
        whole = y[int(a.end_s * sr) : int(b.start_s * sr)]  # the pause the rows declare
        pauses.append(10 * np.log10(np.mean(np.square(whole))))
    assert max(pauses) < floor + 1.0, (floor, [round(p, 1) for p in pauses])
    # what the trim cut does not move the speakers off the loudness target
    rec = out.record
    for lufs in (rec.loudness_lufs_a, rec.loudness_lufs_b):
        assert abs(lufs - cfg.render.loudness_target_lufs) <= 0.05, rec
