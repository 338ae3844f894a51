"""Rejections explain themselves: where on the source, and the knob (with its value) that
decided it (duetflow.rejections, `duetflow rejections`)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from click.testing import CliRunner

from duetflow.cli import main
from duetflow.config import build_config
from duetflow.records.dialogue import Rejection, Stage, Turn
from duetflow.records.manifest import IntakeWriter
from duetflow.rejections import _why, explain
from duetflow.turntaking import filters
from duetflow.turntaking.filters import REASON_KNOBS
from duetflow.turntaking.selection import select

from .helpers import alternating, dialogue

CFG = build_config({})


def _interrupted(text: str = "") -> list[Turn]:
    """B comes in 1.0 s before A's third turn ends and holds the floor (floor-taking)."""
    base = list(alternating(10, 2.5, 0.2))
    turns = [*base[:2], Turn("A", 5.4, 7.9, text), Turn("B", 6.9, 10.5)]
    return turns + list(alternating(6, 2.5, 0.2, start=10.7))


def _rejections(ts: list[Turn], **sections: dict) -> list[Rejection]:
    d = dialogue(ts, duration_s=30.0)
    d = replace(d, provenance={"source_path": "/corpus/d1.wav"})
    return select(d, build_config(sections)).rejected


def test_interruption_names_the_knobs_and_the_overlap() -> None:
    [rej] = _rejections(_interrupted())
    assert rej.reason == "interruption"
    ex = explain(rej)
    assert ex.why.startswith("filters.max_interruptions = 0; 1 interruption(s)")
    assert (
        "B came in at 6.90 s, 1.00 s before A's turn ended: an interruption, above "
        "turns.terminal_overlap_s = 0.3" in ex.why
    )
    assert re.fullmatch(r".*d1\.wav, 0\.00–\d+\.\d\d s", ex.where), ex.where
    # with a larger allowance for terminal overlaps the same overlap is a transition: kept ...
    order = [f for f in build_config({}).filters.order if f != "mono_overlaps"]
    loose = {"terminal_overlap_s": 1.2}
    assert not _rejections(_interrupted(), turns=loose, filters={"order": order})
    # ... but kept as recorded on a mono mix it would mark the category (docs/equalisation.md)
    [mono] = _rejections(_interrupted(), turns=loose)
    assert mono.reason == "mono_overlap" and "filters.order" in explain(mono).why


def test_a_cut_off_inside_the_terminal_allowance_says_so() -> None:
    turns = _interrupted("and then we--")
    turns[3] = Turn("B", 7.7, 10.5)  # 0.2 s before A's end: terminal, but A is cut off
    [rej] = _rejections(turns)
    assert "within turns.terminal_overlap_s = 0.3" in explain(rej).why
    assert "marked cut off" in explain(rej).why


def test_every_filter_reason_has_its_knobs_declared_and_explained() -> None:
    doc = filters.__doc__ or ""
    codes = re.findall(r"``(\w+)``", doc.split("Reason codes:")[1])
    assert codes and set(codes) <= set(REASON_KNOBS)
    for reason, knobs in REASON_KNOBS.items():
        assert knobs[0] in _why(reason, {}), reason


def test_input_rejections_name_no_knob() -> None:
    rej = Rejection("c__x", Stage.INGEST, "bad_timing", "x.TextGrid:12: bad times", "c", "x.wav")
    ex = explain(rej)
    assert ex.where == "x.wav" and ex.why == "the input (no config knob): x.TextGrid:12: bad times"


def test_cli_lists_filters_and_counts(tmp_path: Path) -> None:
    wd = tmp_path / "wd"
    rejected = _rejections(_interrupted()) + _rejections(
        list(alternating(10, 2.5, 0.2)), filters={"balance_min": 0.55}
    )
    with IntakeWriter(wd) as w:
        for r in rejected:
            w.add(r)
        w.add(Rejection("c__x", Stage.INGEST, "bad_timing", "x:3: start > end", "c", "x.wav"))
    res = CliRunner().invoke(main, ["rejections", str(wd)])
    assert res.exit_code == 0, res.output
    assert "filter/interruption" in res.output and "ingest/bad_timing" in res.output
    assert "filters.balance_min, balance_max = 0.55–0.6" in res.output
    assert res.output.rstrip().endswith(
        "3 rejection(s): interruption 1, imbalanced 1, bad_timing 1"
    )
    only = CliRunner().invoke(main, ["rejections", str(wd), "--reason", "interruption"])
    assert only.output.count("  why:") == 1 and "1 rejection(s): interruption 1" in only.output
    none = CliRunner().invoke(main, ["rejections", str(wd), "--reason", "topic"])
    assert "no rejections with reason topic" in none.output
    bad = CliRunner().invoke(main, ["rejections", str(tmp_path)])
    assert bad.exit_code == 2 and "no rejections.parquet" in bad.output
