"""One bad item never stops the rest (issue 24, items 3 and 8): names that are not UTF-8,
state files of the wrong shape, language tags that are not BCP 47.

Every case builds real files on disk (names made with bytes paths), runs ``duetflow ingest``
through the console entry point and checks the user's view: exit 0, no traceback, the good
sessions kept and every bad one rejected with a reason naming the file, shown escaped.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest
from chaos_helpers import Cli, intake, summary_counts

from duetflow.audio.io import write_audio
from duetflow.corpora.source_checks import checked_audio_info
from duetflow.errors import InputError
from duetflow.langtag import is_language_tag
from studio_helpers import write_session

pytestmark = pytest.mark.timeout(300)


def _ingest(cli: Cli, root: Path, out: Path, *extra: object) -> str:
    res = cli("ingest", "--corpus", "studio", "--root", root, "--workdir", out, *extra)
    assert res.rc == 0, res.text
    assert "Traceback" not in res.text
    found, kept, rejected = summary_counts(res.out)
    assert found == kept + rejected
    return res.text


def _bytes(p: Path) -> bytes:
    return os.fsencode(str(p))


def test_names_that_are_not_utf8_are_quarantined_and_the_rest_kept(
    cli: Cli, tmp_path: Path
) -> None:
    root = tmp_path / "studio"
    write_session(root / "good", session_id="good")
    # a session folder whose name has undecodable bytes (\xff\xfe), made with a bytes path
    write_session(root / "moved", session_id="badfolder")
    os.rename(_bytes(root / "moved"), _bytes(root) + b"/caf\xe9-\xff\xfe")
    # a good session with one stray file whose name is Latin-1, not UTF-8
    noted = write_session(root / "noted", session_id="noted")
    with open(_bytes(noted) + b"/notes-\xe9t\xe9.txt", "wb") as f:
        f.write(b"x")
    # a nested folder (no session) with a bad name next to a good nested session
    (root / "nest").mkdir()
    os.mkdir(_bytes(root / "nest") + b"/\x80dir")
    write_session(root / "nest" / "ok", session_id="nested_ok")
    out = tmp_path / "out"
    for _ in range(2):  # the second run replays the incremental state
        _ingest(cli, root, out)
        got = intake(out)
        assert got.kept == 2, got.reasons
        assert sorted(got.reasons.values()) == ["bad_name"] * 3, got.reasons
        details = "\n".join(got.details.values())
        assert "caf\\xe9-\\xff\\xfe" in details and "notes-\\xe9t\\xe9.txt" in details
        assert "nest/\\x80dir" in details and "not valid UTF-8" in details


def test_an_audio_file_name_that_is_not_utf8_is_one_named_rejection(tmp_path: Path) -> None:
    import numpy as np

    good = tmp_path / "a.wav"
    write_audio(good, np.zeros(1600, np.float32), 16000)
    os.rename(_bytes(good), _bytes(tmp_path) + b"/\xffa.wav")
    path = Path(os.fsdecode(_bytes(tmp_path) + b"/\xffa.wav"))
    with pytest.raises(InputError) as e:
        checked_audio_info(path)
    assert e.value.reason == "bad_name" and "\\xffa.wav" in str(e.value)
    str(e.value).encode("utf-8")  # printable, storable


def test_a_root_that_is_not_utf8_is_one_error_line(cli: Cli, tmp_path: Path) -> None:
    write_session(tmp_path / "r" / "s", session_id="s")
    os.rename(_bytes(tmp_path / "r"), _bytes(tmp_path) + b"/r\xff")
    root = Path(os.fsdecode(_bytes(tmp_path) + b"/r\xff"))
    res = cli("ingest", "--corpus", "studio", "--root", root, "--workdir", tmp_path / "o")
    assert res.rc == 2, res.text
    assert "Traceback" not in res.text and "r\\xff" in res.err and "not valid UTF-8" in res.err


WRONG_SHAPES: list[object] = [
    [],
    "a string",
    {"version": 2},
    "KEY",  # the right key and version, fields of the wrong types (filled in below)
    "RESULT",  # the right fields, a result that is not a record
]


def _state_files(out: Path) -> list[Path]:
    return sorted(p for p in (out / "studio_state").rglob("*.json") if "ids" not in p.parts)


@pytest.mark.parametrize("shape", range(len(WRONG_SHAPES)))
def test_state_files_of_the_wrong_shape_are_rebuilt(
    cli: Cli, tmp_path: Path, shape: int, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "studio"
    write_session(root / "a", session_id="a")
    write_session(root / "b", session_id="b")
    out = tmp_path / "out"
    _ingest(cli, root, out)
    first = intake(out)
    assert first.kept == 2
    states = _state_files(out)
    claims = sorted((out / "studio_state").rglob("ids/*.json"))
    assert len(states) == 2 and len(claims) == 2
    for p in states:
        value = WRONG_SHAPES[shape]
        if value in ("KEY", "RESULT"):
            data = json.loads(p.read_text("utf-8"))
            if value == "KEY":
                data.update(content_hash=7, fingerprint=[["x", "y"]])
            else:
                data["result"] = {"kind": "dialogue", "row": [], "turns": 3}
            value = data
        p.write_text(json.dumps(value), "utf-8")
    for p in claims:
        p.write_text(json.dumps(["not", "a", "claim"]), "utf-8")
    caplog.set_level(logging.WARNING)
    _ingest(cli, root, out)
    again = intake(out)
    assert (again.kept, again.rejected) == (2, 0)
    if WRONG_SHAPES[shape] not in ({"version": 2},):  # another version is simply stale
        assert "studio state" in caplog.text or "wrong shape" in caplog.text
    # rebuilt: the state is a valid record again
    for p in _state_files(out):
        assert isinstance(json.loads(p.read_text("utf-8")).get("result"), dict)


@pytest.mark.parametrize("tag", ["en_US", "english language", "<script>", "e1", "zh-"])
def test_a_language_that_is_not_bcp47_rejects_only_that_session(
    cli: Cli, tmp_path: Path, tag: str
) -> None:
    root = tmp_path / "studio"
    write_session(root / "good", session_id="good", language="zh-Hans-CN")
    write_session(root / "bad", session_id="bad", language=tag)
    out = tmp_path / "out"
    _ingest(cli, root, out)
    got = intake(out)
    assert got.kept == 1 and got.reasons == {"studio__bad": "bad_sidecar"}, got.reasons
    detail = got.details["studio__bad"]
    assert "[language]" in detail and "BCP 47" in detail and "session.yaml" in detail


@pytest.mark.parametrize(
    ("tag", "ok"),
    [
        ("en", True), ("zh-Hans-CN", True), ("sr-Latn-RS", True), ("de-CH-1996", True),
        ("es-419", True), ("x-whatever", True), ("i-klingon", True), ("zh-min-nan", True),
        ("de-DE-u-co-phonebk", True), ("en-US-x-twain", True), ("yue", True),
        ("en_US", False), ("", False), ("e", False), ("en-", False), ("-en", False),
        ("en--GB", False), ("en GB", False), ("de-419-DE", False), ("en-a", False),
        ("x", False), ("en-GB-oed-x", False), ("a" * 9, False),
        ("en-" + "-".join(["abcde"] * 20), False),
    ],
)  # fmt: skip
def test_language_tag_grammar(tag: str, ok: bool) -> None:
    assert is_language_tag(tag) is ok


@pytest.mark.parametrize("bad", ["[1, 2]", '{"stage": 3}', '{"found": "many"}', "\xff"])
def test_a_step_result_of_the_wrong_shape_is_rebuilt(tmp_path: Path, bad: str) -> None:
    from duetflow.pipeline.cache import RESULT, StepOutcome, build_cached, load_outcome

    final = tmp_path / "cache" / "ingest" / "k1"
    final.mkdir(parents=True)
    (final / RESULT).write_bytes(bad.encode("latin-1"))
    (final / "junk.parquet").write_bytes(b"x")
    assert load_outcome(final) is None
    built = []

    def build(path: Path) -> StepOutcome:
        built.append(path)
        return StepOutcome("ingest", "x", "k1", str(path), found=1, kept=1)

    out = build_cached(final, build)
    assert built and out.kept == 1 and not out.reused
    assert not (final / "junk.parquet").exists()  # the old folder was not trusted
    again = load_outcome(final)
    assert again is not None and again.kept == 1 and again.reused


@pytest.mark.parametrize("bad", ["[]", '{"item_id": 1, "stage": "script"}', '{"stage": "nope"}'])
def test_a_persisted_script_rejection_of_the_wrong_shape_is_asked_again(
    tmp_path: Path, bad: str
) -> None:
    from duetflow.scriptgen.store import ScriptStore

    store = ScriptStore(tmp_path)
    path = store.rejection_path("gen-en-work-001")
    path.parent.mkdir(parents=True)
    path.write_text(bad, "utf-8")
    assert store.rejection("gen-en-work-001") is None
