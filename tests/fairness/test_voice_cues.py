"""DNSMOS as reported-only voice cues of the audit (issue 29).

The same constructed material under two labels, PH given DNSMOS scores that separate it from
HH perfectly (as a robotic TTS voice would): the audit reports the separation in the cue's
comparison, and the gate, the classifier and the verdict ignore it. ``measure_file`` takes the
scores from the manifest row (NaN where the row has none).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
from cue_signals import SR, category, dialogue

from duetflow.audio.io import write_audio
from duetflow.config.release import CueThresholds
from duetflow.fairness.compare import gated_cues
from duetflow.fairness.cues import CUE_BY_NAME, measure_file
from duetflow.fairness.gate import audit
from duetflow.records.dialogue import DesignFields
from duetflow.records.rows import RenderedDialogueRow, RenderedTurnRow

N = 16
VOICE = ("dnsmos_ovrl", "dnsmos_sig", "dnsmos_bak")


def test_voice_cues_are_declared_and_never_gated() -> None:
    for c in VOICE:
        assert CUE_BY_NAME[c].voice and CUE_BY_NAME[c].unit == "MOS"
    for a, b in (("HH", "HM"), ("HH", "PH"), ("HM", "PH")):
        gated = gated_cues(a, b)
        assert not set(VOICE) & set(gated) and "floor_dbfs" in gated


def test_a_voice_separator_is_reported_but_gates_nothing() -> None:
    hh = category("HH", N, prefix="a")
    ph = category("PH", N, prefix="b")
    hh = [dataclasses.replace(r, dnsmos_ovrl=3.4 + 0.01 * i) for i, r in enumerate(hh)]
    ph = [dataclasses.replace(r, dnsmos_ovrl=2.4 + 0.01 * i) for i, r in enumerate(ph)]
    pairs, verdict = audit(hh + ph, CueThresholds())
    (pair,) = pairs
    ovrl = next(c for c in pair.cues if c.cue == "dnsmos_ovrl")
    assert ovrl.separates and not ovrl.gated and ovrl.d > 5  # reported
    assert ovrl.n_a == ovrl.n_b == N
    sig = next(c for c in pair.cues if c.cue == "dnsmos_sig")
    assert sig.n_a == 0 and math.isnan(sig.d)  # not scored: NaN, left out
    assert pair.classifier is not None and "dnsmos_ovrl" not in pair.classifier.cues
    assert verdict.passed, verdict.lines()


def _row(path: Path, dur: float, **dnsmos: float | None) -> RenderedDialogueRow:
    return RenderedDialogueRow(
        dialogue_id="c-0", source_id="c-0", corpus="constructed", category="HH", language="en",
        topic="t", speaker_a="A", speaker_b="B", design=DesignFields(), audio_path=path.name,
        sha256="0" * 64, duration_s=dur, sample_rate=SR, num_channels=1, n_turns=4,
        loudness_lufs_a=-23.0, loudness_lufs_b=-23.0, gain_db_a=0.0, gain_db_b=0.0,
        gap_ms_min=None, gap_ms_max=None, provenance="{}", licence="CC-BY-4.0",
        source_sample_rate=SR, **dnsmos,  # type: ignore[arg-type]
    )  # fmt: skip


@pytest.mark.parametrize("scored", [True, False])
def test_measure_file_reads_the_scores_from_the_row(tmp_path: Path, scored: bool) -> None:
    x, turns = dialogue("c-0", "HH")
    path = tmp_path / "c-0.flac"
    write_audio(path, x, SR)
    rows = [
        RenderedTurnRow("c-0", i, t.speaker, t.kind, t.start_s, t.end_s, t.start_s, t.end_s, "")
        for i, t in enumerate(turns)
    ]
    values = {"dnsmos_ovrl": 3.1, "dnsmos_sig": 3.5, "dnsmos_bak": 4.0} if scored else {}
    cues = measure_file(_row(path, len(x) / SR, **values), rows, path)
    for c in VOICE:
        got = cues.value(c)
        assert got == values[c] if scored else math.isnan(got)
    assert np.isfinite(cues.floor_dbfs)  # the measured cues are still measured
