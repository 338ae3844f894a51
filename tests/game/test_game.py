"""``duetflow game export`` → ``game score`` on a published release, and what a packet hides.

The release is published for real (``release.publish.publish``) from tiny rendered work
directories (tests/release_fixtures.py): 5 HH, 5 HM (two S2S systems), 5 PH (two TTS
backends) in English, 3 + 2 of each category in two duration bins, plus Chinese HH that the
English game must not play. The PH files are at another sample rate than the rest and every
source file carries FLAC tags naming its dialogue and category, so the blinding checks have
something to catch.
"""

from __future__ import annotations

import csv
import json
import math
import re
import struct
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import soundfile as sf
from click.testing import CliRunner

import release_fixtures
from duetflow.cli import main
from duetflow.config import build_config
from duetflow.errors import ConfigError
from duetflow.game.packets import export_game
from duetflow.game.plan import GameItem, plan_rounds
from duetflow.game.score import Z95, score_game, wilson
from duetflow.hashing import sha256_file
from duetflow.release.publish import publish
from release_fixtures import Spec, make_workdir

SHORT, LONG = 20.5, 35.0  # bins "<30s" and ">=30s" with edges (30,)


def _tagging_writer(real):  # the release's files carry tags that name the answer
    def write(path, samples, sr, **kw):
        out = real(path, samples, sr, **kw)
        data, rate = sf.read(str(out), dtype="int16")
        stem = Path(path).stem
        with sf.SoundFile(str(out), "w", rate, 1, subtype="PCM_16", format="FLAC") as f:
            f.title = stem
            f.comment = "category " + stem.split("__")[0].upper()
            f.write(data)
        return out

    return write


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("game")
    mp = pytest.MonkeyPatch()
    mp.setattr(release_fixtures, "write_audio", _tagging_writer(release_fixtures.write_audio))
    durations: dict[str, float] = {}
    overrides: dict[str, dict[str, object]] = {}
    workdirs = []
    for cat, extra in (
        ("hh", lambda i: {}),
        ("hm", lambda i: {"system_name": "sysA" if i < 3 else "sysB"}),
        ("ph", lambda i: {"tts_backend": "dia" if i < 3 else "spark"}),
    ):
        items = [
            Spec(f"{cat}__d{i:03d}__w000", f"{cat}__s{i:03d}", cat.upper(), corpus=cat)
            for i in range(5)
        ]
        for i, sp in enumerate(items):
            durations[sp.dialogue_id] = SHORT if i < 3 else LONG
            overrides[sp.dialogue_id] = extra(i)
        if cat == "ph":  # another rate than the rest: the packet must not show it
            mp.setattr(release_fixtures, "SR", 16000)
        workdirs.append(
            make_workdir(root / cat, items, durations=durations, row_overrides=overrides)
        )
        mp.setattr(release_fixtures, "SR", 8000)
    zh = [
        Spec(f"zhhh__d{i:03d}__w000", f"zhhh__s{i:03d}", "HH", "zh", corpus="zhhh")
        for i in range(4)
    ]
    workdirs.append(make_workdir(root / "zh", zh))
    mp.undo()
    cfg = build_config({"release": {"ratios": {"HH": [0, 0, 1], "HM": [0, 0, 1], "PH": [0, 0, 1]}}})
    uri = str(root / "store")
    publish(workdirs, uri, cfg, release_id="game-test")
    return uri


