"""The render's cheaper paths give what the full ones give: the true-peak question asked only
where the ceiling can be reached, the 16-bit samples handed to the FLAC encoder as they are,
the flicker median computed once per analysis."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from scipy.ndimage import median_filter

import duetflow.rendering.mixdown
from duetflow.audio import bs1770, edges
from duetflow.audio import loudness as ld
from duetflow.audio.io import FLAC_COMPRESSION_LEVEL, to_pcm16, write_audio
from duetflow.config import build_config
from duetflow.demo.voice import FEMALE, MALE, room_tone, speech
from duetflow.rendering.render import render_dialogue
from render_signals import make

SR = 16000


def _quarter_rate_sine(amplitude: float, seconds: float, sr: int) -> np.ndarray:
    """A sine at fs/4 sampled 45 degrees off its crests: every sample reads amplitude/sqrt(2),
    its true peak is ``amplitude`` (3 dB of intersample overshoot, known by construction)."""
    n = np.arange(int(seconds * sr))
    ramp = np.minimum(1.0, np.minimum(n, n[::-1]) / (0.05 * sr))  # no step to ring at the ends
    env = 0.5 - 0.5 * np.cos(np.pi * ramp)
    return (amplitude * env * np.sin(np.pi / 2 * n + np.pi / 4)).astype(np.float32)


@pytest.mark.parametrize("sr", [16000, 44100])
def test_true_peak_under_sees_intersample_peaks_it_cannot_see_in_samples(sr: int) -> None:
    rng = np.random.default_rng(3)
    talk = speech(2.0, sr, MALE, rng, -30.0)
    tone = _quarter_rate_sine(0.5, 0.3, sr)  # samples at -9.03 dBFS, true peak -6.02 dBTP
    x = np.concatenate([talk, tone, talk]).astype(np.float32)
    truth = 20 * math.log10(0.5)
    assert 20 * math.log10(float(np.max(np.abs(x)))) < truth - 2.9
    assert bs1770.true_peak_under(x, sr, truth + 0.1)
    assert not bs1770.true_peak_under(x, sr, truth - 0.1)  # 2.9 dB above every sample
    assert bs1770.true_peak_under(np.zeros(10, np.float32), sr, -60.0)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_true_peak_under_answers_as_the_full_oversampling(seed: int) -> None:
    rng = np.random.default_rng(seed)
    parts = [speech(float(rng.uniform(0.5, 2.0)), SR, FEMALE, rng, -20.0) for _ in range(6)]
    x = np.concatenate([p * np.float32(rng.uniform(0.1, 1.0)) for p in parts])
    x += room_tone(len(x) / SR, SR, -55.0, rng)[: len(x)]
    k = int(rng.integers(SR, len(x) - SR))
    x[k : k + 3] = [0.0, 0.6, -0.6]
    ref = ld.true_peak_dbtp(x, SR)  # the whole signal oversampled (the reference meter)
    for limit in ref + np.array([-6.0, -1.0, -0.2, -0.02, 0.02, 0.2, 1.0, 6.0, 12.0]):
        assert bs1770.true_peak_under(x, SR, float(limit)) == (ref < limit - 0.01), limit


@pytest.mark.parametrize("sr", [16000, 22050, 44100, 48000])
def test_the_ceiling_checks_short_context_gives_the_block_contexts_values(sr: int) -> None:
    """true_peak_under oversamples each run of blocks with 256 samples of context, not the
    neighbouring blocks: soxr's VHQ filter reaches ~130, so the values are the same (the check
    allows 0.01 dB; they are equal to the bit here), wherever the runs lie and however close."""
    rng = np.random.default_rng(sr)
    block = int(0.05 * sr)
    for trial in range(12):
        n = int(rng.integers(block // 2, 3 * sr))
        t = np.arange(n) / sr
        x = rng.normal(0, 0.1, n) * np.sin(t * rng.uniform(1, 9)) ** 8
        if trial % 3 == 0:  # a steady tone near the band edge rings longest
            x += 0.3 * np.sin(2 * np.pi * sr * rng.uniform(0.3, 0.45) * t)
        x = x.astype(np.float32)
        nb = -(-n // block)
        keep = rng.uniform(0, 1, nb) < rng.uniform(0.05, 0.7)
        keep[int(rng.integers(0, nb))] = True
        top = bs1770._oversampled_top(x, sr, block, keep)
        assert top == bs1770._oversampled_peak(x, sr, block, keep), (trial, n)


def test_mixdown_ceiling_is_the_one_the_full_measurement_sets(tmp_path: Path) -> None:
    """Loud renders need the ceiling (the peak is measured), quiet ones do not (it is not):
    either way the reduction is what the reference meter on the rendered file implies."""
    d = make("multichannel", tmp_path / "src")
    for target, out in ((-8.0, "loud"), (-30.0, "quiet")):
        cfg = build_config({"render": {"loudness_target_lufs": target}})
        r = render_dialogue(d, cfg, tmp_path / out)
        prov = json.loads(r.row["provenance"])
        y, _ = sf.read(tmp_path / out / r.row["audio_path"], dtype="float32")
        tp = ld.true_peak_dbtp(y, SR)
        assert tp <= cfg.render.true_peak_ceiling_dbtp + 0.02
        if target == -30.0:
            assert prov["ceiling_gain_db"] == 0.0
        else:
            assert prov["ceiling_gain_db"] < -1.0
            assert tp > cfg.render.true_peak_ceiling_dbtp - 0.2  # reduced to it, not below


def test_to_pcm16_is_the_conversion_libsndfile_applies(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(0, 0.3, 50_000).astype(np.float32)
    x[:8] = [1.5, -1.5, 1.0, -1.0, 0.5 / 32768, 1.5 / 32768, -2.5 / 32768, 0.0]  # clip, ties
    sf.write(tmp_path / "float.flac", x, SR, subtype="PCM_16", format="FLAC")
    seen, _ = sf.read(tmp_path / "float.flac", dtype="int16")
    q = to_pcm16(x)
    assert q.dtype == np.int16
    np.testing.assert_array_equal(q, seen)
    assert list(q[:8]) == [32767, -32768, 32767, -32768, 0, 2, -2, 0]


def test_int16_flac_is_the_float_path_bytes_without_the_conversion(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    x = speech(3.0, SR, FEMALE, rng, -23.0) + room_tone(3.0, SR, -60.0, rng)[: 3 * SR]
    ref = tmp_path / "ref.flac"
    sf.write(ref, x, SR, subtype="PCM_16", format="FLAC", compression_level=5 / 8)
    ours = write_audio(tmp_path / "ours.flac", to_pcm16(x), SR)
    assert FLAC_COMPRESSION_LEVEL == 5
    assert ours.read_bytes() == ref.read_bytes()
    with pytest.raises(ValueError, match="PCM_16"):
        write_audio(tmp_path / "f.wav", to_pcm16(x), SR, subtype="FLOAT")


def test_the_file_holds_the_samples_its_gaps_were_confirmed_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[np.ndarray] = []
    real = duetflow.rendering.mixdown.as_written

    def spy(x: np.ndarray, gain_db: float) -> np.ndarray:
        seen.append(real(x, gain_db))
        return seen[-1]

    monkeypatch.setattr(duetflow.rendering.mixdown, "as_written", spy)
    for target in (-23.0, -8.0):  # without and with a true-peak ceiling
        cfg = build_config({"render": {"loudness_target_lufs": target}})
        r = render_dialogue(make("per_speaker", tmp_path / "src"), cfg, tmp_path / f"o{target}")
        y, _ = sf.read(tmp_path / f"o{target}" / r.row["audio_path"], dtype="int16")
        assert seen
        np.testing.assert_array_equal(y.astype(np.float32) / 32768, seen[-1])


@pytest.mark.parametrize("seed", [0, 1])
def test_floor_flicker_from_the_whole_median_is_the_local_one(seed: int) -> None:
    """The running median is taken once over the whole envelope; the frames a floor reads lie
    a neighbourhood inside the stretch the median was taken over before, or at its ends."""
    rng = np.random.default_rng(seed)
    x = room_tone(6.0, SR, -50.0, rng)
    for at in (0.5, 2.0, 4.2):
        s = speech(1.0, SR, MALE, rng, -25.0)
        i = int(at * SR)
        x[i : i + len(s)] += s
    an = edges.analyse(x, SR)
    n = len(an.edge)
    for _ in range(20):
        mask = np.zeros(n, dtype=bool)
        for _ in range(int(rng.integers(1, 4))):
            a = int(rng.integers(0, n - 10))
            mask[a : a + int(rng.integers(5, 400))] = True
        got = edges.estimate_floor(an, mask)
        want = _floor_with_local_median(an, mask)
        assert got == want


def _floor_with_local_median(an: edges.Analysis, m: np.ndarray) -> edges.Floor | None:
    """``estimate_floor`` as written before the median was shared (the median over the
    stretch around the frames used)."""
    n = len(an.edge)
    lv, hv = an.level.db[:n], an.edge.db
    if np.count_nonzero(m) < edges.MIN_FLOOR_FRAMES:
        return None
    digital = lv < edges.DIGITAL_DB
    if np.count_nonzero(digital & m) >= edges.DIGITAL_SHARE * np.count_nonzero(m):
        return edges.DIGITAL_FLOOR
    use = m & ~digital
    level, hp = edges._trimmed_level(lv[use]), edges._trimmed_level(hv[use])
    idx = np.flatnonzero(use)
    f = edges._FLICKER_FRAMES
    lo, hi = max(0, int(idx[0]) - f), min(n, int(idx[-1]) + f + 1)
    local = median_filter(hv[lo:hi], size=f, mode="nearest")
    dev = (hv[lo:hi] - local)[use[lo:hi]]
    flicker = edges.quantiles(dev, (99,))[0]
    q50 = edges.quantiles(hv[use], (50,))[0]
    return edges.Floor(level, hp, max(0.0, q50 + flicker - hp), False)
