"""A Turing-test game of the demo pipeline's own release: ``game export`` → ``game score``.

The sample pipeline (DailyTalk + studio sessions + scripts → HH, HM and PH, published) is
small: one HH, three HM and two PH dialogues, PH lengths drawn from the human ones
(synth.match_human_length). A default round of five cannot be balanced by category and
duration bin from one HH dialogue, so the export refuses and names the short cell; with one
bin a round of three plays one of each.
"""

from __future__ import annotations

import csv
from pathlib import Path

from click.testing import CliRunner

from duetflow.cli import main
from duetflow.config import load_config
from duetflow.game.score import score_game
from duetflow.pipeline import driver as run
from flow_helpers import write_config


def test_demo_release_round_trip(tmp_path: Path, flow_samples: Path) -> None:
    cfg = load_config(
        write_config(tmp_path / "run.yaml", flow_samples, corpora=("dailytalk", "studio"))
    )
    res = run.run_pipeline(cfg)
    assert res.release is not None
    store, rid = str(cfg.release.store), res.release.release_id
    base = ["game", "export", "--release", rid, "--store", store, "--language", "en",
            "--split", "all", "--seed", "5"]  # fmt: skip
    refused = CliRunner().invoke(main, [*base, "--rounds", "1", "--out", str(tmp_path / "g0")])
    assert refused.exit_code != 0
    assert "cannot balance 1 round(s) of 5: HH" in str(refused.exception)
    out = tmp_path / "g"
    args = [*base, "--rounds", "1", "--per-round", "3", "--bins", "", "--out", str(out)]
    done = CliRunner().invoke(main, args)
    assert done.exit_code == 0, done.output
    with (out / "answer_key.csv").open() as f:
        key = list(csv.DictReader(f))
    assert sorted(k["category"] for k in key) == ["HH", "HM", "PH"]
    lines = ["round,item,judged_human,judge"]
    for k in key:  # one judge: B is human in HH and PH, not in HM
        lines.append(f"{k['round']},{k['item']},{'no' if k['category'] == 'HM' else 'yes'},j")
    (tmp_path / "j.csv").write_text("\n".join(lines) + "\n")
    score = score_game(out / "answer_key.csv", tmp_path / "j.csv")
    rates = {
        r.group: (r.judgments, r.judged_human) for r in score.rates if r.grouping == "category"
    }
    assert rates == {"HH": (1, 1), "HM": (1, 0), "PH": (1, 1)}
    assert (score.overall.correct, score.overall.judgments) == (2, 3)
