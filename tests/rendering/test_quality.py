"""DNSMOS of rendered dialogues (issue 29): the manifest columns, the filter, determinism.

Real models from the installed ``speechmos`` wheel, real speech (eSpeak NG), real rendering
(``process_dialogues``). Two constructed HH dialogues of the same eight sentences on two
channels: one clean, one with heavy white noise on the speech (its pauses stay quiet, so the
renderer still finds the turns). Measured once on this build: clean OVRL ≈ 2.9 (eSpeak NG is a
robotic voice), noisy ≈ 1.7; the filter's floor of 2.4 lies half a MOS from each.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

pytest.importorskip("onnxruntime", reason="the quality extra is not installed")
pytest.importorskip("librosa", reason="the quality extra is not installed")

from duetflow.audio import dnsmos
from duetflow.audio.dnsmos import WINDOW_S, get_model, score_clip
from duetflow.audio.io import read_frames, resample
from duetflow.config import build_config
from duetflow.errors import ConfigError
from duetflow.pipeline.process import process_dialogues
from duetflow.records.dialogue import Category, Dialogue, MultichannelSource, Speaker, Stage, Turn
from duetflow.records.manifest import DIALOGUES, REJECTIONS, TURNS, iter_records, read_rejections
from duetflow.records.rows import DNSMOS_COLUMNS, RenderedDialogueRow, RenderedTurnRow
from duetflow.rejections import explain
from duetflow.release.workdir_checks import validate_workdir
from duetflow.rendering.quality import LOW_OVRL, score_dialogue, solo_spans
from duetflow.tts.espeak import speak

SR = 16000
TEXTS = [
    "They closed the old bridge for repairs, so the buses take the long way now.",
    "Really? I had no idea, when did that happen?",
    "Last week. Remember to take the shopping list from the kitchen table.",
    "I always forget it, thanks for reminding me about that.",
    "The weather should be better tomorrow, so we could walk to the market.",
    "That sounds good, I would like to buy some fresh bread and cheese.",
    "Let us meet at nine then, near the fountain in the square.",
    "Perfect, see you there, and do not forget your umbrella just in case.",
]
FLOOR = 2.4  # filters.min_dnsmos_ovrl for HH


@pytest.fixture(scope="module")
def clips() -> list[np.ndarray]:
    wa, ra = speak(TEXTS[0::2], "en-us+m3", 165, 50)
    wb, rb = speak(TEXTS[1::2], "en-us+f3", 165, 50)
    out = []
    for i in range(len(TEXTS)):
        w, r = (wa, ra) if i % 2 == 0 else (wb, rb)
        x = resample(np.asarray(w[i // 2], np.float32), r, SR)
        out.append((x / np.max(np.abs(x)) * 0.3).astype(np.float32))
    return out


def _dialogue(root: Path, name: str, clips: list[np.ndarray], noisy: bool) -> Dialogue:
    """Speaker A on channel 0, B on channel 1, 0.6 s pauses; ``noisy``: white noise at about
    6 dB SNR on the speech only."""
    total = sum(len(c) for c in clips) / SR + 0.6 * len(clips) + 1.0
    tracks = np.zeros((int(total * SR), 2), np.float32)
    turns, t = [], 0.5
    for i, c in enumerate(clips):
        a = int(t * SR)
        tracks[a : a + len(c), i % 2] += c
        turns.append(Turn("AB"[i % 2], round(t, 3), round(t + len(c) / SR, 3), TEXTS[i]))
        t += len(c) / SR + 0.6
    rng = np.random.default_rng(0)
    tracks += rng.normal(0, 1e-3, tracks.shape).astype(np.float32)  # -60 dBFS floor
    if noisy:
        speech = (np.abs(tracks) > 0.004).astype(np.float32)
        tracks += speech * rng.normal(0, 0.03, tracks.shape).astype(np.float32)
    path = root / f"{name}.wav"
    sf.write(path, np.clip(tracks, -1, 1), SR, subtype="PCM_16")
    did = f"test__{name}"
    return Dialogue(
        id=did,
        corpus="test",
        source_id=did,
        category=Category.HH,
        language="en",
        topic="tests",
        speakers=(Speaker("A"), Speaker("B")),
        turns=tuple(turns),
        source=MultichannelSource(str(path), {"A": 0, "B": 1}),
        duration_s=total,
    )


CONFIG = {"window": {"min_s": 10, "max_s": 60}, "quality": {"dnsmos": True}}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, clips: list[np.ndarray]) -> Path:
    """The two dialogues processed with the filter on: the clean one kept, the noisy one not."""
    root = tmp_path_factory.mktemp("dnsmos")
    ds = [_dialogue(root, "clean", clips, False), _dialogue(root, "noisy", clips, True)]
    cfg = build_config({**CONFIG, "filters": {"min_dnsmos_ovrl": {"HH": FLOOR}}})
    res = process_dialogues(ds, cfg, root / "out")
    assert res.units == len(res.dialogues) + len(res.rejections) == 2  # inputs = kept + rejected
    return root


def _rows(out: Path) -> list[RenderedDialogueRow]:
    return list(iter_records(out / DIALOGUES, RenderedDialogueRow))


def test_columns_are_filled_and_validated(run: Path) -> None:
    out = run / "out"
    (row,) = _rows(out)
    assert row.dialogue_id.startswith("test__clean")
    values = {c: getattr(row, c) for c in DNSMOS_COLUMNS}
    assert all(v is not None and 1.0 <= v <= 5.0 for v in values.values()), values
    assert row.dnsmos_ovrl is not None and row.dnsmos_ovrl > FLOOR + 0.2
    validate_workdir(out, build_config({**CONFIG, "filters": {"min_dnsmos_ovrl": FLOOR}}))


def test_per_speaker_scores_equal_a_second_route(run: Path) -> None:
    """A speaker's score is DNSMOS of its solo speech: cut here from the whole file read in
    memory by the turn rows (not streamed, not by the module's span arithmetic) and scored
    in 9.01 s windows, it gives the same numbers."""
    out = run / "out"
    (row,) = _rows(out)
    turns = list(iter_records(out / TURNS, RenderedTurnRow))
    x, sr = read_frames(out / row.audio_path)
    assert sr == SR
    x = x.mean(axis=1) if x.ndim == 2 else x
    for who, col in ((row.speaker_a, "dnsmos_ovrl_a"), (row.speaker_b, "dnsmos_ovrl_b")):
        mine = [t for t in turns if t.speaker == who]
        other = [t for t in turns if t.speaker != who]
        keep = np.zeros(len(x), bool)
        for t in mine:
            keep[int(round(t.start_s * SR)) : int(round(t.end_s * SR))] = True
        for t in other:
            keep[int(round(t.start_s * SR)) : int(round(t.end_s * SR))] = False
        solo = x[keep]
        assert len(solo) == sum(b - a for a, b in solo_spans(turns, who))
        windows = int(len(solo) // (WINDOW_S * SR))
        ref = score_clip(solo[: int(windows * WINDOW_S * SR)], hop_s=WINDOW_S)
        assert abs(ref.ovrl - getattr(row, col)) < 2e-3, (who, ref, getattr(row, col))


def test_the_filter_rejects_the_noisy_dialogue_with_its_reason(run: Path) -> None:
    out = run / "out"
    (rej,) = list(read_rejections(out / REJECTIONS))
    assert rej.item_id.startswith("test__noisy") and rej.stage == Stage.FILTER
    assert rej.reason == LOW_OVRL
    detail = json.loads(rej.detail)
    assert detail["min_dnsmos_ovrl"] == FLOOR and detail["category"] == "HH"
    assert detail["dnsmos_ovrl"] < FLOOR - 0.2 and detail["window"] is not None
    assert "filters.min_dnsmos_ovrl" in explain(rej).why
    # its audio went with it: the work directory holds only what its tables list
    (row,) = _rows(out)
    assert sorted(p.name for p in (out / "audio").iterdir()) == [Path(row.audio_path).name]


def test_two_runs_are_byte_identical(run: Path, clips: list[np.ndarray]) -> None:
    """Scores, filter and all: a second run writes the same bytes (tables, audio, stats)."""
    cfg = build_config({**CONFIG, "filters": {"min_dnsmos_ovrl": {"HH": FLOOR}}})
    ds = [_dialogue(run, "clean", clips, False), _dialogue(run, "noisy", clips, True)]
    process_dialogues(ds, cfg, run / "again")
    first, again = run / "out", run / "again"
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert len(files) >= 5
    assert files == sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file())
    for f in files:
        assert (first / f).read_bytes() == (again / f).read_bytes(), f
    # the noisy one scored lower, on OVRL and on the background above all
    (row,) = _rows(first)
    (rej,) = list(read_rejections(first / REJECTIONS))
    noisy = json.loads(rej.detail)
    assert row.dnsmos_ovrl is not None and row.dnsmos_bak is not None
    assert row.dnsmos_ovrl > noisy["dnsmos_ovrl"] + 0.5
    assert row.dnsmos_bak > noisy["dnsmos_bak"] + 0.5


def test_off_leaves_the_columns_null(run: Path, clips: list[np.ndarray]) -> None:
    cfg = build_config({"window": {"min_s": 10, "max_s": 60}})
    process_dialogues([_dialogue(run, "clean", clips, False)], cfg, run / "off")
    (row,) = _rows(run / "off")
    assert all(getattr(row, c) is None for c in DNSMOS_COLUMNS)
    validate_workdir(run / "off", cfg)


def test_a_speaker_without_solo_speech_scores_null(run: Path) -> None:
    out = run / "out"
    (row,) = _rows(out)
    turns = [t for t in iter_records(out / TURNS, RenderedTurnRow) if t.speaker == row.speaker_a]
    whole, a, b = score_dialogue(out / row.audio_path, turns, (row.speaker_a, row.speaker_b))
    assert a is not None and b is None and whole.windows >= 3


def test_missing_extra_is_a_clear_config_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    get_model()
    monkeypatch.setattr(dnsmos, "_MODEL", None)
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import fails as if not installed
    with pytest.raises(ConfigError, match=r"pip install 'duetflow\[quality\]'"):
        process_dialogues([], build_config(CONFIG), tmp_path / "never")
    with pytest.raises(ConfigError, match=r"needs DNSMOS scores: set quality\.dnsmos: on"):
        build_config({"filters": {"min_dnsmos_ovrl": 3.0}})


def test_solo_spans_leave_out_the_other_speakers_overlaps() -> None:
    """Arithmetic by hand: A 0-2 s, B 1.5-3 s, A's backchannel 2.5-2.7 s."""
    rows = [
        RenderedTurnRow("d", 0, "A", "turn", 0.0, 2.0, 0.0, 2.0, ""),
        RenderedTurnRow("d", 1, "B", "turn", 1.5, 3.0, 1.5, 3.0, ""),
        RenderedTurnRow("d", 2, "A", "backchannel", 2.5, 2.7, 2.5, 2.7, ""),
    ]
    s = SR  # samples per second
    assert solo_spans(rows, "A") == [(0, int(1.5 * s))]
    assert solo_spans(rows, "B") == [(2 * s, int(2.5 * s)), (int(2.7 * s), 3 * s)]
    assert solo_spans(rows, "C") == []
