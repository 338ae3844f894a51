"""Property tests: malformed annotation lines and truncated files never crash an adapter.

Each example builds a tiny corpus of two source items with fuzzed annotations and audio cut at
an arbitrary byte; every item must come back exactly once, as a Dialogue or as a Rejection with
a known reason code (never ``internal_error``, never an exception).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from duetflow.audio.io import write_audio
from duetflow.corpora import get_adapter
from duetflow.records.dialogue import Dialogue, Rejection

KNOWN = {
    "malformed_line",
    "bad_timing",
    "duplicate_id",
    "missing_file",
    "missing_annotation",
    "bad_audio",
    "truncated_audio",
    "wrong_sample_rate",
    "wrong_channels",
    "bad_encoding",
    "speaker_count",
    "speaker_mismatch",
    "bad_name",
    "no_turns",
    "overlapping_turns",  # one speaker's turns overlapping past segmentation slack
}
SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

junk = st.text(alphabet="[]:-,.\t\r 0123456789SesFMXGab普通话男女*+", max_size=50)
times = st.floats(min_value=0.0, max_value=3.5, allow_nan=False).map(lambda x: round(x, 3))
cut = st.one_of(st.none(), st.floats(min_value=0.0, max_value=1.0))


def _wav(path: Path, sr: int, channels: int, cut_at: float | None, seconds: float = 3.0) -> None:
    rng = np.random.default_rng(0)
    data = (0.05 * rng.standard_normal((int(sr * seconds), channels))).astype(np.float32)
    write_audio(path, data if channels > 1 else data[:, 0], sr)
    if cut_at is not None:
        blob = path.read_bytes()
        path.write_bytes(blob[: int(len(blob) * cut_at)])


def _check(corpus: str, root: Path, n_items: int) -> None:
    items = list(get_adapter(corpus)(root).scan())
    assert len(items) == n_items, items
    assert all(isinstance(i, Dialogue | Rejection) for i in items)
    reasons = {i.reason for i in items if isinstance(i, Rejection)}
    assert reasons <= KNOWN, reasons
    ids = [i.id if isinstance(i, Dialogue) else i.item_id for i in items]
    assert len(set(ids)) == n_items


# --- IEMOCAP ------------------------------------------------------------------------------------


@st.composite
def iemocap_line(draw: st.DrawFn, name: str) -> str:
    kind = draw(st.sampled_from(["valid", "valid", "junk", "noses", "broken_time"]))
    g = draw(st.sampled_from("FM"))
    num = draw(st.sampled_from(["000", "001", "XX0", "12"]))
    s, e = draw(times), draw(times)
    if kind == "valid":
        return f"{name}_{g}{num} [{s:08.4f}-{e:08.4f}]: {draw(junk)}"
    if kind == "broken_time":
        return f"{name}_{g}{num} [{draw(junk)}-{e}]: x"
    if kind == "noses":
        return f"{g}: {draw(junk)}"
    return draw(junk)


@SETTINGS
@given(data=st.data())
def test_iemocap_never_crashes(data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        dialog = root / "Session1" / "dialog"
        (dialog / "transcriptions").mkdir(parents=True)
        (dialog / "wav").mkdir()
        (dialog / "EmoEvaluation").mkdir()
        for name in ("Ses01F_impro01", "Ses01M_script01_1b"):
            lines = data.draw(st.lists(iemocap_line(name), max_size=8))
            blob = "\r\n".join(lines).encode()
            if data.draw(st.booleans()):
                blob += data.draw(st.binary(max_size=6))
            (dialog / "transcriptions" / f"{name}.txt").write_bytes(blob)
            emo = data.draw(
                st.lists(st.one_of(junk, st.just(f"[1.0 - 2.0]\t{name}_F000\tneu\t[1, 2, 3]")))
            )
            (dialog / "EmoEvaluation" / f"{name}.txt").write_text("\n".join(emo))
            channels = data.draw(st.sampled_from([2, 2, 1]))
            _wav(dialog / "wav" / f"{name}.wav", 16000, channels, data.draw(cut))
        _check("iemocap", root, 2)


# --- MagicData-RAMC -----------------------------------------------------------------------------


@st.composite
def ramc_line(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["valid", "valid", "valid", "junk", "fields"]))
    spk = draw(st.sampled_from(["G00000001", "G00000002", "G00000000", "G1"]))
    s, e = draw(times), draw(times)
    text = draw(st.sampled_from(["你好", "[*]", "[MUSIC]", "[+]嗯", "爱数智慧语音采集", ""]))
    if kind == "valid":
        return (
            f"[{s:.3f},{e:.3f}]\t{spk}\t{draw(st.sampled_from(['男', '女', '无']))},普通话\t{text}"
        )
    if kind == "fields":
        return "\t".join(draw(st.lists(junk, max_size=6)))
    return draw(junk)


@SETTINGS
@given(data=st.data())
def test_ramc_never_crashes(data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        mdt = root / "MDT2021S003"
        (mdt / "TXT").mkdir(parents=True)
        (mdt / "WAV").mkdir()
        for rec in ("CTS-CN-F2F-2019-11-15-1", "CTS-CN-F2F-2019-11-15-2"):
            lines = data.draw(st.lists(ramc_line(), max_size=8))
            blob = "\n".join(lines).encode()
            if data.draw(st.booleans()):
                blob = b"\xef\xbb\xbf" + blob + data.draw(st.binary(max_size=6))
            (mdt / "TXT" / f"{rec}.txt").write_bytes(blob)
            sr = data.draw(st.sampled_from([16000, 16000, 8000]))
            _wav(
                mdt / "WAV" / f"{rec}.wav",
                sr,
                data.draw(st.sampled_from([1, 2, 3])),
                data.draw(cut),
            )
        _check("magicdata_ramc", root, 2)


# --- DailyTalk ----------------------------------------------------------------------------------


@SETTINGS
@given(data=st.data())
def test_dailytalk_never_crashes(data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        meta: dict[str, Any] = {}
        for d in ("0", "1"):
            ddir = root / "data" / d
            ddir.mkdir(parents=True)
            turns = data.draw(st.lists(st.sampled_from([0, 1, 2, "0", None]), max_size=4))
            meta[d] = {}
            for i, spk in enumerate(turns):
                entry: dict[str, Any] = {"speaker": spk, "text": "hi", "emotion": "no emotion"}
                if data.draw(st.booleans()):
                    meta[d][str(i)] = entry
                stem = f"{i}_{spk}_d{d}"
                if data.draw(st.booleans()) or spk not in (0, 1):
                    _wav(ddir / f"{stem}.wav", data.draw(st.sampled_from([44100, 16000])), 1,
                         data.draw(cut), seconds=0.2)  # fmt: skip
                    (ddir / f"{stem}.txt").write_bytes(data.draw(st.binary(max_size=12)))
            if data.draw(st.booleans()):
                meta[d] = data.draw(st.sampled_from([[], "x", {"zz": 1}, {}]))
        (root / "metadata.json").write_text(json.dumps(meta))
        _check("dailytalk", root, 2)
