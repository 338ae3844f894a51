"""The design contract (``design`` config section, :mod:`duetflow.design`) on studio sessions.

* the seed study's preset, published from the sample studio sessions: the release's
  ``design.md``/``design.json``, ``publish``'s result and the report name every cell against
  its target, the missing ones by name; counts recomputed from the release's manifest;
* a design with every cell filled reports no cell problem;
* a system declared English-only never yields Chinese HM (rejected at ingest, reason
  ``system_language``); declared bilingual, the same session is kept;
* an HM session cut into several windows gives one HM item: the window with the opening line.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from duetflow.config import build_config
from duetflow.corpora.studio import StudioAdapter
from duetflow.design import design_report
from duetflow.records.dialogue import (
    Category,
    DesignFields,
    Dialogue,
    MixedMonoSource,
    Rejection,
    Speaker,
    Turn,
    TurnKind,
)
from duetflow.records.rows import ReleaseDialogueRow
from studio_helpers import NO_STATE, transcript, write_session

ZH = ("你好，我想计划一个周末旅行。", "好的，你想去哪里呢？", "我想去湖边走走。")
SYSTEMS = {"demo-s2s": {"languages": ["en"]}}


@pytest.fixture(scope="module")
def published(
    studio_samples: tuple[Path, dict[str, Any]], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Any]:
    """The sample studio sessions ingested, processed and published under the preset."""
    from duetflow.pipeline.commands import process_workdir
    from duetflow.pipeline.ingest import ingest
    from duetflow.release.publish import publish
    from duetflow.report import release_report

    root, _ = studio_samples
    tmp = tmp_path_factory.mktemp("design")
    cfg = build_config(
        {"design": {"preset": "seed_study", "systems": SYSTEMS}, "workdir": str(tmp / "w")},
        environ={},
    )
    ingest("studio", root, tmp / "intake", cfg, {"state_dir": None})
    process_workdir(tmp / "intake", tmp / "work", cfg)
    info = publish([tmp / "work"], str(tmp / "store"), cfg, report=release_report)
    return tmp / "store" / "releases" / info.release_id, info


def test_seed_study_preset_names_every_cell_and_the_missing_ones(published) -> None:
    rel, info = published
    rows = pd.read_parquet(rel / "manifests" / "dialogues.parquet")
    hm = rows[rows.category == "HM"]
    assert len(hm) > 0 and set(hm.language) == {"en"} and set(hm.system_name) == {"demo-s2s"}
    seen = Counter(hm.strategy)
    doc = json.loads((rel / "design.json").read_text())
    cells = {(c["kind"], c["system"], c["strategy"], c["language"]): c for c in doc["cells"]}
    targets = {"human_guided_initiation": 2, "role_playing": 3, "human_likeness_prompting": 4}
    expected_missing = []
    for strategy, target in targets.items():  # the grid: 1 system x 3 strategies x en only
        c = cells.pop(("HM", "demo-s2s", strategy, "en"))
        assert (c["target"], c["count"]) == (target, seen.get(strategy, 0))
        if not seen.get(strategy):
            expected_missing.append(f"missing: HM / demo-s2s / {strategy} / en has 0 of {target}")
    quotas = {
        ("PH", "dia", "", "en"): 36,
        ("PH", "spark", "", "en"): 36,
        ("PH", "spark", "", "zh"): 72,
    }
    for key, target in quotas.items():
        c = cells.pop(key)
        assert (c["target"], c["count"], c["status"]) == (target, 0, "missing")
        expected_missing.append(f"missing: PH / {key[1]} / {key[3]} has 0 of {target}")
    assert cells == {}  # no zh cell for an English-only system, nothing outside the design
    problems = list(info.design_problems)
    assert sorted(p for p in problems if p.startswith("missing")) == sorted(expected_missing)
    assert doc["problems"] == problems
    md = (rel / "design.md").read_text()
    assert all(m.removeprefix("missing: ") in md or m in md for m in expected_missing)
    assert "| PH | spark | – | zh | 72 | 0 | missing |" in md
    # the sample sessions each start from their own first line: the check says so
    lines = {o["line"] for o in doc["opening_lines"] if o["language"] == "en"}
    assert len(lines) > 1 and any(p.startswith("opening lines differ in en") for p in problems)
    page = (rel / "report" / "index.html").read_text()
    assert "Declared design: every cell against its target" in page
    assert "missing: PH / spark / zh has 0 of 72" in page
    card = (rel / "report" / "README.md").read_text()
    assert "| PH | spark | – | zh | 72 | 0 | missing |" in card


def test_a_design_with_every_cell_filled_reports_none(published) -> None:
    rel, _ = published
    from duetflow.records.manifest import iter_records

    recs = list(iter_records(rel / "manifests" / "dialogues.parquet", ReleaseDialogueRow))
    hm = Counter(r.design.strategy for r in recs if r.category == "HM")
    cfg = build_config(
        {
            "design": {
                "systems": SYSTEMS,
                "languages": ["en"],
                "strategies": sorted(hm),
                "strategy_targets": dict(hm),
                "opening_line": "off",
            }
        },
        environ={},
    ).design
    report = design_report(((r.category, r.language, r.design) for r in recs), cfg)
    assert report.problems == [] and len(report.cells) == len(hm)
    assert {c.status for c in report.cells} == {"ok"}
    short = cfg.model_copy(update={"strategy_targets": {k: v + 1 for k, v in hm.items()}})
    again = design_report(((r.category, r.language, r.design) for r in recs), short)
    assert len(again.problems) == len(hm) and all(p.startswith("short") for p in again.problems)


def _scan(root: Path, design: dict[str, Any] | None) -> Dialogue | Rejection:
    cfg = build_config({"design": design} if design else {}, environ={})
    [item] = StudioAdapter(root, NO_STATE, config=cfg).scan()
    return item


def test_an_english_only_system_never_yields_chinese_hm(tmp_path: Path) -> None:
    write_session(tmp_path / "s1", "tracks", language="zh", transcript=transcript(ZH))
    limited = _scan(tmp_path, {"systems": {"s2s": {"languages": ["en"]}}})
    assert isinstance(limited, Rejection) and limited.reason == "system_language"
    assert "'s2s' speaks en" in limited.detail and "'zh'" in limited.detail
    both = _scan(tmp_path, {"systems": {"s2s": {"languages": ["en", "zh"]}}})
    assert isinstance(both, Dialogue) and both.language == "zh"  # the control: the session is fine
    assert isinstance(_scan(tmp_path, None), Dialogue)  # undeclared systems are not limited
    # an HH session of that language is no system's business
    write_session(tmp_path / "s2" / "s", "tracks", category="HH", language="zh")
    hh = _scan(tmp_path / "s2", {"systems": {"s2s": {"languages": ["en"]}}})
    assert isinstance(hh, Dialogue)


def _long_dialogue(category: str, opening: str | None) -> Dialogue:
    turns = []
    t = 0.0
    for i in range(40):  # 40 alternating 3 s turns, 0.2 s gaps: ~128 s, several windows
        spk = "a" if i % 2 == 0 else "b"
        turns.append(Turn(spk, t, t + 3.0, f"turn number {i} says something", TurnKind.TURN))
        t += 3.2
    return Dialogue(
        id=f"studio__{category.lower()}",
        corpus="studio",
        source_id=f"{category.lower()}",
        category=Category(category),
        language="en",
        topic="work",
        speakers=(Speaker("a", "human", "F", "en"), Speaker("b", "machine", "M", "en")),
        turns=tuple(turns),
        source=MixedMonoSource("mix.wav"),
        duration_s=t,
        design=DesignFields(opening_line=opening, system_name="s2s", strategy="role_playing"),
    )


def test_an_hm_session_gives_one_window_the_one_with_the_opening_line() -> None:
    from duetflow.turntaking.selection import select

    cfg = build_config({}, environ={})
    hh = select(_long_dialogue("HH", None), cfg)
    assert len(hh.kept) >= 2  # the control: this dialogue is cut into several windows
    hm = select(_long_dialogue("HM", "turn number 0 says something"), cfg)
    first = _long_dialogue("HM", "x").turns[0]
    assert len(hm.kept) == 1 and hm.kept[0].turns[0].start == first.start
    later = [r for r in hm.rejected if r.reason == "hm_not_opening"]
    assert hm.stats.n_windows >= 2 and len(later) == hm.stats.n_windows - 1  # the others
    assert len(hm.rejected) == len(later) and all("first_turn_start_s" in r.detail for r in later)


def test_one_opening_line_per_language_across_systems_and_hh() -> None:
    cfg = build_config({"design": {"languages": ["en"], "cell_target": 1}}, environ={}).design

    def hm(system: str, line: str) -> tuple[str, str, DesignFields]:
        return (
            "HM",
            "en",
            DesignFields(system_name=system, strategy="role_playing", opening_line=line),
        )

    same = [hm("s1", "Hi, how was your day?"), hm("s2", "Hi,  how was your day?")]
    hh = ("HH", "en", DesignFields(strategy="role_playing", opening_line="Hi, how was your day?"))
    assert design_report([*same, hh], cfg).problems == []  # whitespace aside, one line
    other = ("HH", "en", DesignFields(opening_line="So, what's new?"))
    problems = design_report([*same, other], cfg).problems
    assert problems == [
        "opening lines differ in en: 2 lines: 'Hi, how was your day?' (2: s1, s2); "
        '"So, what\'s new?" (1: HH)'
    ]
    zh = ("HM", "zh", DesignFields(system_name="s1", strategy="role_playing", opening_line="你好"))
    report = design_report([*same, zh], cfg)  # each language has its own line
    assert not any(p.startswith("opening") for p in report.problems)
    assert "outside the design: HM / s1 / role_playing / zh has 1" in report.problems