@pytest.fixture(scope="module")
def game(store: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("game-out") / "g"
    res = CliRunner().invoke(
        main,
        [
            "game", "export", "--release", "game-test", "--store", store, "--language", "en",
            "--rounds", "3", "--out", str(out), "--bins", "30", "--seed", "11",
        ],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "3 round(s), 15 dialogue(s) of 15 candidate(s)" in res.output
    return out


def _key(game: Path) -> list[dict[str, str]]:
    with (game / "answer_key.csv").open() as f:
        return list(csv.DictReader(f))


def test_rounds_are_balanced_by_category_and_bin(game: Path) -> None:
    key = _key(game)
    assert len(key) == 15 and {r["language"] for r in key} == {"en"}
    for r in range(1, 4):
        cats = [k["category"] for k in key if k["round"] == str(r)]
        assert len(cats) == 5 and set(cats) == {"HH", "HM", "PH"}
        assert sorted(k["item"] for k in key if k["round"] == str(r)) == list("12345")
    for cat in ("HH", "HM", "PH"):
        bins = [k["duration_bin"] for k in key if k["category"] == cat]
        assert sorted(bins) == ["<30s"] * 3 + [">=30s"] * 2


def _flac_blocks(data: bytes) -> list[tuple[int, bytes]]:
    assert data[:4] == b"fLaC"
    pos, out = 4, []
    while True:
        head = data[pos]
        kind, length = head & 0x7F, int.from_bytes(data[pos + 1 : pos + 4], "big")
        out.append((kind, data[pos + 4 : pos + 4 + length]))
        pos += 4 + length
        if head & 0x80:
            return out


def _comments(block: bytes) -> tuple[bytes, list[bytes]]:
    (n,) = struct.unpack_from("<I", block, 0)
    vendor = block[4 : 4 + n]
    pos = 4 + n
    (count,) = struct.unpack_from("<I", block, pos)
    pos += 4
    items = []
    for _ in range(count):
        (m,) = struct.unpack_from("<I", block, pos)
        items.append(block[pos + 4 : pos + 4 + m])
        pos += 4 + m
    return vendor, items


def test_packet_files_carry_no_category_information(game: Path, store: str) -> None:
    key = _key(game)
    packet = game / "packet"
    files = sorted(p.relative_to(packet).as_posix() for p in packet.rglob("*") if p.is_file())
    assert files == sorted(["rounds.csv", *(k["file"] for k in key)])
    for f in files[:-1] if files[-1] == "rounds.csv" else files:
        if f != "rounds.csv":  # names: round folder + 16 hex digits, nothing else
            assert re.fullmatch(r"round-0[1-3]/[0-9a-f]{16}\.flac", f), f
    with (packet / "rounds.csv").open() as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["round", "item", "file"]
    # the source files were tagged with their dialogue and category (the check can fail)
    sources = list(Path(store, "audio").rglob("*.flac"))
    assert any(_comments(b)[1] for s in sources for k, b in _flac_blocks(s.read_bytes()) if k == 4)
    assert {sf.info(str(s)).samplerate for s in sources} == {8000, 16000}
    vendors = set()
    secrets = [k["dialogue_id"].encode() for k in key] + [b"sysA", b"sysB", b"spark", b"dia"]
    for k in key:
        data = (packet / k["file"]).read_bytes()
        blocks = _flac_blocks(data)
        assert {kind for kind, _ in blocks} <= {0, 1, 3, 4}  # no application/picture/cuesheet
        for kind, body in blocks:
            if kind == 4:
                vendor, comments = _comments(body)
                assert comments == []
                vendors.add(vendor)
        assert not any(s in data for s in secrets)
        info = sf.info(str(packet / k["file"]))
        assert (info.samplerate, info.channels) == (16000, 1)  # one rate, mono
        assert info.frames % 16000 == 0  # lengths on a 1 s grid
        assert info.frames / 16000 == math.ceil(float(k["duration_s"]))
    assert len(vendors) <= 1


def test_padding_keeps_the_audio(game: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    k = next(k for k in _key(game) if k["category"] == "PH")  # a 16 kHz source
    monkeypatch.setattr(release_fixtures, "SR", 16000)
    samples, sr = sf.read(str(game / "packet" / k["file"]), dtype="float32")
    src = release_fixtures.fixture_samples(k["dialogue_id"], float(k["duration_s"]))
    n = len(src)
    assert sr == 16000 and np.abs(samples[n:]).max() == 0.0
    # the 16-bit source re-encoded at its own rate: the same samples to the LSB
    assert np.abs(samples[:n] - src).max() <= 1.5 / 32768


def test_export_is_deterministic_and_seeded(store: str, tmp_path: Path, game: Path) -> None:
    a = export_game(store, "game-test", "en", 3, tmp_path / "a", seed=11, edges=(30,))
    b = export_game(store, "game-test", "en", 3, tmp_path / "b", seed=12, edges=(30,))
    tree = {p.relative_to(game / "packet"): p.read_bytes() for p in (game / "packet").rglob("*.*")}
    again = {p.relative_to(a.packet): p.read_bytes() for p in a.packet.rglob("*.*")}
    assert len(tree) == 16
    assert tree == again
    assert {p.name for p in b.packet.rglob("*.flac")}.isdisjoint(
        {p.name for p in a.packet.rglob("*.flac")}
    )
    with pytest.raises(ConfigError, match="already holds a game"):
        export_game(store, "game-test", "en", 3, tmp_path / "a", seed=11, edges=(30,))


def test_too_few_dialogues_names_the_cell(store: str, tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"HH in bin <30s needs 4 dialogue\(s\), has 3.*at most 3"
    ):
        export_game(store, "game-test", "en", 4, tmp_path / "x", seed=11, edges=(30,))
    with pytest.raises(ConfigError, match="at least two categories"):
        export_game(store, "game-test", "zh", 1, tmp_path / "y", seed=11, edges=(30,))


def _wilson_roots(k: int, n: int) -> tuple[float, float]:
    """Independent instrument: the interval's ends solve (k/n - p)^2 = z^2 p (1 - p) / n."""
    ph, z2 = k / n, Z95**2
    roots = np.roots([1 + z2 / n, -(2 * ph + z2 / n), ph * ph])
    lo, hi = sorted(float(r.real) for r in roots)
    return lo, hi


def test_wilson_matches_the_quadratic() -> None:
    for k, n in ((0, 10), (3, 10), (6, 10), (10, 10), (1, 3), (19, 30)):
        assert wilson(k, n) == pytest.approx(_wilson_roots(k, n), abs=1e-9)


def test_round_trip_scores_scripted_judgments_exactly(game: Path, tmp_path: Path) -> None:
    key = _key(game)
    lines = ["round,item,judged_human,judge,confidence"]
    for k in key:  # j1: human for HH and sysA; j2: human for all but sysB and spark
        j1 = k["category"] == "HH" or k["system"] == "sysA"
        j2 = k["system"] not in ("sysB", "spark")
        lines.append(f"{k['round']},{k['item']},{'yes' if j1 else 'no'},j1,4")
        lines.append(f"{k['round']},{k['item']},{'1' if j2 else '0'},j2,")
    lines += ["9,1,yes,j1,", "1,1,maybe,j3,", f"{key[0]['round']},{key[0]['item']},no,j1,"]
    judgments = tmp_path / "j.csv"
    judgments.write_text("\n".join(lines) + "\n")
    out = tmp_path / "score"
    res = CliRunner().invoke(
        main,
        ["game", "score", "--answers", str(game / "answer_key.csv"), "--judgments",
         str(judgments), "--out", str(out)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    score = score_game(game / "answer_key.csv", judgments)
    assert score.kept == 30 and [r.reason for r in score.rejected] == [
        "unknown_item",
        "unreadable",
        "duplicate",
    ]
    got = {(r.grouping, r.group): (r.judgments, r.judged_human, r.correct) for r in score.rates}
    assert got == {
        ("category", "HH"): (10, 10, 10),
        ("category", "HM"): (10, 6, 4),
        ("category", "PH"): (10, 3, 7),
        ("system", "HH / human"): (10, 10, 10),
        ("system", "HM / sysA"): (6, 6, 0),
        ("system", "HM / sysB"): (4, 0, 4),
        ("system", "PH / dia"): (6, 3, 3),
        ("system", "PH / spark"): (4, 0, 4),
        ("language", "en"): (30, 19, 21),
        ("duration bin", "<30s"): (18, 15, 9),
        ("duration bin", ">=30s"): (12, 4, 12),
        ("language × category", "en / HH"): (10, 10, 10),
        ("language × category", "en / HM"): (10, 6, 4),
        ("language × category", "en / PH"): (10, 3, 7),
    }
    judges = {r.group: (r.judgments, r.correct) for r in score.judges}
    assert judges == {"j1": (15, 12), "j2": (15, 9)}
    assert (score.overall.correct, score.overall.judgments) == (21, 30)
    hm = next(r for r in score.rates if r.group == "HM")
    assert hm.rate == 0.6 and hm.interval == pytest.approx(_wilson_roots(6, 10), abs=1e-9)
    j1 = next(r for r in score.judges if r.group == "j1")
    assert j1.mean_confidence == 4.0
    md = (out / "score.md").read_text()
    lo, hi = _wilson_roots(6, 10)
    assert f"| category | HM | 10 | 6 | 60.0 % | {100 * lo:.1f}–{100 * hi:.1f} % |" in md
    assert "| judge | j1 | 15 |" in md and "Overall judge accuracy: 70.0 %" in md
    assert (out / "index.html").read_text().count("<img ") == len(list((out / "plots").iterdir()))
    assert len(list((out / "plots").glob("*.png"))) == 6


def test_plan_shortfall_and_balance_unit() -> None:
    items = [
        GameItem(f"{c}{i}", f"src{c}{i}", c, "s", "en", 20.0 + 15 * (i % 2), "x", "t", "k", "h")
        for c in ("HH", "HM", "PH")
        for i in range(8)
    ]
    slots = plan_rounds(items, 4, seed=1, release_id="r", edges=(30,))
    assert len(slots) == 20 and len({s.source.dialogue_id for s in slots}) == 20
    per_cat = {c: [s for s in slots if s.source.category == c] for c in ("HH", "HM", "PH")}
    assert sorted(len(v) for v in per_cat.values()) == [6, 7, 7]
    for v in per_cat.values():
        bins = [s.duration_bin for s in v]
        assert abs(bins.count("<30s") - bins.count(">=30s")) <= 1
    assert plan_rounds(list(reversed(items)), 4, seed=1, release_id="r", edges=(30,)) == slots


def test_judge_data_pairs_hh_and_hm_one_to_one_with_the_responder_marked(
    store: str, tmp_path: Path
) -> None:
    out = tmp_path / "judge"
    res = CliRunner().invoke(
        main,
        ["game", "judge-data", "--release", "game-test", "--store", store, "--out", str(out),
         "--split", "test", "--seed", "3"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "5 HH/HM pair(s)" in res.output and "unpaired: 4 HH, 0 HM" in res.output  # zh: no HM
    records = [json.loads(x) for x in (out / "judge.jsonl").read_text().splitlines()]
    assert len(records) == 10
    by_pair: dict[str, list[dict]] = {}
    for r in records:
        by_pair.setdefault(r["pair"], []).append(r)
        assert r["label"] == {"HH": "human", "HM": "machine"}[r["category"]]
        assert (out / r["audio"]).is_file()
        # the fixture's turns: A, B, A; speaker B's turn is the responder's
        assert [t["speaker"] for t in r["turns"]] == ["A", "B", "A"]
        assert [t["responder"] for t in r["turns"]] == [False, True, False]
        assert r["turns"][1]["text"] == f"turn 1 of {r['dialogue_id']}"
    assert len(by_pair) == 5
    assert all(sorted(x["category"] for x in v) == ["HH", "HM"] for v in by_pair.values())
    rows = list(csv.DictReader((out / "pairs.csv").open()))
    assert [r["pair"] for r in rows] == sorted(by_pair)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["pairs_per_language"] == {"en": 5} and summary["unpaired_hh"] == 4
    rel = Path(store) / "releases" / "game-test" / "manifests" / "dialogues.parquet"
    sha = dict(
        zip(
            *pq.read_table(rel, columns=["dialogue_id", "sha256"]).to_pydict().values(), strict=True
        )
    )
    for r in records:
        assert sha256_file(out / r["audio"]) == sha[r["dialogue_id"]]


def test_judge_pairs_prefer_the_same_topic() -> None:
    from duetflow.game.judge_data import _Fact, pair_dialogues

    facts = [
        _Fact("hh1", "HH", "en", "work", "1"),
        _Fact("hh2", "HH", "en", "health", "2"),
        _Fact("hh3", "HH", "en", "work", "3"),
        _Fact("hm1", "HM", "en", "health", "4"),
        _Fact("hm2", "HM", "en", "work", "5"),
        _Fact("hm3", "HM", "en", "finance", "0"),
        _Fact("hh4", "HH", "zh", "work", "6"),
    ]
    pairs, left_hh, left_hm = pair_dialogues(facts)
    got = sorted((a.dialogue_id, b.dialogue_id) for a, b in pairs)
    assert got == [("hh1", "hm2"), ("hh2", "hm1"), ("hh3", "hm3")]
    assert (left_hh, left_hm) == (1, 0)


def test_no_round_plays_two_dialogues_of_one_recording(monkeypatch: pytest.MonkeyPatch) -> None:
    from duetflow.game import plan

    # HH window k and the PH voiced from its transcript share recording src{k}
    items = [
        GameItem(f"{c}{k}", f"src{k}", c, "s", "en", 25.0, "x", "t", "k", "h")
        for c in ("HH", "PH")
        for k in range(6)
    ]

    def game(seed: int) -> list:
        return plan_rounds(items, 3, seed=seed, release_id="r", per_round=4)

    with monkeypatch.context() as m:  # without the swaps, some seeds clash
        m.setattr(plan, "_separate_sources", lambda rounds: None)
        clashing = [s for s in range(20) if plan.shared_source_rounds(game(s)) > 0]
    assert clashing
    for seed in clashing:
        slots = game(seed)
        assert plan.shared_source_rounds(slots) == 0
        per_round = {r: [s.source.category for s in slots if s.round == r] for r in (1, 2, 3)}
        assert all(sorted(v) == ["HH", "HH", "PH", "PH"] for v in per_round.values())
        assert len({s.source.dialogue_id for s in slots}) == 12


def test_unreadable_judgments_name_the_file(game: Path, tmp_path: Path) -> None:
    from duetflow.errors import InputError

    key = game / "answer_key.csv"
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"round,item,judged_human\n1,1,\xff\xfe yes\n")
    with pytest.raises(InputError, match=r"bad\.csv.*not a readable CSV"):
        score_game(key, bad)
    huge = tmp_path / "huge.csv"
    huge.write_text("round,item,judged_human\n1,1," + "y" * 200_000 + "\n")
    with pytest.raises(InputError, match=r"huge\.csv:2.*not a readable CSV"):
        score_game(key, huge)
    cols = tmp_path / "cols.csv"
    cols.write_text("round,item,answer\n1,1,yes\n")
    with pytest.raises(InputError, match="judged_human"):
        score_game(key, cols)


def test_a_failed_export_leaves_no_packet(store: str, tmp_path: Path, monkeypatch) -> None:
    from duetflow.game import packets

    calls = []

    def broken(path, sr, step):
        calls.append(path)
        if len(calls) == 4:
            raise OSError("disk full")
        return packets.read_frames(path)[0]

    monkeypatch.setattr(packets, "blinded_samples", broken)
    with pytest.raises(OSError, match="disk full"):
        export_game(store, "game-test", "en", 3, tmp_path / "g", seed=11, edges=(30,))
    assert sorted(p.name for p in (tmp_path / "g").iterdir()) == []
    monkeypatch.undo()
    res = export_game(store, "game-test", "en", 3, tmp_path / "g", seed=11, edges=(30,))
    assert res.items == 15 and (tmp_path / "g" / "answer_key.csv").is_file()
