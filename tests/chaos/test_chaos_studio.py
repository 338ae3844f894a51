"""Hostile studio deliveries through `duetflow ingest --corpus studio` (issue 15: 1-3, 6, 7).

Each case builds a small studio root with real audio, runs the command, and checks the exit
code, that nothing hangs (pytest-timeout), and that the intake tables account for every folder
with the expected reason.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml
from chaos_helpers import Cli, intake, summary_counts

from duetflow.audio.io import write_audio
from studio_helpers import SR, tracks, transcript, write_session

pytestmark = pytest.mark.timeout(300)


def _ingest(cli: Cli, root: Path | str, out: Path | str, cwd: Path | None = None) -> None:
    res = cli("ingest", "--corpus", "studio", "--root", root, "--workdir", out, cwd=cwd)
    assert res.rc == 0, res.text
    assert "Traceback" not in res.text
    found, kept, rejected = summary_counts(res.out)
    assert found == kept + rejected


def _sidecar(folder: Path) -> dict[str, object]:
    data: dict[str, object] = yaml.safe_load((folder / "session.yaml").read_text("utf-8"))
    return data


def _write_sidecar(folder: Path, data: dict[str, object]) -> None:
    (folder / "session.yaml").write_text(yaml.safe_dump(data), "utf-8")


def _provenance(out: Path) -> dict[str, dict[str, object]]:
    rows = pq.read_table(out / "dialogues.parquet").to_pylist()
    return {r["dialogue_id"]: json.loads(r["provenance"]) for r in rows}


# --- item 1: relative roots --------------------------------------------------------------------


def test_relative_root_keeps_every_session_and_nothing_sticks(cli: Cli, tmp_path: Path) -> None:
    root = tmp_path / "samples" / "studio"
    write_session(root / "a", session_id="sa")
    write_session(root / "b", session_id="sb")
    _ingest(cli, "samples/studio", "work/x", cwd=tmp_path)
    got = intake(tmp_path / "work/x")
    assert (got.kept, got.rejected) == (2, 0), got.reasons
    # the same --out from the absolute root, and through a symlinked root: same result
    _ingest(cli, root, tmp_path / "work/x")
    assert intake(tmp_path / "work/x").kept == 2
    (tmp_path / "link").symlink_to(root, target_is_directory=True)
    _ingest(cli, "link", "work/x", cwd=tmp_path)
    assert intake(tmp_path / "work/x").kept == 2
    _ingest(cli, "./samples/../samples/studio/", "work/y", cwd=tmp_path)
    assert intake(tmp_path / "work/y").kept == 2


# --- item 2: files that never end or never open -------------------------------------------------


def test_device_links_and_fifos_in_a_session_never_hang_the_ingest(
    cli: Cli, tmp_path: Path
) -> None:
    root = tmp_path / "studio"
    good = write_session(root / "good", session_id="good")
    (good / "notes.txt").symlink_to("/dev/zero")
    os.mkfifo(good / "pipe")
    os.mkfifo(good / "extra.fifo")
    bad = write_session(root / "fifo_audio", session_id="fifo_audio")
    (bad / "b.wav").unlink()
    os.mkfifo(bad / "b.wav")  # the referenced track is a FIFO: refused, never opened
    dev = write_session(root / "dev_audio", session_id="dev_audio")
    (dev / "a.wav").unlink()
    (dev / "a.wav").symlink_to("/dev/zero")  # a link out of the root to an endless device
    side = write_session(root / "fifo_sidecar", session_id="fifo_sidecar")
    (side / "session.yaml").unlink()
    os.mkfifo(side / "session.yaml")
    out = tmp_path / "out"
    for _ in range(2):  # the second run replays the state: still no read of a special file
        _ingest(cli, root, out)
        got = intake(out)
        assert got.found == 4 and got.kept == 1, got.reasons
        assert got.reasons == {
            "studio__fifo_audio": "bad_file",
            "studio__dev_audio": "path_escape",
            "studio__fifo_sidecar": "bad_file",
        }


# --- item 3: YAML alias bombs ------------------------------------------------------------------


def _bomb(levels: int) -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        refs = ",".join([f"*a{i - 1}"] * 9)
        lines.append(f"a{i}: &a{i} [{refs}]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("levels", [6, 9])
def test_alias_bomb_sidecar_is_one_bounded_rejection(cli: Cli, tmp_path: Path, levels: int) -> None:
    root = tmp_path / "studio"
    write_session(root / "ok", session_id="ok")
    folder = write_session(root / "bomb", session_id="bomb")
    text = (folder / "session.yaml").read_text("utf-8")
    bomb = _bomb(levels)
    # the expanded list lands in a validated field, whose error message used to print it all
    body = "\n".join(
        f"topic: *a{levels - 1}" if line.startswith("topic:") else line
        for line in text.splitlines()
    )
    (folder / "session.yaml").write_text(bomb + body + "\n", "utf-8")
    assert len((folder / "session.yaml").read_bytes()) < 2000
    out = tmp_path / "out"
    _ingest(cli, root, out)
    got = intake(out)
    assert got.found == 2 and got.kept == 1
    (rid,) = [k for k in got.reasons]
    assert got.reasons[rid] == "bad_sidecar"
    assert len(got.details[rid]) <= 2100
    res = cli("process", "--intake", out, "--workdir", tmp_path / "rendered")
    assert res.rc == 0, res.text


def test_intake_tables_are_all_or_nothing(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from duetflow.records import manifest

    root = tmp_path / "studio"
    write_session(root / "ok", session_id="ok")
    broken = write_session(root / "broken", session_id="broken")
    (broken / "a.wav").write_bytes(b"")
    out = tmp_path / "out"
    real_flush = manifest.TableWriter.flush

    def failing_flush(self: manifest.TableWriter) -> None:
        if self.path.name == manifest.REJECTIONS and self._buf:
            raise MemoryError("simulated: the rejections table could not be written")
        real_flush(self)

    monkeypatch.setattr(manifest.TableWriter, "flush", failing_flush)
    res = cli("ingest", "--corpus", "studio", "--root", root, "--workdir", out)
    assert res.rc != 0
    left = sorted(p.name for p in out.glob("*.parquet"))
    assert left == [], f"a failed ingest left {left} for `process` to trust"
    assert not [p for p in out.glob(".*.tmp")]
    monkeypatch.setattr(manifest.TableWriter, "flush", real_flush)
    # a directory that lost a table (an old crash) is refused by process, in one line
    _ingest(cli, root, out)
    (out / manifest.REJECTIONS).unlink()
    res = cli("process", "--intake", out, "--workdir", tmp_path / "rendered")
    assert res.rc == 2 and "Traceback" not in res.text
    assert "rejections.parquet" in res.err and len(res.err.strip().splitlines()) == 1


# --- item 6: duplicated or overlapping turns of one speaker ---------------------------------------


def test_duplicate_transcript_turn_is_merged_and_overlap_rejected(cli: Cli, tmp_path: Path) -> None:
    root = tmp_path / "studio"
    turns = transcript(("Hello there.", "Hi, how can I help?", "Just testing."), timed=True)
    write_session(root / "dup", session_id="dup", transcript=[*turns, dict(turns[1])])
    overlap = [*turns, {**turns[1], "start": 2.0, "end": 2.5, "text": "Again."}]
    write_session(root / "overlap", session_id="overlap", transcript=overlap)
    out = tmp_path / "out"
    _ingest(cli, root, out)
    got = intake(out)
    assert got.found == 2 and got.reasons == {"studio__overlap": "overlapping_turns"}
    n = pq.read_table(out / "turns.parquet").num_rows
    assert n == 3  # the pasted copy is heard once
    assert _provenance(out)["studio__dup"]["merged_duplicate_turns"] == 1


# --- item 7: every folder accounted for, links out refused, ids kept by their owner --------------


def test_symlinked_session_folder_and_sidecar_out_of_root_are_rejected(
    cli: Cli, tmp_path: Path
) -> None:
    root = tmp_path / "studio"
    write_session(root / "ok", session_id="ok")
    outside = write_session(tmp_path / "elsewhere" / "s9", session_id="outside")
    (root / "linked").symlink_to(outside, target_is_directory=True)
    inner = write_session(root / "day2" / "inner", session_id="inner")
    (root / "alias").symlink_to(inner, target_is_directory=True)
    secret = tmp_path / "secret.yaml"
    secret.write_text("session_id: TOP-SECRET-VALUE\nnot: valid: yaml: [\n", "utf-8")
    leak = write_session(root / "leak", session_id="leak")
    (leak / "session.yaml").unlink()
    (leak / "session.yaml").symlink_to(secret)
    out = tmp_path / "out"
    _ingest(cli, root, out)
    got = intake(out)
    assert got.found == 5 and got.kept == 2, got.reasons
    assert got.reasons == {
        "studio__linked": "path_escape",
        "studio__alias": "symlinked_folder",
        "studio__leak": "path_escape",
    }
    assert not any("TOP-SECRET" in d for d in got.details.values())


def test_colliding_session_id_never_takes_over_a_recorded_dialogue(
    cli: Cli, tmp_path: Path
) -> None:
    root = tmp_path / "studio"
    write_session(root / "b_first", session_id="s1")
    out = tmp_path / "out"
    _ingest(cli, root, out)
    assert intake(out).kept == 1
    write_session(root / "a_later", session_id="s1", seed=3)  # sorts first, same id
    for _ in range(2):
        _ingest(cli, root, out)
        got = intake(out)
        assert got.found == 2 and got.kept == 1
        assert got.reasons == {"studio__a_later": "duplicate_id"}
        assert _provenance(out)["studio__s1"]["session_folder"] == "b_first"


# --- cases handled before: they must stay handled -------------------------------------------------


def test_broken_audio_and_path_traversal_are_quarantined(cli: Cli, tmp_path: Path) -> None:
    root = tmp_path / "studio"
    write_session(root / "ok", session_id="ok")
    write_session(root / "zero", session_id="zero")
    (root / "zero" / "a.wav").write_bytes(b"")
    write_session(root / "trunc", session_id="trunc")
    data = (root / "trunc" / "a.wav").read_bytes()
    (root / "trunc" / "a.wav").write_bytes(data[: len(data) // 2])
    write_session(root / "text", session_id="text")
    (root / "text" / "a.wav").write_text("this is not audio\n" * 100, "utf-8")
    write_session(root / "nan", session_id="nan")
    a, _ = tracks()
    a[1000:1010] = np.nan
    write_audio(root / "nan" / "a.wav", a, SR, subtype="FLOAT")
    trav = write_session(root / "trav", session_id="trav")
    meta = _sidecar(trav)
    meta["speakers"][0]["file"] = "../../../../../../etc/passwd"  # type: ignore[index]
    _write_sidecar(trav, meta)
    out = tmp_path / "out"
    _ingest(cli, root, out)
    got = intake(out)
    assert got.found == 6 and got.kept == 1
    assert got.reasons == {
        "studio__zero": "bad_audio",
        "studio__trunc": "truncated_audio",
        "studio__text": "bad_audio",
        "studio__nan": "bad_audio",
        "studio__trav": "path_escape",
    }


def test_nested_transcript_and_absurd_sample_rate_are_rejected(cli: Cli, tmp_path: Path) -> None:
    root = tmp_path / "studio"
    write_session(root / "ok", session_id="ok")
    deep = write_session(root / "deep", session_id="deep", transcript=[])
    (deep / "transcript.json").write_text("[" * 100_000 + "]" * 100_000, "utf-8")
    slow = write_session(root / "slow", session_id="slow")
    a, b = tracks()
    write_audio(slow / "a.wav", a[:4000], 1000)  # 4 s at 1 kHz: resampling would be 16x
    write_audio(slow / "b.wav", b[:4000], 1000)
    out = tmp_path / "out"
    _ingest(cli, root, out)
    got = intake(out)
    assert got.found == 3 and got.kept == 1
    assert got.reasons == {"studio__deep": "bad_transcript", "studio__slow": "wrong_sample_rate"}
