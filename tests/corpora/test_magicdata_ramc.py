"""MagicData-RAMC adapter on generated samples and on each quirk of the release."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from duetflow.audio.io import write_audio
from duetflow.demo.voice import FEMALE, MALE, speech
from duetflow.records.dialogue import Category, MixedMonoSource, MultichannelSource, TurnKind

from .helpers import ms, scan, scan_against_truth, timeline, truth_timeline

CORPUS = "magicdata_ramc"


#: the sample generator's domain labels and their taxonomy topics (docs/topics.md)
DOMAIN_TOPIC = {
    "职业发展": "work",
    "环境治理": "ordinary_life",
    "休闲娱乐": "ordinary_life",
    "饮食": "ordinary_life",
    "交通出行": "tourism",
}


def test_samples_match_truth(sample_root: Path) -> None:
    kept, expected = scan_against_truth(sample_root, CORPUS, sample_root / "MagicData-RAMC")
    for did, d in kept.items():
        e = expected[did]
        assert d.source_id == e["source_id"] and d.category is Category.HH
        assert d.language == "zh" and d.design.source_topic == e["topic"]
        assert d.topic == DOMAIN_TOPIC[e["topic"]]
        assert [s.id for s in d.speakers] == e["speakers"]
        assert {s.id: s.gender for s in d.speakers} == e["genders"]
        assert len(d.turns) == len(e["turns"])
        assert timeline(d) == truth_timeline(e)
        for t, te in zip(d.turns, e["turns"], strict=True):
            assert t.text == te["text"]
            assert dict(t.labels) == te.get("labels", {})
            assert t.kind == TurnKind(te.get("kind", "turn"))
        assert d.provenance["split"] == e["split"]
        assert len(d.provenance["skipped_segments"]) == e["skipped_segments"]
        assert ms(d.duration_s) == ms(e["duration_s"])
        if e["stereo"]:
            assert isinstance(d.source, MultichannelSource)
            assert dict(d.source.channels) == {e["speakers"][0]: 0, e["speakers"][1]: 1}
        else:
            assert d.source == MixedMonoSource(d.source.path, None)


def test_quirks_present_in_samples(sample_root: Path) -> None:
    kept, _, _ = scan(CORPUS, sample_root / "MagicData-RAMC")
    d = kept["magicdata_ramc__CTS-CN-F2F-2019-11-15-100"]
    raw = (
        sample_root / "MagicData-RAMC/MDT2021S003/TXT/CTS-CN-F2F-2019-11-15-100.txt"
    ).read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")  # BOM
    header = d.turns[0]
    assert header.labels == {"collection_header": "1"} and header.text.startswith("爱数智慧")
    nonspeech = [t for t in d.turns if t.kind is TurnKind.NONSPEECH]
    assert [(t.speaker, t.text) for t in nonspeech] == [("G00000000", "[MUSIC]")]
    assert "G00000000" not in {s.id for s in d.speakers}
    unintelligible = [t for t in d.turns if t.labels.get("unintelligible") == "1"]
    assert [t.text for t in unintelligible] == ["[*]"]
    tags = {t.labels.get("tags") for t in d.turns}
    assert {"[+]", "[LAUGHTER]", "[SONANT]", "[MUSIC]", "[*]"} <= tags
    [skipped] = d.provenance["skipped_segments"]
    assert skipped["start"] == skipped["end"] and skipped["reason"] == "bad_timing"
    # speaker A is the first to talk after the header
    assert d.speakers[0].id == next(t.speaker for t in d.turns[1:] if t.kind is TurnKind.TURN)


def test_zero_length_segment_rejects_on_request(sample_root: Path) -> None:
    _, rejected, _ = scan(CORPUS, sample_root / "MagicData-RAMC", {"bad_segments": "reject"})
    r = rejected["magicdata_ramc__CTS-CN-F2F-2019-11-15-100"]
    assert r.reason == "bad_timing" and ":9:" in r.detail


# --- hand-built recordings ----------------------------------------------------------------------

SR = 16000
REC = "CTS-CN-F2F-2019-12-01-7"


def _corpus(root: Path, lines: list[str], audio: np.ndarray, *, encoding: str = "utf-8") -> None:
    mdt = root / "MDT2021S003"
    (mdt / "TXT").mkdir(parents=True, exist_ok=True)
    (mdt / "TXT" / f"{REC}.txt").write_bytes("\n".join(lines).encode(encoding) + b"\n")
    write_audio(mdt / "WAV" / f"{REC}.wav", audio, SR)


def _audio(channels: str) -> np.ndarray:
    rng = np.random.default_rng(1)
    n = 6 * SR
    a = np.zeros(n, dtype=np.float32)
    b = np.zeros(n, dtype=np.float32)
    a[SR : 3 * SR] = speech(2.0, SR, MALE, rng)
    b[int(3.5 * SR) : int(5.5 * SR)] = speech(2.0, SR, FEMALE, rng)
    if channels == "mono":
        return a + b
    if channels == "separate":
        return np.stack([b + 0.05 * a, a + 0.05 * b], axis=1)
    return np.stack([a + b, a + b], axis=1)


LINES = [
    "[ 1.000 , 3.000 ]\tG00000011\t男,普通话\t你好，今天聊什么？",
    "[3.500,5.500]\tG00000012\t女,普通话\t聊聊[LAUGHTER]做饭吧。",
]


def test_stereo_by_energy_else_downmix(tmp_path: Path) -> None:
    _corpus(tmp_path, LINES, _audio("separate"))
    kept, _, _ = scan(CORPUS, tmp_path)
    d = kept[f"magicdata_ramc__{REC}"]
    assert isinstance(d.source, MultichannelSource)
    assert dict(d.source.channels) == {"G00000011": 1, "G00000012": 0}
    assert [t.start for t in d.turns] == [1.0, 3.5]  # spaces inside brackets tolerated
    assert {s.id: s.gender for s in d.speakers} == {"G00000011": "M", "G00000012": "F"}
    assert d.provenance["split"] is None and d.topic == "other"  # no UTTERANCEINFO entry
    assert d.design.source_topic is None

    other = tmp_path / "x"
    _corpus(other, LINES, _audio("same"))
    kept, _, _ = scan(CORPUS, other)
    d = kept[f"magicdata_ramc__{REC}"]
    assert d.source == MixedMonoSource(d.source.path, None)
    assert d.provenance["channel_map"] == "downmix"


def test_gb18030_fallback_and_bad_bytes(tmp_path: Path) -> None:
    _corpus(tmp_path, LINES, _audio("mono"), encoding="gb18030")
    kept, _, _ = scan(CORPUS, tmp_path)
    assert kept[f"magicdata_ramc__{REC}"].turns[0].text == "你好，今天聊什么？"
    (tmp_path / "MDT2021S003/TXT" / f"{REC}.txt").write_bytes(b"[1.0,2.0]\t\xff\xfe\xfd\n")
    _, rejected, _ = scan(CORPUS, tmp_path)
    r = rejected[f"magicdata_ramc__{REC}"]
    assert r.reason == "bad_encoding" and "byte 10" in r.detail


def test_malformed_fields(tmp_path: Path) -> None:
    cases = {
        "[1.0-3.0]\tG00000011\t男,普通话\t时间格式不对": "malformed_line",
        "[1.0,3.0]\tX11\t男,普通话\t说话人不对": "malformed_line",
        "[1.0,3.0]\tG00000011\t男,普通话\t多\t一列": "malformed_line",
        "[1.0,3.0]\tG00000013\t男,普通话\t第三个人": "speaker_count",
        "[1.0,9.0]\tG00000011\t男,普通话\t超过音频": "bad_timing",
    }
    for line, reason in cases.items():
        root = tmp_path / str(abs(hash(line)))
        _corpus(root, [*LINES, line], _audio("mono"))
        _, rejected, n = scan(CORPUS, root)
        assert n == 1 and rejected[f"magicdata_ramc__{REC}"].reason == reason, line


def test_tables_give_pair_topic_split_and_gender(tmp_path: Path) -> None:
    _corpus(tmp_path, LINES, _audio("mono"))
    mdt = tmp_path / "MDT2021S003"
    (mdt / "SPKINFO.txt").write_text(
        "CHANNEL\tSPEAKER_ID\tGENDER\tAGE\tREGION,CITY\tDEVICE\n"
        "C0\tG00000011\tF\tx\ty\tz\nC0\tG00000012\tM\tx\ty\tz\n"
    )
    (mdt / "UTTERANCEINFO.txt").write_text(
        "CHANNEL\tUTTRANS_ID\tSPEAKER_ID-1\tSPEAKER_ID-2\tTOPIC\tVALID(min)\tTOTAL(min)\tEnv\n"
        f"C0\t{REC}.wav\tG00000011\tG00000012\t饮食\t0.1\t0.1\t室内\n"
    )
    (tmp_path / "DataPartition").mkdir()
    (tmp_path / "DataPartition" / "dev.tsv").write_text(f"D:\\RAMC\\WAV\nWAV\\{REC}.wav\t123\n")
    kept, _, _ = scan(CORPUS, tmp_path)
    d = kept[f"magicdata_ramc__{REC}"]
    assert d.topic == "ordinary_life" and d.design.source_topic == "饮食"
    assert d.provenance["split"] == "dev"
    assert {s.id: s.gender for s in d.speakers} == {"G00000011": "F", "G00000012": "M"}
