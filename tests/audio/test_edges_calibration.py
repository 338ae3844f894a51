"""Calibration of the acoustic edge measure by construction (docs/turn-taking.md, *Gaps*).

The truth comes from :mod:`duetflow.audio.calibration`: signals built from components whose
envelopes are written in closed form, the truth edge being where the speech components' power
meets the floor's power (computed from those envelopes, never measured). The grid spans sample
rates 8–48 kHz; floors from digital zero through -75…-45 dBFS white, pink, brown and 50/60 Hz
hum; quiet endings (fricatives and decays 20–35 dB under the level, 50–150 ms), reverberant
tails, breathy onsets and breath intakes (not speech); loose annotations.

A second check uses speech nobody here designed: eSpeak NG (the offline TTS backend) speaking
real words, mixed over realistic floors; its truth is where the clean synthesis's own power
(5 ms windows, 0.5 ms steps) meets the floor's.
"""

from __future__ import annotations

import numpy as np
import pytest

from duetflow.audio import edges
from duetflow.audio.calibration import FLOOR_KINDS, SAMPLE_RATES, construct

GRID = 90  # seeded constructions, 3 utterances each


def _edge_errors(seeds: range) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """(onset errors ms, offset errors ms, cases seen) of speech_extent over a seeded grid."""
    on, off = [], []
    seen: dict[str, int] = {}
    for seed in seeds:
        c = construct(seed)
        seen[c.floor_kind] = seen.get(c.floor_kind, 0) + 1
        seen[str(c.sr)] = seen.get(str(c.sr), 0) + 1
        an = edges.analyse(c.samples, c.sr)
        hints = [u.hint for u in c.utterances]
        floor = edges.floor_of(an, hints, 0.05 * c.sr)
        assert floor is not None
        for k, u in enumerate(c.utterances):
            lo = 0.0 if k == 0 else 0.5 * (hints[k - 1][1] + u.hint[0])
            hi = len(c.samples) if k + 1 == len(hints) else 0.5 * (u.hint[1] + hints[k + 1][0])
            ext = edges.speech_extent(an, floor, u.hint, bounds=(lo, hi))
            assert ext is not None, (seed, k)
            on.append((ext.start - u.onset) / c.sr * 1000)
            off.append((ext.end - u.offset) / c.sr * 1000)
            seen[u.ending] = seen.get(u.ending, 0) + 1
            seen[u.onset_kind] = seen.get(u.onset_kind, 0) + 1
    return np.array(on), np.array(off), seen


@pytest.mark.slow
def test_edges_match_constructed_truth_over_a_broad_grid() -> None:
    on, off, seen = _edge_errors(range(GRID))
    # the grid really is broad: every floor, rate, ending and onset kind occurs
    assert set(FLOOR_KINDS) <= set(seen) and {str(sr) for sr in SAMPLE_RATES} <= set(seen)
    assert {"abrupt", "decay", "fricative", "reverb", "breath", "breathy"} <= set(seen)
    both = np.abs(np.concatenate([on, off]))
    assert np.median(both) <= 5.0 and np.percentile(both, 95) <= 15.0
    for name, e in (("onsets", on), ("offsets", off)):
        assert np.median(np.abs(e)) <= 5.0, name
        assert np.percentile(np.abs(e), 95) <= 15.0, name


def test_a_breath_before_an_onset_is_not_speech() -> None:
    """Truth is the voiced onset; a breath intake 30–150 ms before it stays out."""
    errs = []
    for seed in range(400):
        c = construct(seed, floor_kind="pink")
        an = edges.analyse(c.samples, c.sr)
        hints = [u.hint for u in c.utterances]
        floor = edges.floor_of(an, hints, 0.05 * c.sr)
        assert floor is not None
        for k, u in enumerate(c.utterances):
            if u.onset_kind != "breath":
                continue
            lo = 0.0 if k == 0 else 0.5 * (hints[k - 1][1] + u.hint[0])
            ext = edges.speech_extent(an, floor, u.hint, bounds=(lo, u.hint[1] + c.sr))
            assert ext is not None
            errs.append((ext.start - u.onset) / c.sr * 1000)
        if len(errs) >= 20:
            break
    assert len(errs) >= 20
    assert np.percentile(np.abs(errs), 90) <= 10.0, sorted(errs)


