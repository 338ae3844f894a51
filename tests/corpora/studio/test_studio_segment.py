"""Turn detection against the generator's ground truth (issue 4 acceptance) and its parts."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from duetflow.audio.io import read_frames, resample
from duetflow.audio.vad import VadParams, detect_speech
from duetflow.config import SegmentConfig
from duetflow.corpora.studio import StudioAdapter, load_sidecar
from duetflow.corpora.studio.segment import detect_turns, score_turns
from duetflow.demo.studio import CROSSTALK_DB
from duetflow.demo.voice import FEMALE, MALE, db_to_amp, room_tone, speech
from duetflow.records.dialogue import Dialogue, Rejection, Turn
from studio_helpers import NO_STATE

SR = 16000


def _truth(session: dict[str, Any]) -> list[Turn]:
    return [Turn(t["speaker"], t["start"], t["end"]) for t in session["turns"]]


def _dialogues(root: Path) -> dict[str, Dialogue]:
    out: dict[str, Dialogue] = {}
    for item in StudioAdapter(root, NO_STATE).scan():
        if isinstance(item, Dialogue):
            out[item.source_id] = item
    return out


@pytest.mark.parametrize("layout", ["tracks", "stereo"])
def test_acceptance_boundaries_and_f1_at_minus_20_db_crosstalk(
    studio_samples: tuple[Path, dict[str, Any]], layout: str
) -> None:
    root, truth = studio_samples
    dialogues = _dialogues(root)
    sessions = [
        sid
        for sid, t in truth.items()
        if t["layout"] == layout and t["turn_source"] == "audio" and t["expected"] == "kept"
    ]
    assert sessions, f"the generator wrote no {layout} session with turns from audio"
    errors: list[float] = []
    for sid in sessions:
        assert truth[sid]["crosstalk_db"] == CROSSTALK_DB == -20.0
        d = dialogues[sid]
        assert d.provenance["turn_source"] == "vad"
        score = score_turns(_truth(truth[sid]), d.turns)
        assert score.f1 >= 0.95, (sid, score)
        errors.extend(score.boundary_errors_s)
    assert float(np.median(errors)) <= 0.030


def _two_mics(crosstalk_db: float, seed: int = 3) -> tuple[dict[str, np.ndarray], list[Turn]]:
    """Two mics hearing each other at ``crosstalk_db``; A and B alternate, with one overlap."""
    rng = np.random.default_rng(seed)
    n = 8 * SR
    own = {"A": np.zeros(n, np.float32), "B": np.zeros(n, np.float32)}
    plan = [("A", 0.5, 2.5), ("B", 2.7, 4.4), ("A", 4.2, 6.0), ("B", 6.6, 7.4)]
    for spk, a, b in plan:
        voice = MALE if spk == "A" else FEMALE
        x = speech(b - a, SR, voice, rng, level_dbfs=-26.0)
        i = int(round(a * SR))
        own[spk][i : i + len(x)] += x
    leak = db_to_amp(crosstalk_db)
    mics = {
        "A": own["A"] + leak * own["B"] + room_tone(8.0, SR, -60.0, rng),
        "B": own["B"] + leak * own["A"] + room_tone(8.0, SR, -60.0, rng),
    }
    return mics, [Turn(s, a, b) for s, a, b in plan]


def test_crosstalk_is_not_a_turn_and_overlap_keeps_both() -> None:
    mics, truth = _two_mics(CROSSTALK_DB)
    result = detect_turns(mics, SR, SegmentConfig())
    score = score_turns(truth, result.turns)
    assert score.f1 == 1.0, result.turns
    assert score.median_boundary_error_s <= 0.03
    stats = {t.speaker: t for t in result.tracks}
    assert stats["A"].crosstalk_s > 1.0  # B's voice was heard on A's mic and discarded
    assert math.isclose(stats["A"].coupling_db["B"], CROSSTALK_DB, abs_tol=2.0)


def test_plain_vad_per_track_turns_crosstalk_into_turns() -> None:
    """Plain VAD on each mic finds the other speaker's leakage as turns; attribution does not.

    This is what makes the acceptance numbers mean something: the signals are not easy.
    """
    mics, truth = _two_mics(CROSSTALK_DB)
    naive = [
        Turn(spk, a, b) for spk, x in mics.items() for a, b in detect_speech(x, SR, VadParams())
    ]
    assert score_turns(truth, naive).precision < 0.8
    assert score_turns(truth, detect_turns(mics, SR).turns).precision == 1.0


def test_detection_is_deterministic() -> None:
    mics, _ = _two_mics(CROSSTALK_DB)
    assert detect_turns(mics, SR) == detect_turns(dict(mics), SR)


def test_each_track_alone_hears_the_other_speaker() -> None:
    mics, truth = _two_mics(CROSSTALK_DB)
    alone = detect_turns({"A": mics["A"]}, SR, SegmentConfig())
    # one track without its partner has nothing to attribute against: B's speech is found too
    assert score_turns([t for t in truth if t.speaker == "A"], alone.turns).precision < 0.95


def test_line_out_without_leakage_keeps_quiet_speech() -> None:
    """A clean system line-out has coupling -inf: its quiet speech under loud user speech stays."""
    rng = np.random.default_rng(5)
    n = 6 * SR
    user = np.zeros(n, np.float32)
    system = np.zeros(n, np.float32)
    u = speech(3.0, SR, MALE, rng, level_dbfs=-18.0)
    s = speech(2.0, SR, FEMALE, rng, level_dbfs=-40.0)  # 22 dB quieter, overlapping
    user[SR : SR + len(u)] += u
    system[int(2.5 * SR) : int(2.5 * SR) + len(s)] += s
    mic = user + db_to_amp(-20.0) * system + room_tone(6.0, SR, -62.0, rng)
    result = detect_turns({"user": mic, "system": system}, SR, SegmentConfig())
    truth = [Turn("user", 1.0, 4.0), Turn("system", 2.5, 4.5)]
    assert score_turns(truth, result.turns).f1 == 1.0, result.turns


def test_tracks_of_different_rates_and_lengths(studio_samples: tuple[Path, dict[str, Any]]) -> None:
    root, truth = studio_samples
    folder = root / "hm_tracks_001"
    meta = load_sidecar(folder / "session.yaml")
    tracks = {}
    rates = set()
    for sp in meta.speakers:
        x, sr = read_frames(folder / sp.file, mono=True)
        rates.add(sr)
        tracks[sp.id] = (x, sr)
    assert len(rates) == 2  # the line-out is 24 kHz, the mic 16 kHz
    at16 = {k: resample(x, sr, SR) for k, (x, sr) in tracks.items()}
    at16["user"] = at16["user"][: -SR // 2]  # the mic recorder stopped half a second early
    result = detect_turns(at16, SR)
    assert result.duration_s == pytest.approx(max(len(x) for x in at16.values()) / SR)
    assert score_turns(_truth(truth["hm_tracks_001"]), result.turns).f1 >= 0.95


def test_silence_gives_no_turns() -> None:
    rng = np.random.default_rng(0)
    quiet = {"A": room_tone(3.0, SR, -60.0, rng), "B": room_tone(3.0, SR, -60.0, rng)}
    assert detect_turns(quiet, SR).turns == ()
    assert detect_turns({}, SR).turns == ()


def test_score_turns_matching_rules() -> None:
    ref = [Turn("A", 0.0, 1.0), Turn("B", 1.2, 2.0), Turn("A", 2.5, 3.0)]
    det = [Turn("A", 0.02, 0.98), Turn("A", 1.2, 2.0), Turn("A", 2.6, 3.0), Turn("A", 5, 6)]
    s = score_turns(ref, det)
    # B's turn detected as A does not match; the far-away detection is a false positive
    assert (s.matched, s.reference, s.detected) == (2, 3, 4)
    assert s.precision == pytest.approx(0.5)
    assert s.recall == pytest.approx(2 / 3)
    assert sorted(s.boundary_errors_s) == pytest.approx([0.0, 0.02, 0.02, 0.1])
    assert s.median_boundary_error_s == pytest.approx(0.02)
    empty = score_turns([], [])
    assert empty.f1 == 1.0 and math.isinf(empty.median_boundary_error_s)


def test_rejections_and_kept_add_up(studio_samples: tuple[Path, dict[str, Any]]) -> None:
    root, truth = studio_samples
    items = list(StudioAdapter(root, NO_STATE).scan())
    assert len(items) == len(truth)
    for item in items:
        sid = item.item_id.split("__", 1)[1] if isinstance(item, Rejection) else item.source_id
        t = truth[sid]
        if isinstance(item, Rejection):
            assert t["expected"] == "rejected" and item.reason == t["reason"], item
        else:
            assert t["expected"] == "kept", item.id


def test_loud_loudspeaker_does_not_cost_the_line_out_its_turns(tmp_path: Path) -> None:
    """HM tracks with the system's voice at -10 dB in the user's mic.

    The user's mic is then loud whenever the system talks too; the coupling of the user's mic
    into the line-out must be estimated only where the mic is the louder track, or the clean
    line-out loses its speech under every user backchannel (F1 0.8 on this session before).
    """
    from duetflow.demo.studio import write_session

    truth = write_session(
        tmp_path, 1, "tracks_1", category="HM", layout="tracks", language="en", crosstalk_db=-10.0
    )
    [d] = StudioAdapter(tmp_path, NO_STATE).scan()
    assert isinstance(d, Dialogue)
    score = score_turns(_truth(truth), d.turns)
    assert score.f1 == 1.0, score
    assert score.median_boundary_error_s <= 0.03
    coupling = d.provenance["segmentation"]["tracks"]["system"]["coupling_db"]["user"]
    assert coupling < -60  # the line-out hears nothing of the user
