"""The report of the real sample pipeline's release, its numbers recomputed from the release."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pandas as pd
import pytest

from duetflow.report import build_report, counts_table


@pytest.fixture(scope="module")
def release_report(sample_release: Path, tmp_path_factory: pytest.TempPathFactory):
    return build_report(sample_release, tmp_path_factory.mktemp("sample-report"), audio_sample=6)


def _release_dir(store: Path) -> Path:
    return store / "releases" / (store / "releases" / "LATEST").read_text().strip()


def test_sample_release_numbers_match_its_manifests(sample_release: Path, release_report) -> None:
    rel = _release_dir(sample_release)
    man = rel / "manifests"
    d = pd.read_parquet(man / "dialogues.parquet")
    t = pd.read_parquet(man / "turns.parquet")
    r = pd.read_parquet(man / "rejections.parquet")
    data = release_report.data
    assert data.provenance.release_id == rel.name
    assert data.total_dialogues == len(d) > 0 and data.total_turns == len(t)
    rows = counts_table(data)
    keys = ["split", "category", "language", "corpus"]
    for key, g in d.groupby(keys):
        row = next(x for x in rows if tuple(x[k] for k in keys) == key)
        assert row["dialogues"] == len(g)
        assert row["hours"] == f"{g.duration_s.sum() / 3600:.3f}"
        assert row["turns"] == int(t.dialogue_id.isin(g.dialogue_id).sum())
    assert {(x.stage, x.reason): x.count for x in data.rejections} == (
        r.groupby(["stage", "reason"]).size().to_dict()
    )
    # the split totals RELEASE.json records agree with the report
    meta = json.loads((rel / "RELEASE.json").read_text())
    for split in ("train", "val", "test"):
        n = sum(x.dialogues for x in data.counts if x.split == split)
        assert n == meta["counts"][split]

    gaps = []
    for _, g in t[t.kind == "turn"].groupby("dialogue_id"):
        g = g.sort_values(["start_s", "turn_index"])
        for a, b in itertools.pairwise(g.itertuples()):
            if a.speaker != b.speaker:
                gaps.append((b.start_s - a.end_s) * 1000)
    gd = data.distributions["gap_ms"]
    assert gd.n == len(gaps) and gd.mean == pytest.approx(sum(gaps) / len(gaps))
    assert gd.in_band == sum(179.5 <= g <= 230.5 for g in gaps)
    # rendering re-times gaps into the band: the report shows it, on turn rows and on audio
    assert gd.in_band_share is not None and gd.in_band_share > 0.9
    ga = data.distributions["gap_ms_audio"]
    assert ga.n > 0 and ga.mean is not None and 150 < ga.mean < 280
    assert not data.audio_errors and len(data.audio_sample) == 6
    # source turn-taking stats travel with the release (stats/*.json) and are per corpus
    assert {s.label for s in data.source_stats} == {"dailytalk", "magicdata_ramc"}
    ramc = next(s for s in data.source_stats if s.label == "magicdata_ramc")
    assert ramc.fto is not None and ramc.fto.n > 0 and sum(ramc.overlap_classes.values()) > 0
    card = release_report.markdown.read_text()
    for corpus in d.corpus.unique():
        assert f"| {corpus} |" in card
    from duetflow.corpora import get_adapter

    for corpus in d.corpus.unique():  # what each adapter declared, carried to the card
        if corpus != "ph":
            assert f"| {get_adapter(corpus).licence} |" in card
