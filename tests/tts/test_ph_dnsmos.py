"""The synth stage scores PH dialogues with DNSMOS and applies PH's floor (issue 29).

Real models (``speechmos``), real eSpeak NG synthesis of one sample script. Without a floor the
PH dialogue is kept with all twelve scores; with PH's floor at 4.9 (eSpeak NG scores about 3)
it is a ``filter`` rejection ``dnsmos_ovrl_low`` and its audio is gone; a floor for HH only
leaves PH alone.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tts_helpers import tts_config

pytest.importorskip("onnxruntime", reason="the quality extra is not installed")
pytest.importorskip("librosa", reason="the quality extra is not installed")

from duetflow.pipeline.commands import synthesize
from duetflow.records.dialogue import Stage
from duetflow.records.manifest import iter_records, read_rejections
from duetflow.records.rows import DNSMOS_COLUMNS, RenderedDialogueRow
from duetflow.release.workdir_checks import validate_workdir


def _run(voices: Path, scripts: Path, out: Path, floor: dict[str, float] | None):
    cfg = tts_config({"quality": {"dnsmos": True}, "filters": {"min_dnsmos_ovrl": floor}})
    rep = synthesize(scripts / "en-kitchen.json", voices, cfg, out, qa=False)
    return cfg, rep


def test_ph_is_scored_and_filtered(
    voices_workdir: Path, sample_scripts: Path, tmp_path: Path
) -> None:
    cfg, _ = _run(voices_workdir, sample_scripts, tmp_path / "kept", {"HH": 4.9})
    (row,) = list(iter_records(tmp_path / "kept" / "dialogues.parquet", RenderedDialogueRow))
    assert row.category == "PH"
    assert all(1.0 <= getattr(row, c) <= 5.0 for c in DNSMOS_COLUMNS), row
    validate_workdir(tmp_path / "kept", cfg)

    _run(voices_workdir, sample_scripts, tmp_path / "low", {"PH": 4.9})
    out = tmp_path / "low"
    assert list(iter_records(out / "dialogues.parquet", RenderedDialogueRow)) == []
    (rej,) = list(read_rejections(out / "rejections.parquet"))
    assert (rej.stage, rej.reason, rej.corpus) == (Stage.FILTER, "dnsmos_ovrl_low", "ph")
    detail = json.loads(rej.detail)
    assert detail["min_dnsmos_ovrl"] == 4.9 and detail["dnsmos_ovrl"] == row.dnsmos_ovrl
    assert not list(out.rglob("*.flac"))  # its audio went with it
