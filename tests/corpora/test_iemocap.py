"""IEMOCAP adapter on generated samples and on each quirk of the full-release layout."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from duetflow.audio.io import write_audio
from duetflow.demo.voice import FEMALE, MALE, speech
from duetflow.records.dialogue import Category, MixedMonoSource, MultichannelSource, TurnKind

from .helpers import ms, scan, scan_against_truth, timeline, truth_timeline

CORPUS = "iemocap"


#: the documented scenario table (docs/topics.md) for the scenarios the samples use; the
#: scripted sessions are plays whose content the release does not describe: unmapped
SCENARIO_TOPIC = {
    "impro01": "ordinary_life",
    "impro02": "relationship",
    "impro05": "tourism",
    "script01": "other",
}


def test_samples_match_truth(sample_root: Path) -> None:
    kept, expected = scan_against_truth(sample_root, CORPUS, sample_root / "IEMOCAP_full_release")
    for did, d in kept.items():
        e = expected[did]
        assert d.source_id == e["source_id"] and d.category is Category.HH
        scenario = e["topic"][:7] if e["topic"].startswith("impro") else e["topic"][:8]
        assert d.language == "en" and d.design.source_topic == scenario
        assert d.topic == SCENARIO_TOPIC[scenario]
        # speaker = session + utterance gender letter, never the dialogue's MoCap letter
        assert [s.id for s in d.speakers] == e["speakers"]
        assert {s.id[-1] for s in d.speakers} == {"F", "M"}
        assert all(s.gender == s.id[-1] for s in d.speakers)
        assert len(d.turns) == len(e["turns"])
        assert timeline(d) == truth_timeline(e)  # sorted by time even when lines are not
        assert [round(t.start, 4) for t in d.turns] == [t["start"] for t in e["turns"]]
        for t, te in zip(d.turns, e["turns"], strict=True):
            assert dict(t.labels) == te["labels"]
            assert t.text == te["text"]
            assert t.kind is TurnKind.TURN
        # the channel map comes from energy, whatever the file's channel order
        assert isinstance(d.source, MultichannelSource)
        assert dict(d.source.channels) == e["channels"]
        assert d.provenance["skipped_lines"] == e["skipped_lines"]
        assert ms(d.duration_s) == ms(e["duration_s"])


def test_quirks_present_in_samples(sample_root: Path) -> None:
    kept, _, _ = scan(CORPUS, sample_root / "IEMOCAP_full_release")
    ids = set(kept)
    assert {"iemocap__Ses01M_impro05a", "iemocap__Ses01M_script01_1b"} <= ids  # irregular names
    swapped = kept["iemocap__Ses01M_impro05a"]
    assert isinstance(swapped.source, MultichannelSource)
    assert dict(swapped.source.channels) == {"Ses01_F": 1, "Ses01_M": 0}
    xx = [t for d in kept.values() for t in d.turns if t.labels.get("unsegmented") == "1"]
    assert len(xx) == 1 and "XX" in xx[0].labels["utterance_id"]
    assert "emotion" not in xx[0].labels  # XX lines have no evaluation
    emotions = {t.labels.get("emotion") for d in kept.values() for t in d.turns}
    assert {"neu"} < emotions
    raw = (
        sample_root / "IEMOCAP_full_release/Session1/dialog/transcriptions/Ses01M_impro05a.txt"
    ).read_bytes()
    assert b"\r\n" in raw  # CRLF transcripts
    starts = [float(line.split(b"[")[1].split(b"-")[0]) for line in raw.splitlines() if line]
    assert starts != sorted(starts)  # lines out of temporal order in the file


# --- hand-built dialogues -----------------------------------------------------------------------

SR = 16000


def _write(
    root: Path,
    name: str,
    lines: list[str],
    audio: np.ndarray | None,
    *,
    encoding: str = "utf-8",
) -> None:
    dialog = root / "Session2" / "dialog"
    (dialog / "transcriptions").mkdir(parents=True, exist_ok=True)
    (dialog / "transcriptions" / f"{name}.txt").write_bytes(
        "\r\n".join(lines).encode(encoding) + b"\r\n"
    )
    if audio is not None:
        write_audio(dialog / "wav" / f"{name}.wav", audio, SR)


def _stereo(separate: bool, seconds: float = 6.0) -> np.ndarray:
    rng = np.random.default_rng(0)
    n = int(6.0 * SR)
    f = np.zeros(n, dtype=np.float32)
    m = np.zeros(n, dtype=np.float32)
    f[int(0.5 * SR) : int(0.5 * SR) + int(2.0 * SR)] = speech(2.0, SR, FEMALE, rng)
    m[int(3.0 * SR) : int(3.0 * SR) + int(2.0 * SR)] = speech(2.0, SR, MALE, rng)
    keep = int(seconds * SR)
    if separate:
        return np.stack([m + 0.1 * f, f + 0.1 * m], axis=1)[:keep]  # M on channel 0 here
    mix = f + m
    return np.stack([mix, mix], axis=1)[:keep]


LINES = [
    "Ses02M_impro09_F000 [000.5000-002.5000]: Hello there.",
    "M: [BREATHING]",
    "Ses02M_impro09_M000 [003.0000-005.0000]: Hi [LAUGHTER].",
]


def test_channel_map_by_energy_and_mixed_fallback(tmp_path: Path) -> None:
    _write(tmp_path, "Ses02M_impro09", LINES, _stereo(True))
    kept, _, _ = scan(CORPUS, tmp_path)
    d = kept["iemocap__Ses02M_impro09"]
    assert isinstance(d.source, MultichannelSource)
    assert dict(d.source.channels) == {"Ses02_F": 1, "Ses02_M": 0}
    assert d.provenance["channel_map"] == "energy"
    assert d.turns[1].labels["tags"] == "[LAUGHTER]" and d.turns[1].kind is TurnKind.TURN
    assert d.provenance["emo_evaluation"] is None and d.provenance["skipped_lines"] == 1

    other = tmp_path / "b"
    _write(other, "Ses02M_impro09", LINES, _stereo(False))
    kept, _, _ = scan(CORPUS, other)
    d = kept["iemocap__Ses02M_impro09"]
    assert d.source == MixedMonoSource(d.source.path, None)
    assert d.provenance["channel_map"] == "mixed"


def test_legacy_encoding_fallback_and_strict_utf8(tmp_path: Path) -> None:
    lines = [*LINES[:1], "Ses02M_impro09_M000 [003.0000-005.0000]: Caf\u00e9."]
    _write(tmp_path, "Ses02M_impro09", lines, _stereo(True), encoding="cp1252")
    kept, _, _ = scan(CORPUS, tmp_path)
    assert kept["iemocap__Ses02M_impro09"].turns[1].text == "Caf\u00e9."
    _, rejected, _ = scan(CORPUS, tmp_path, {"encodings": []})
    r = rejected["iemocap__Ses02M_impro09"]
    assert r.reason == "bad_encoding" and "byte" in r.detail


def test_orphans_and_timing(tmp_path: Path) -> None:
    _write(tmp_path, "Ses02M_impro09", LINES, _stereo(True, seconds=4.0))  # M ends after audio
    write_audio(tmp_path / "Session2/dialog/wav/Ses02F_impro01.wav", _stereo(True), SR)
    _write(
        tmp_path, "Ses02F_impro02", ["Ses02F_impro02_F000 [001.0000-002.0000]: One."], _stereo(True)
    )
    _write(tmp_path, "Ses02F_impro03", ["Ses02F_impro03_F000 [1.0 to 2.0]: x"], _stereo(True))
    kept, rejected, n = scan(CORPUS, tmp_path)
    assert n == 4 and not kept
    assert {k: r.reason for k, r in rejected.items()} == {
        "iemocap__Ses02M_impro09": "bad_timing",
        "iemocap__Ses02F_impro01": "missing_annotation",
        "iemocap__Ses02F_impro02": "speaker_count",
        "iemocap__Ses02F_impro03": "malformed_line",
    }
