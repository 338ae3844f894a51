"""The acceptance of the cue audit on constructed data (issue 25).

Two categories made from the same material show no separation; a category with a planted
difference (a band-limit, an overlap at a speaker change, a 6 dB floor step) is caught, and the
cue named. The dialogues are constructed (tests/fairness/cue_signals.py), so the truth is known.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from cue_signals import SR, Plant, category, dialogue, room_tone

from duetflow.config.release import CueThresholds
from duetflow.fairness.compare import compare_all
from duetflow.fairness.cues import CUE_BY_NAME, CUES, TurnSpan, measure_dialogue
from duetflow.fairness.gate import CLASSIFIER, audit

N = 16  # dialogues per side: at least the default min_per_side (8), small enough to be quick
TH = CueThresholds()


@pytest.fixture(scope="module")
def side_a():
    return category("HH", N, prefix="a")


@pytest.fixture(scope="module")
def same_b():
    """The same generator, other dialogues: the same material under another label."""
    return category("PH", N, prefix="b")


def test_same_material_shows_no_separation(side_a, same_b) -> None:
    pairs, verdict = audit(side_a + same_b, TH)
    (pair,) = pairs
    assert pair.judged and pair.pair == "HH-PH"
    assert verdict.passed, verdict.lines()
    assert "passes (1 pair(s) judged)" in verdict.headline()
    assert not any(c.separates for c in pair.cues if c.gated)
    assert pair.classifier is not None
    assert pair.classifier.accuracy <= TH.max_accuracy or pair.classifier.p_permutation >= 0.05
    assert pair.classifier.auc_lo < 0.5 < pair.classifier.auc_hi  # chance is inside the interval


def test_identical_copies_are_identical(side_a) -> None:
    """The same dialogues under two labels: every d is 0, nothing separates, nothing fails."""
    copies = [type(r)(**{**r.to_row(), "category": "HM"}) for r in side_a]
    pairs, verdict = audit(side_a + copies, TH)
    assert verdict.passed
    assert all(c.d == 0 or math.isnan(c.d) for c in pairs[0].cues)


@pytest.mark.parametrize(
    ("plant", "cues"),
    [
        (Plant(lowpass_hz=3000), {"band_edge_hz"}),
        (Plant(overlap_s=0.3), {"overlaps_per_min", "gap_min_ms"}),
        (Plant(floor_db=6.0), {"floor_dbfs", "snr_db"}),
    ],
    ids=["band-limit", "overlap", "floor+6dB"],
)
def test_planted_difference_is_caught_and_named(side_a, plant: Plant, cues: set[str]) -> None:
    planted = category("PH", N, plant, prefix="b")
    pairs, verdict = audit(side_a + planted, TH)
    assert not verdict.passed
    failing = set(verdict.failing_cues())
    assert cues <= failing, verdict.lines()
    assert CLASSIFIER in failing  # all cues together see it too
    (pair,) = pairs
    # the plant is the largest |d| (a band-limit also takes the pauses' upper spectrum)
    strongest = {c.cue for c in pair.top(3)}
    assert strongest & (cues | {"gap_sd_ms", "gap_mean_ms"})
    named = "\n".join(verdict.lines())
    for cue in cues:
        assert f"en HH-PH: {cue}" in named


def test_band_edge_is_the_channel_not_the_voice() -> None:
    """A channel band-limit moves ``band_edge_hz`` to the cutoff; a duller voice through the
    same channel does not move it (the voice's 99 % frequency, a voice cue, does)."""
    channel = Plant(lowpass_hz=3500, speech_lufs=-23.0)
    bright = category("HH", N, channel, prefix="e")
    dull = category("PH", N, Plant(lowpass_hz=3500, speech_lufs=-23.0, voice_lowpass_hz=1800))
    pairs, verdict = audit(bright + dull, TH)
    (pair,) = pairs
    by = {c.cue: c for c in pair.cues}
    edge = by["band_edge_hz"]
    # at the filter's stop band: within its transition (250 Hz) of the cutoff
    assert 0 < edge.mean_a - 3500 < 250 and 0 < edge.mean_b - 3500 < 250
    assert abs(edge.mean_a - edge.mean_b) < 100 and not edge.separates  # within the floor
    assert "band_edge_hz" not in verdict.failing_cues()
    speech = by["bandwidth_speech_hz"]  # the voices differ, and the audit says so
    assert speech.separates and speech.mean_a - speech.mean_b > 800 and not speech.gated
    # the same voices without the channel limit: the edge lies far above 3.5 kHz
    open_ = category("HM", N, Plant(speech_lufs=-23.0), prefix="e")
    wide = next(
        c for c in compare_all(open_ + bright, min_per_side=8)[0].cues if c.cue == "band_edge_hz"
    )
    assert wide.mean_b > 5000 and wide.separates


def test_snr_is_read_as_the_pipeline_sets_it() -> None:
    """At one speech loudness over one floor, ``snr_db`` (loudness over floor power, as
    ``render.floor_db`` sets it) does not tell a duller voice apart (the planted 6 dB floor
    step above moves it by the step)."""
    a = category("HH", N, Plant(speech_lufs=-23.0), prefix="s")
    b = category("PH", N, Plant(speech_lufs=-23.0, voice_lowpass_hz=1500), prefix="s")
    by = {c.cue: c for c in compare_all(a + b, min_per_side=8)[0].cues}
    assert abs(by["snr_db"].mean_a - by["snr_db"].mean_b) < 0.5
    assert not by["snr_db"].separates and not by["snr_unweighted_db"].gated


def test_a_step_under_the_cue_floor_counts_for_nothing(side_a) -> None:
    """0.2 LU on every dialogue (a perfect separator: same dialogues, shifted) is under the
    0.5 LU floor and fails nothing; 1.5 LU fails, by name."""

    def shifted(lu: float) -> list:
        return [
            type(r)(**{**r.to_row(), "category": "PH", "loudness_lufs": r.loudness_lufs + lu})
            for r in side_a
        ]

    pairs, verdict = audit(side_a + shifted(0.2), TH)
    loud = next(c for c in pairs[0].cues if c.cue == "loudness_lufs")
    assert abs(loud.d) > 1 and loud.p_value < 0.05  # measured, shown...
    assert verdict.passed, verdict.lines()  # ...but inaudible: no failure, classifier at chance
    _, verdict = audit(side_a + shifted(1.5), TH)
    assert {"loudness_lufs", CLASSIFIER} <= set(verdict.failing_cues())


def test_planted_floor_step_measures_six_db(side_a) -> None:
    """The floor cue moves by the planted 6 dB (not merely 'some' difference)."""
    planted = category("PH", N, Plant(floor_db=6.0), prefix="a")  # same dialogues, +6 dB floor
    pairs = compare_all(side_a + planted, min_per_side=TH.min_per_side)
    floor = next(c for c in pairs[0].cues if c.cue == "floor_dbfs")
    assert floor.mean_b - floor.mean_a == pytest.approx(6.0, abs=0.3)


def test_too_few_dialogues_is_said_and_gates_nothing(side_a) -> None:
    few = category("PH", 3, Plant(lowpass_hz=3000), prefix="b")
    pairs, verdict = audit(side_a + few, TH)
    (pair,) = pairs
    assert not pair.judged
    assert "too few dialogues to judge (PH 3 < 8)" in pair.note
    assert verdict.passed and verdict.unjudged == (f"en HH-PH: {pair.note}",)
    assert "nothing judged" in verdict.headline()  # never "passes" when nothing was judged


def test_pairs_per_language_and_conversation_cues(side_a) -> None:
    """Pairs never mix languages; between HH and HM the conversation's cues are not gated."""
    zh = category("PH", N, prefix="z", language="zh") + category("HH", N, prefix="y", language="zh")
    hm = [type(r)(**{**r.to_row(), "category": "HM"}) for r in category("X", N, prefix="c")]
    pairs = compare_all(side_a + hm + zh, min_per_side=TH.min_per_side)
    assert [(p.language, p.pair) for p in pairs] == [("en", "HH-HM"), ("zh", "HH-PH")]
    gated = {c.cue: c.gated for c in pairs[0].cues}
    assert not gated["turns_per_min"] and not gated["n_turns"] and gated["duration_s"]
    # every cue counts wherever PH takes part, but the voices' own
    voice = {c.name for c in CUES if c.voice}
    assert {"bandwidth_speech_hz", "snr_unweighted_db", "peak_dbfs"} <= voice
    assert {n for n in voice if n.startswith("dnsmos_")} == {
        "dnsmos_ovrl",
        "dnsmos_sig",
        "dnsmos_bak",
    }
    assert all(c.gated != CUE_BY_NAME[c.cue].voice for c in pairs[1].cues)


def test_per_cue_threshold_is_applied(side_a) -> None:
    planted = category("PH", N, Plant(floor_db=6.0), prefix="b")
    loose = CueThresholds(per_cue={"floor_dbfs": 1e6, "snr_db": 1e6})
    _, strict = audit(side_a + planted, TH)
    _, verdict = audit(side_a + planted, loose)
    reasons = {f.cue: f.reason for f in verdict.failures}
    assert "d=" in {f.cue: f.reason for f in strict.failures}["floor_dbfs"]
    # the per-cue limit silences the d check; a perfect separator still fails
    assert reasons["floor_dbfs"] == "separates the pair perfectly"


# --- the measurement itself, against constructed truth ------------------------------------------


def _measure(x: np.ndarray, turns: list[TurnSpan]):
    return measure_dialogue(
        x,
        SR,
        turns,
        dialogue_id="t",
        corpus="c",
        category="HH",
        language="en",
        speakers=("A", "B"),
    )


def test_cues_of_a_constructed_dialogue_match_its_construction() -> None:
    rng = np.random.default_rng(3)
    n = 4 * SR
    x = room_tone(rng, n, -50.0)
    turns = [
        TurnSpan("A", "turn", 0.25, 1.5, "hello there"),
        TurnSpan("B", "turn", 1.2, 3.6, "你好"),
    ]
    for t in turns:
        a, b = int(t.start_s * SR), int(t.end_s * SR)
        x[a:b] += 0.05 * rng.standard_normal(b - a)
    c = _measure(x.astype(np.float32), turns)
    assert c.lead_in_s == pytest.approx(0.25)
    assert c.tail_s == pytest.approx(0.4)
    assert c.gap_min_ms == pytest.approx(-300.0)
    assert c.overlaps_per_min == pytest.approx(1 / (4 / 60))
    assert c.speech_rate_cps == pytest.approx(12 / 3.35)  # 10 letters + 2 ideographs
    assert c.n_turns == 2 and c.turns_per_min == pytest.approx(30.0)
    assert c.sample_rate == SR and c.duration_s == pytest.approx(4.0)
    untranscribed = _measure(
        x.astype(np.float32), [TurnSpan(t.speaker, t.kind, t.start_s, t.end_s) for t in turns]
    )
    assert math.isnan(untranscribed.speech_rate_cps)  # no words: no rate (not 0)
    # no pause between the turns (they overlap): no floor, no pause spectrum
    assert math.isnan(c.floor_dbfs) and math.isnan(c.bandwidth_pause_hz)


def test_floor_bandwidth_and_tilt_of_known_noise() -> None:
    """White noise band-limited at 2 kHz: speech bandwidth ~2 kHz; the floor's level and its
    tilt (pink: about -3 dB/oct) are what was made."""
    from scipy import signal

    rng = np.random.default_rng(5)
    n = 6 * SR
    spec = np.fft.rfft(rng.standard_normal(n))
    f = np.fft.rfftfreq(n, 1 / SR)
    spec[1:] /= np.sqrt(f[1:])  # power ~ 1/f: pink, -3 dB per octave
    pink = np.fft.irfft(spec, n)
    pink *= 10 ** (-55 / 20) / np.sqrt(np.mean(pink**2))
    x = pink.copy()
    sos = signal.butter(12, 2000, fs=SR, output="sos")
    turns = [TurnSpan("A", "turn", 0.5, 2.5), TurnSpan("B", "turn", 3.5, 5.5)]
    for t in turns:
        a, b = int(t.start_s * SR), int(t.end_s * SR)
        x[a:b] += signal.sosfilt(sos, 0.1 * rng.standard_normal(b - a))
    c = _measure(x.astype(np.float32), turns)
    assert 1800 < c.bandwidth_speech_hz < 2300
    pause = pink[int(2.53 * SR) : int(3.47 * SR)]  # the one pause, margins off
    assert c.floor_dbfs == pytest.approx(10 * np.log10(np.mean(pause**2)), abs=0.05)
    assert c.pause_tilt_db_oct == pytest.approx(-3.0, abs=0.5)
    assert c.bandwidth_pause_hz > 6000  # pink noise keeps energy to the top


def test_one_dialogue_with_planted_plant_differs_only_where_planted() -> None:
    x0, t0 = dialogue("p-1", "HH")
    x1, t1 = dialogue("p-1", "HH", Plant(floor_db=6.0))
    assert t0 == t1
    c0, c1 = _measure(x0, t0), _measure(x1, t1)
    assert c1.floor_dbfs - c0.floor_dbfs == pytest.approx(6.0, abs=0.05)
    assert c1.lead_in_s == c0.lead_in_s and c1.gap_mean_ms == c0.gap_mean_ms


def test_audit_is_the_same_bytes_whatever_the_row_order(side_a, same_b) -> None:
    from duetflow.fairness.table import summary_bytes

    rows = side_a + same_b
    once = summary_bytes(*audit(rows, TH))
    assert summary_bytes(*audit(rows[::-1], TH)) == once
    assert summary_bytes(*audit(rows, TH)) == once  # seeded: the same draws every time
