"""Silent corruption in downloaded corpora, through `duetflow ingest` (issue 15, item 6).

Legacy code pages decode any byte string, so a transcript in the wrong one used to come out as
fluent mojibake; a line pasted twice used to be heard twice. Ground truth here is the text we
encoded ourselves and the turns we wrote.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from chaos_helpers import Cli, intake

from duetflow.audio.io import write_audio
from duetflow.demo.voice import FEMALE, MALE, speech

SR = 16000
pytestmark = pytest.mark.timeout(300)


def _stereo() -> np.ndarray:
    rng = np.random.default_rng(0)
    n = 8 * SR
    f = np.zeros(n, dtype=np.float32)
    m = np.zeros(n, dtype=np.float32)
    f[int(0.5 * SR) : int(2.5 * SR)] = speech(2.0, SR, FEMALE, rng)
    m[int(3.0 * SR) : int(5.0 * SR)] = speech(2.0, SR, MALE, rng)
    return np.stack([m + 0.1 * f, f + 0.1 * m], axis=1)


def _iemocap(root: Path, name: str, text: bytes) -> None:
    dialog = root / "Session1" / "dialog"
    (dialog / "transcriptions").mkdir(parents=True, exist_ok=True)
    (dialog / "transcriptions" / f"{name}.txt").write_bytes(text)
    write_audio(dialog / "wav" / f"{name}.wav", _stereo(), SR)


def _lines(name: str, second: str, extra: tuple[str, ...] = ()) -> list[str]:
    return [
        f"{name}_F000 [000.5000-002.5000]: Hello there, how are you?",
        f"{name}_M000 [003.0000-005.0000]: {second}",
        *extra,
    ]


def _crlf(lines: list[str], encoding: str) -> bytes:
    return "\r\n".join(lines).encode(encoding) + b"\r\n"


def _rows(out: Path) -> dict[str, dict[str, object]]:
    return {r["dialogue_id"]: r for r in pq.read_table(out / "dialogues.parquet").to_pylist()}


def test_iemocap_legacy_text_is_checked_and_recorded(cli: Cli, tmp_path: Path) -> None:
    root = tmp_path / "IEMOCAP_full_release"
    n1, n2, n3 = "Ses01F_impro01", "Ses01F_impro02", "Ses01F_impro03"
    _iemocap(root, n1, _crlf(_lines(n1, "A café, naïvely."), "cp1252"))  # real Latin-1 text
    _iemocap(root, n2, _crlf(_lines(n2, "你好，今天聊什么？我们去吃饭吧。"), "gbk"))  # GBK
    _iemocap(root, n3, _crlf(_lines(n3, "Fine, thanks."), "utf-8"))
    out = tmp_path / "out"
    res = cli("ingest", "--corpus", "iemocap", "--root", root, "--workdir", out)
    assert res.rc == 0, res.text
    got = intake(out)
    assert got.found == 3 and got.reasons == {f"iemocap__{n2}": "bad_encoding"}
    assert "cp1252" in got.details[f"iemocap__{n2}"]  # says what was tried and refused
    rows = _rows(out)
    prov = {k: json.loads(str(v["provenance"])) for k, v in rows.items()}
    assert prov[f"iemocap__{n1}"]["text_encoding"] == "cp1252"
    assert prov[f"iemocap__{n3}"]["text_encoding"] == "utf-8"
    texts = [r["text"] for r in pq.read_table(out / "turns.parquet").to_pylist()]
    assert "A café, naïvely." in texts


def test_ramc_big5_is_not_read_as_gb18030(cli: Cli, tmp_path: Path) -> None:
    root = tmp_path / "MagicData-RAMC"
    mdt = root / "MDT2021S003"
    (mdt / "TXT").mkdir(parents=True)
    rng = np.random.default_rng(1)
    a = np.zeros(6 * SR, dtype=np.float32)
    b = np.zeros(6 * SR, dtype=np.float32)
    a[SR : 3 * SR] = speech(2.0, SR, MALE, rng)
    b[int(3.5 * SR) : int(5.5 * SR)] = speech(2.0, SR, FEMALE, rng)
    texts = {
        "CTS-CN-F2F-2019-12-01-1": ("gb18030", "你好，今天我们聊什么？", "聊聊做饭吧，好不好。"),
        "CTS-CN-F2F-2019-12-01-2": ("big5", "大家好，今天我們聊什麼？", "聊聊做飯吧，這個問題。"),
    }
    for rec, (enc, t1, t2) in texts.items():
        lang = "普通話" if enc == "big5" else "普通话"  # a Big5 file is traditional throughout
        lines = [
            f"[1.000,3.000]\tG00000011\t男,{lang}\t{t1}",
            f"[3.500,5.500]\tG00000012\t女,{lang}\t{t2}",
        ]
        (mdt / "TXT" / f"{rec}.txt").write_bytes("\n".join(lines).encode(enc) + b"\n")
        write_audio(mdt / "WAV" / f"{rec}.wav", a + b, SR)
    out = tmp_path / "out"
    res = cli("ingest", "--corpus", "magicdata_ramc", "--root", root, "--workdir", out)
    assert res.rc == 0, res.text
    got = intake(out)
    assert got.found == 2
    assert got.reasons == {"magicdata_ramc__CTS-CN-F2F-2019-12-01-2": "bad_encoding"}
    prov = json.loads(str(_rows(out)["magicdata_ramc__CTS-CN-F2F-2019-12-01-1"]["provenance"]))
    assert prov["text_encoding"] == "gb18030"
    turn_texts = {r["text"] for r in pq.read_table(out / "turns.parquet").to_pylist()}
    assert "你好，今天我们聊什么？" in turn_texts


def test_iemocap_pasted_line_is_heard_once_and_overlap_rejected(cli: Cli, tmp_path: Path) -> None:
    root = tmp_path / "IEMOCAP_full_release"
    dup, ovl = "Ses01F_impro04", "Ses01F_impro05"
    copy = f"{dup}_M001 [003.0000-005.0000]: Fine, thanks."
    _iemocap(root, dup, _crlf(_lines(dup, "Fine, thanks.", (copy,)), "utf-8"))
    clash = f"{ovl}_M001 [004.0000-006.0000]: Something else."
    _iemocap(root, ovl, _crlf(_lines(ovl, "Fine, thanks.", (clash,)), "utf-8"))
    out = tmp_path / "out"
    res = cli("ingest", "--corpus", "iemocap", "--root", root, "--workdir", out)
    assert res.rc == 0, res.text
    got = intake(out)
    assert got.found == 2 and got.reasons == {f"iemocap__{ovl}": "overlapping_turns"}
    turns = pq.read_table(out / "turns.parquet").to_pylist()
    assert [t["text"] for t in turns] == ["Hello there, how are you?", "Fine, thanks."]
    prov = json.loads(str(_rows(out)[f"iemocap__{dup}"]["provenance"]))
    assert prov["merged_duplicate_turns"] == 1


def test_iemocap_segmentation_slack_of_one_speaker_is_joined(cli: Cli, tmp_path: Path) -> None:
    """Two lines of one speaker overlapping by 0.2 s (annotator slack) become one turn."""
    root = tmp_path / "IEMOCAP_full_release"
    name = "Ses01F_impro06"
    slack = f"{name}_M001 [004.8000-006.0000]: And you?"
    _iemocap(root, name, _crlf(_lines(name, "Fine, thanks.", (slack,)), "utf-8"))
    out = tmp_path / "out"
    res = cli("ingest", "--corpus", "iemocap", "--root", root, "--workdir", out)
    assert res.rc == 0, res.text
    got = intake(out)
    assert got.found == 1 and got.reasons == {}
    turns = pq.read_table(out / "turns.parquet").to_pylist()
    assert [t["text"] for t in turns] == ["Hello there, how are you?", "Fine, thanks. And you?"]
    assert (turns[1]["start_s"], turns[1]["end_s"]) == (3.0, 6.0)
    prov = json.loads(str(_rows(out)[f"iemocap__{name}"]["provenance"]))
    assert prov["merged_overlapping_turns"] == 1