@pytest.mark.slow
def test_measured_gaps_match_constructed_gaps() -> None:
    """Two speakers' turns around a 150–400 ms pause (the renderer's case: spans known to a
    few ms); the pause's own floor, measured within it."""
    errs = []
    for seed in range(GRID):
        rng = np.random.default_rng(seed + 1000)
        c = construct(seed, gaps_s=(float(rng.uniform(0.15, 0.4)),), n_utterances=2)
        a, b = c.utterances
        j = (rng.uniform(-0.015, 0.015, size=4) * c.sr).astype(int)
        m = edges.measure_gap(
            c.samples, c.sr, (a.onset + j[0], a.offset + j[1]), (b.onset + j[2], b.offset + j[3])
        )
        assert m is not None, seed
        errs.append((m.gap - (b.onset - a.offset)) / c.sr * 1000)
    e = np.abs(errs)
    assert np.median(e) <= 5.0
    assert np.percentile(e, 95) <= 10.0, sorted(errs)


def _espeak(texts: list[str], voice: str) -> tuple[list[np.ndarray], int]:
    from duetflow.tts.espeak import speak

    waves, sr = speak(texts, voice, 160, 50)
    return [np.asarray(w, dtype=np.float64) for w in waves], sr


def _clean_edges(x: np.ndarray, sr: int, floor_power: float) -> tuple[int, int]:
    """Where clean speech's own power (5 ms windows every 0.5 ms) first and last reaches the
    floor's power: the truth for the eSpeak check, measured on the speech alone."""
    w, h = int(0.005 * sr), max(1, int(0.0005 * sr))
    c = np.concatenate(([0.0], np.cumsum(x * x)))
    starts = np.arange(0, len(x) - w, h)
    p = (c[starts + w] - c[starts]) / w
    above = np.flatnonzero(p >= floor_power)
    return int(starts[above[0]] + w // 2), int(starts[above[-1]] + w // 2)


@pytest.mark.slow
def test_edges_on_espeak_speech_over_real_floors() -> None:
    """Real words (fricatives, plosives, vowel decays) by eSpeak NG, mixed over floors; the
    truth is measured on the clean synthesis alone (it knows nothing of the noise)."""
    texts = [
        "This is the first sentence, ending with a hiss.",
        "Fish and chips, please.",
        "She sells sea shells.",
        "How about half past six?",
        "Thanks, that was perfect.",
        "Yes, of course.",
    ]
    errs = []
    for voice in ("en-us", "en-us+f3"):
        waves, sr = _espeak(texts, voice)
        for k, wav in enumerate(waves):
            rng = np.random.default_rng(k)
            peak = float(np.max(np.abs(wav)))
            speech = wav / peak * 10 ** (-8 / 20)  # a normal recording level
            for floor_db in (-65.0, -55.0):
                lead = int(0.6 * sr)
                n = len(speech) + 2 * lead
                spec = np.fft.rfft(rng.standard_normal(n))
                f = np.fft.rfftfreq(n, 1 / sr)
                noise = np.fft.irfft(spec / np.sqrt(np.maximum(f, 20.0)), n)  # pink
                noise *= 10 ** (floor_db / 20) / np.sqrt(np.mean(noise**2))
                clean = np.zeros(n)
                clean[lead : lead + len(speech)] = speech
                on, off = _clean_edges(clean, sr, 10 ** (floor_db / 10))
                x = np.round((clean + noise) * 32767) / 32767
                an = edges.analyse(x.astype(np.float32), sr)
                hint = (on - 0.1 * sr, off + 0.1 * sr)
                floor = edges.floor_of(an, [hint], 0.05 * sr)
                assert floor is not None
                ext = edges.speech_extent(an, floor, hint)
                assert ext is not None
                errs += [(ext.start - on) / sr * 1000, (ext.end - off) / sr * 1000]
    e = np.abs(errs)
    assert np.median(e) <= 5.0 and np.percentile(e, 95) <= 15.0, sorted(errs)
