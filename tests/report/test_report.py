"""The report's numbers, recomputed here straight from the manifests and the audio."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from duetflow.audio.edges import change_gaps
from duetflow.audio.io import read_frames
from duetflow.cli import main
from duetflow.config import RunConfig
from duetflow.errors import InputError
from duetflow.report import SECTIONS, build_report, counts_table, summary_markdown
from duetflow.report.tables import fmt_hours

WORKDIRS = ("dailytalk", "magicdata_ramc", "ph")


def _frames(root: Path, name: str) -> pd.DataFrame:
    return pd.concat([pd.read_parquet(root / wd / name) for wd in WORKDIRS], ignore_index=True)


def _speaker_change_gaps_ms(turns: pd.DataFrame) -> list[float]:
    out: list[float] = []
    for _, g in turns[turns.kind == "turn"].groupby("dialogue_id", sort=False):
        g = g.sort_values(["start_s", "turn_index"])
        rows = list(g.itertuples())
        for a, b in itertools.pairwise(rows):
            if a.speaker != b.speaker:
                out.append((b.start_s - a.end_s) * 1000.0)
    return out


@pytest.fixture(scope="module")
def report(work_root: Path, tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("report-out")
    return build_report(work_root, out, audio_sample=4)


def test_counts_and_hours_match_manifests(work_root: Path, report) -> None:
    d = _frames(work_root, "dialogues.parquet")
    t = _frames(work_root, "turns.parquet")
    card = report.markdown.read_text()
    html = report.html.read_text()
    table = counts_table(report.data)
    assert table[-1]["dialogues"] == len(d) == 7
    assert table[-1]["turns"] == len(t)
    assert table[-1]["hours"] == fmt_hours(d.duration_s.sum())
    cells = d.groupby(["category", "language", "corpus"])
    assert len(table) - 1 == cells.ngroups
    for (cat, lang, corpus), g in cells:
        n_turns = int(t.dialogue_id.isin(g.dialogue_id).sum())
        row = next(
            r for r in table if (r["category"], r["language"], r["corpus"]) == (cat, lang, corpus)
        )
        assert (row["dialogues"], row["turns"]) == (len(g), n_turns)
        assert row["hours"] == f"{g.duration_s.sum() / 3600:.3f}"
        hours = f"{g.duration_s.sum() / 3600:.3f}"
        line = f"| - | {cat} | {lang} | {corpus} | {len(g)} | {hours} | {n_turns} |"
        assert line in card
        assert f"<td>{corpus}</td>" in html
    assert f"- Dialogues: **{len(d)}**" in card


def test_rejections_by_stage_and_reason_with_examples(work_root: Path, report) -> None:
    r = _frames(work_root, "rejections.parquet")
    rows = {(x.stage, x.reason): x for x in report.data.rejections}
    expected = r.groupby(["stage", "reason"]).size().to_dict()
    assert {k: v.count for k, v in rows.items()} == expected
    assert report.data.total_rejections == len(r) == 8
    for (stage, reason), row in rows.items():
        ids = set(r[(r.stage == stage) & (r.reason == reason)].item_id)
        assert row.examples and set(row.examples) <= ids and len(row.examples) <= 3
    # stage order follows the pipeline: ingest before window before filter before synthesize
    stages = [x.stage for x in report.data.rejections]
    assert stages.index("ingest") < stages.index("window") < stages.index("filter")
    card = report.markdown.read_text()
    assert (
        "| filter | balance | 4 | dailytalk | dailytalk__d7, dailytalk__d8, dailytalk__d11 |"
        in card
    )


def test_gap_distribution_matches_turn_rows(work_root: Path, report) -> None:
    gaps = _speaker_change_gaps_ms(_frames(work_root, "turns.parquet"))
    g = report.data.distributions["gap_ms"]
    assert g.n == len(gaps)
    assert g.mean == pytest.approx(np.mean(gaps))
    assert g.min == pytest.approx(min(gaps)) and g.max == pytest.approx(max(gaps))
    in_band = sum(179.5 <= x <= 230.5 for x in gaps)
    assert g.in_band == in_band == len(gaps) - 1  # the one deliberate 450 ms gap
    assert sum(g.counts) + g.below + g.above == g.n
    row = f"| inter-turn gap at speaker changes (turn rows) | ms | {g.n} | {np.mean(gaps):.1f} |"
    assert row in report.markdown.read_text()
    assert f"{100 * in_band / len(gaps):.1f}%" in report.markdown.read_text()


def test_acoustic_gaps_re_measured_from_audio_agree_with_annotation(work_root: Path) -> None:
    """Mono mix and stereo (channel per speaker): acoustic gaps within 10 ms of the rows."""
    for wd in ("dailytalk", "magicdata_ramc"):
        d = pd.read_parquet(work_root / wd / "dialogues.parquet")
        t = pd.read_parquet(work_root / wd / "turns.parquet")
        for row in d.itertuples():
            turns = t[t.dialogue_id == row.dialogue_id].to_dict("records")
            x, sr = read_frames(work_root / wd / row.audio_path, mono=True)
            floor = [(r["speaker"], r["start_s"], r["end_s"]) for r in turns if r["kind"] == "turn"]
            measured = [m.gap / sr * 1000 for m in change_gaps(x, sr, floor) if m is not None]
            expected = _speaker_change_gaps_ms(pd.DataFrame(turns))
            assert len(measured) == len(expected)
            assert np.max(np.abs(np.array(measured) - np.array(expected))) <= 10.0


def test_audio_sample_loudness_and_gaps(work_root: Path, report) -> None:
    d = _frames(work_root, "dialogues.parquet")
    data = report.data
    assert len(data.audio_sample) == 4 and not data.audio_errors
    assert set(data.audio_sample) <= set(d.dialogue_id)
    la = data.distributions["loudness_a_audio"]
    assert la.n == 4
    # measured on the rendered audio, close to what the manifest says for the same dialogues
    sample = d[d.dialogue_id.isin(data.audio_sample)]
    assert la.mean == pytest.approx(sample.loudness_lufs_a.mean(), abs=0.3)
    diff = data.distributions["loudness_diff"]
    assert diff.mean == pytest.approx((d.loudness_lufs_a - d.loudness_lufs_b).mean())
    ga = data.distributions["gap_ms_audio"]
    assert ga.n > 0 and ga.mean == pytest.approx(
        np.mean(
            _speaker_change_gaps_ms(
                _frames(work_root, "turns.parquet")[lambda f: f.dialogue_id.isin(data.audio_sample)]
            )
        ),
        abs=10.0,
    )


def test_shares_durations_and_turns(work_root: Path, report) -> None:
    d = _frames(work_root, "dialogues.parquet")
    t = _frames(work_root, "turns.parquet")
    shares = []
    for row in d.itertuples():
        utt = t[(t.dialogue_id == row.dialogue_id) & (t.kind == "turn")]
        shares.append((utt.speaker == row.speaker_a).mean())
    dist = report.data.distributions
    assert dist["utterance_share_a"].mean == pytest.approx(np.mean(shares))
    assert dist["duration_s"].mean == pytest.approx(d.duration_s.mean())
    assert dist["turns_per_dialogue"].mean == pytest.approx(t.groupby("dialogue_id").size().mean())
    # 0.5 exactly lands in [0.50, 0.52), not one bin lower through float rounding
    u = dist["utterance_share_a"]
    assert u.counts[u.edges.index(0.5)] == sum(abs(s - 0.5) < 1e-12 for s in shares)


def test_source_stats_ph_and_provenance(
    work_root: Path, report, licence_of: dict[str, str]
) -> None:
    data = report.data
    labels = {s.label for s in data.source_stats}
    assert labels == {"dailytalk", "magicdata_ramc"}
    raw = json.loads((work_root / "dailytalk" / "stats.json").read_text())["corpora"]["dailytalk"]
    dt = next(s for s in data.source_stats if s.label == "dailytalk")
    assert dt.overlap_classes == raw["overlaps"]
    assert dt.overlap_classes == {
        "backchannel": 8,
        "interruption": 2,
        "non_floor_interruption": 4,
        "terminal_overlap": 12,
    }
    assert (dt.dialogues, dt.windows, dt.kept, dt.rejected) == (4, 12, 2, 6)
    assert dt.fto is not None and dt.fto.n == raw["fto"]["n"] == 48
    assert dt.fto.mean == pytest.approx(raw["fto"]["mean"] * 1000)  # seconds → ms
    assert dt.kept_fto is not None and dt.kept_fto.n == 8
    assert dt.balance is not None and dt.balance.n == 12
    assert f"| dailytalk | 4 | {360 / 3600:.3f} | 12 | 2 |" in report.markdown.read_text()
    assert data.ph.dialogues == 2
    assert data.ph.backends == {"default": 1, "spark": 1}
    assert data.ph.similarity.n == 4
    assert data.ph.similarity.mean == pytest.approx((0.62 + 0.55 + 0.81 + 0.77) / 4)
    assert data.ph.failures == {"runaway_generation": 1}
    card = report.markdown.read_text()
    # the licence section is what the rows carry, counted
    held = {r.licence: (r.dialogues, r.corpora) for r in data.provenance.licences}
    assert set(held) == set(licence_of.values())
    assert held[licence_of["ph"]] == (2, ("ph",))
    for lic, (n, corpora) in held.items():
        assert f"| {lic} | " in card and f"| {', '.join(corpora)} | {n} |" in card
    assert "Non-commercial use only for dialogues under CC-BY-NC-ND-4.0, CC-BY-NC-SA-4.0" in card
    assert "tts:spark" in {k for k, _, _ in data.provenance.sources}
    assert data.provenance.config_hash == RunConfig().content_hash()
    html = report.html.read_text()
    for sid, _ in SECTIONS:
        assert f'<section id="{sid}">' in html
    assert "<script" not in html and "http://" not in html and "https://" not in html


def test_release_report_counts_per_split(release_dir: Path, tmp_path: Path) -> None:
    paths = build_report(release_dir, tmp_path / "rep", audio_sample=3)
    d = pd.read_parquet(release_dir / "manifests" / "dialogues.parquet")
    rows = counts_table(paths.data)
    for (split, cat, lang, corpus), g in d.groupby(["split", "category", "language", "corpus"]):
        row = next(
            r
            for r in rows
            if (r["split"], r["category"], r["language"], r["corpus"]) == (split, cat, lang, corpus)
        )
        assert (row["dialogues"], row["hours"]) == (len(g), f"{g.duration_s.sum() / 3600:.3f}")
    for split, g in d.groupby("split"):
        assert (
            f"| {split} | {len(g)} | {g.duration_s.sum() / 3600:.3f} |"
            in paths.markdown.read_text()
        )
    assert paths.data.provenance.release_id == "r-test-0001"
    # the release's own render config gives the gap band
    assert paths.data.distributions["gap_ms"].band == (170.0, 240.0)
    assert paths.data.provenance.config_hash == "cafef00d12345678"
    assert paths.data.title == "duetflow release r-test-0001"
    assert len(paths.data.audio_sample) == 3 and not paths.data.audio_errors
    assert [s.label for s in paths.data.source_stats] == ["dailytalk"]
    # a store root means its latest release
    latest = build_report(release_dir.parent.parent, tmp_path / "latest", audio_sample=0)
    assert latest.data.counts == paths.data.counts
    summary = summary_markdown(paths.data)
    assert f"**{len(d)}** dialogues" in summary and "| train |" in summary


def test_publish_style_report_from_workdirs_and_split_plan(
    work_root: Path, release_dir: Path, tmp_path: Path
) -> None:
    """Publish reports a release before RELEASE.json exists: work dirs + its split plan."""
    d = pd.read_parquet(release_dir / "manifests" / "dialogues.parquet")
    plan = dict(zip(d.dialogue_id, d.split, strict=True))
    from_release = build_report(release_dir, tmp_path / "a", audio_sample=0)
    staged = build_report(
        work_root, tmp_path / "b", audio_sample=0, splits=plan, release_id="r-test-0001"
    )
    assert staged.data.counts == from_release.data.counts
    assert staged.data.title == "duetflow release r-test-0001"
    assert {r.split for r in staged.data.counts} == {"train", "val", "test"}


def test_same_inputs_give_byte_identical_outputs(work_root: Path, tmp_path: Path) -> None:
    a = build_report(work_root, tmp_path / "a", audio_sample=2)
    b = build_report(work_root, tmp_path / "b", audio_sample=2)
    files_a = sorted(
        p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file()
    )
    files_b = sorted(
        p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file()
    )
    assert files_a == files_b and len(files_a) == 3 + len(a.plots)
    for rel in files_a:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel
    assert a.data.audio_sample == b.data.audio_sample
    report_json = json.loads(a.json.read_text())
    assert report_json["totals"]["dialogues"] == 7


def test_cli_writes_report_and_bad_source_is_an_input_error(
    work_root: Path, tmp_path: Path
) -> None:
    out = tmp_path / "cli"
    res = CliRunner().invoke(
        main,
        [
            "report",
            str(work_root / "dailytalk"),
            str(work_root / "ph"),
            "--out",
            str(out),
            "--audio-sample",
            "1",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "5 dialogues" in res.output
    assert (out / "index.html").exists() and (out / "README.md").exists()
    with pytest.raises(InputError, match="nowhere"):
        build_report(tmp_path / "nowhere", tmp_path / "x")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="not a rendered work directory"):
        build_report(tmp_path / "empty", tmp_path / "x")


def test_unreadable_audio_is_reported_not_fatal(work_root: Path, tmp_path: Path) -> None:
    import shutil

    wd = tmp_path / "wd"
    shutil.copytree(work_root / "dailytalk", wd)
    d = pd.read_parquet(wd / "dialogues.parquet")
    (wd / d.audio_path[0]).write_bytes(b"not audio")
    paths = build_report(wd, tmp_path / "rep", audio_sample=10)
    assert len(paths.data.audio_sample) == 2
    assert len(paths.data.audio_errors) == 1 and d.dialogue_id[0] in paths.data.audio_errors[0]
    assert "could not be measured" in paths.html.read_text()


def test_page_and_card_show_the_same_figures(report) -> None:
    """Every figure the page shows is also in the dataset card (the card had fallen behind the
    page's distribution figures once: each now reads the one list)."""
    import re

    html = report.html.read_text()
    card = report.markdown.read_text()
    on_page = set(re.findall(r'<figure id="fig-([^"]+)"', html))
    in_card = set(re.findall(r"!\[([^\]]+)\]\(", card))
    assert {"gaps", "loudness_audio", "loudness_diff_audio", "speaking_time_share"} <= on_page
    assert on_page == in_card
