"""The report's DNSMOS section (issue 29): distributions by category and corpus.

Work directories written for real (tests/release_fixtures.py) whose rows carry
constructed DNSMOS scores: the report must show exactly their counts and means per category and
per corpus, draw the two figures, and say so when no dialogue was scored.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "release"))
from duetflow.report import SECTIONS, build_report
from release_fixtures import make_workdir, specs

#: OVRL per dialogue: HH of corpus "hh" 3.0-3.3, PH of corpus "ph" 2.0-2.3
HH = {f"hh__d{i:03d}__w000": 3.0 + 0.1 * i for i in range(4)}
PH = {f"ph__d{i:03d}__w000": 2.0 + 0.1 * i for i in range(4)}


def _scores(ovrl: float) -> dict[str, float]:
    return {"dnsmos_ovrl": ovrl, "dnsmos_sig": ovrl + 0.5, "dnsmos_bak": 4.0, "dnsmos_p808": 3.5}


@pytest.fixture(scope="module")
def workdirs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("dnsmos-report")
    over = {k: _scores(v) for k, v in {**HH, **PH}.items()}
    return [
        make_workdir(root / "hh", specs(4, prefix="hh"), row_overrides=over),
        make_workdir(root / "ph", specs(4, prefix="ph", category="PH"), row_overrides=over),
    ]


def test_distributions_by_category_and_corpus(workdirs: list[Path], tmp_path: Path) -> None:
    paths = build_report(workdirs, tmp_path / "r", audio_sample=0)
    doc = json.loads(paths.json.read_text())
    got = {(q["by"], q["group"], q["column"]): q["dist"] for q in doc["dnsmos"]}
    assert set(got) == {
        (by, g, c)
        for by, groups in (("category", ("HH", "PH")), ("corpus", ("hh", "ph")))
        for g in groups
        for c in ("dnsmos_ovrl", "dnsmos_sig", "dnsmos_bak", "dnsmos_p808")
    }
    for by, group, truth in (("category", "HH", HH), ("corpus", "ph", PH)):
        d = got[(by, group, "dnsmos_ovrl")]
        assert d["n"] == 4
        assert d["mean"] == pytest.approx(sum(truth.values()) / 4)
        assert (d["min"], d["max"]) == (
            pytest.approx(min(truth.values())),
            pytest.approx(max(truth.values())),
        )
    html = paths.html.read_text()
    assert ("quality", "Speech quality (DNSMOS) by category and corpus") in SECTIONS
    assert 'id="quality"' in html and "OVRL mean" in html and "3.15" in html and "2.15" in html
    names = {p.name for p in paths.plots}
    assert {"dnsmos_category.png", "dnsmos_corpus.png"} <= names
    card = paths.markdown.read_text()
    assert "## Speech quality (DNSMOS)" in card and "plots/dnsmos_category.png" in card


def test_no_scores_says_how_to_get_them(tmp_path: Path) -> None:
    wd = make_workdir(tmp_path / "wd", specs(2, prefix="hh"))
    paths = build_report(wd, tmp_path / "r", audio_sample=0)
    assert json.loads(paths.json.read_text())["dnsmos"] == []
    assert "quality.dnsmos was off" in paths.html.read_text()
    assert not any(p.name.startswith("dnsmos_") for p in paths.plots)
