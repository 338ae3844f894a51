"""The true-peak ceiling's cues (issue 25): what the pipeline's ceiling does is gated, the
voices' crest factor is not.

``peak_dbfs`` is a voice cue (eSpeak NG's glottal pulses peak 2-3 dB higher at one loudness),
but the ceiling the renderer imposes (``render.true_peak_ceiling_dbtp``: the whole file turned
down so its true peak stays under it) is the pipeline's. Two gated cues read it:
``ceiling_margin_db`` (the ceiling less the file's true peak, capped at 1 dB: a file at the
ceiling reads ~0.05, one over it negative) and ``speech_level_lu`` (the louder speaker's loudness
less the target: a file turned down by a ceiling, whichever, reads the cut). Constructed
dialogues (tests/fairness/cue_signals.py), every speaker at -23 LUFS.
"""

from __future__ import annotations

import pytest
from cue_signals import Plant, category

from duetflow.config.release import CueThresholds
from duetflow.fairness.cues import CEILING_REACH_DB, CUE_BY_NAME
from duetflow.fairness.gate import CLASSIFIER, audit

N = 16
TH = CueThresholds()
#: the renderer's path: both voices at the loudness target, the file under the -1 dBTP ceiling
RENDERED = Plant(speech_lufs=-23.0, ceiling_dbtp=-1.0)


@pytest.fixture(scope="module")
def side_a():
    return category("HH", N, RENDERED, prefix="ca")


def _by(pair):
    return {c.cue: c for c in pair.cues}


def test_the_ceiling_cues_are_gated_pipeline_cues() -> None:
    for name in ("ceiling_margin_db", "speech_level_lu"):
        cue = CUE_BY_NAME[name]
        assert not cue.voice and not cue.conversation and cue.floor > 0


def test_same_material_through_the_same_ceiling_shows_no_separation(side_a) -> None:
    same = category("PH", N, RENDERED, prefix="cb")
    pairs, verdict = audit(side_a + same, TH)
    assert verdict.passed, verdict.lines()
    by = _by(pairs[0])
    # nothing reached the ceiling: every margin reads the cap
    assert by["ceiling_margin_db"].mean_a == by["ceiling_margin_db"].mean_b == CEILING_REACH_DB
    assert abs(by["speech_level_lu"].mean_a) < 0.2 and abs(by["speech_level_lu"].mean_b) < 0.2


def test_sharper_voice_peaks_under_the_ceiling_are_the_voices(side_a) -> None:
    """Bursts peaking 3-5 dB under the ceiling: the sample peak (a voice cue) separates, the
    ceiling's cues do not, nothing fails."""
    peaky = category("PH", N, Plant(speech_lufs=-23.0, burst_dbfs=-6.0, ceiling_dbtp=-1.0))
    pairs, verdict = audit(side_a + peaky, TH)
    by = _by(pairs[0])
    assert by["peak_dbfs"].separates and not by["peak_dbfs"].gated
    assert by["ceiling_margin_db"].mean_b == CEILING_REACH_DB
    assert not {"ceiling_margin_db", "speech_level_lu"} & set(verdict.failing_cues())


@pytest.mark.parametrize(
    ("plant", "cue", "mean_b"),
    [
        # peaks over the ceiling at the target loudness: every file turned down to it
        (Plant(speech_lufs=-23.0, burst_dbfs=2.0, ceiling_dbtp=-1.0), "ceiling_margin_db", 0.05),
        # the same peaks written without the ceiling, clipped at full scale: over it
        (Plant(speech_lufs=-23.0, burst_dbfs=2.0, clip=True), "ceiling_margin_db", -1.3),
        # a category rendered under another ceiling (-12 dBTP): turned down under the target
        (Plant(speech_lufs=-23.0, ceiling_dbtp=-12.0), "speech_level_lu", -1.2),
    ],
    ids=["limited", "clipped", "other-ceiling"],
)
def test_a_planted_ceiling_difference_is_caught_and_named(
    side_a, plant: Plant, cue: str, mean_b: float
) -> None:
    planted = category("PH", N, plant, prefix="cb")
    pairs, verdict = audit(side_a + planted, TH)
    assert not verdict.passed
    failing = set(verdict.failing_cues())
    assert cue in failing and CLASSIFIER in failing, verdict.lines()
    assert f"en HH-PH: {cue}" in "\n".join(verdict.lines())
    got = _by(pairs[0])[cue]
    assert got.mean_a == pytest.approx(
        CEILING_REACH_DB if cue == "ceiling_margin_db" else 0.0, abs=0.2
    )
    assert got.mean_b == pytest.approx(mean_b, abs=0.5), got


def test_the_margin_is_read_against_the_configured_ceiling() -> None:
    """A file turned down to a -3 dBTP ceiling is at the ceiling when the render section says
    -3 (margin ~0.05) and reads the cap when it says -1 (2 dB under it)."""
    from cue_signals import SR, dialogue

    from duetflow.fairness.cues import Levels, measure_dialogue

    x, turns = dialogue("lv-0", "HH", Plant(speech_lufs=-23.0, burst_dbfs=2.0, ceiling_dbtp=-3.0))
    kw = {"dialogue_id": "lv-0", "corpus": "c", "category": "HH", "language": "en"}
    at = measure_dialogue(x, SR, turns, speakers=("A", "B"), levels=Levels(-3.0, -23.0), **kw)
    under = measure_dialogue(x, SR, turns, speakers=("A", "B"), **kw)
    assert at.ceiling_margin_db == pytest.approx(0.05, abs=0.03)
    assert under.ceiling_margin_db == CEILING_REACH_DB
    assert at.speech_level_lu == under.speech_level_lu < -1.0


def test_a_cue_table_written_before_the_ceiling_cues_reads_them_as_nan(side_a, tmp_path) -> None:
    """A release's ``cues.parquet`` of an earlier version (no ceiling columns) is read back with
    those cues NaN (left out of the comparison); a table without its id columns is refused."""
    import math

    import pyarrow.parquet as pq

    from duetflow.errors import ManifestError
    from duetflow.fairness.table import read_cues, write_cues

    path = tmp_path / "cues.parquet"
    write_cues(path, side_a[:3])
    old = pq.read_table(path).drop(["ceiling_margin_db", "speech_level_lu"])
    pq.write_table(old, path)
    back = list(read_cues(path))
    assert [r.dialogue_id for r in back] == [r.dialogue_id for r in side_a[:3]]
    assert all(math.isnan(r.ceiling_margin_db) and math.isnan(r.speech_level_lu) for r in back)
    assert [r.peak_dbfs for r in back] == [r.peak_dbfs for r in side_a[:3]]
    pq.write_table(old.drop(["category"]), path)
    with pytest.raises(ManifestError, match="missing category"):
        list(read_cues(path))
