"""Overlap analysis runs once per source dialogue and once per window, and passing it on changes
nothing: selection counts its calls to ``classify_overlaps`` on the sample corpora, and the
facts selection derives from the shared events equal those computed from scratch."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from duetflow.config import TurnsConfig, build_config
from duetflow.corpora import get_adapter
from duetflow.demo import make_samples
from duetflow.records.dialogue import Dialogue, Turn, TurnKind
from duetflow.turntaking.overlaps import (
    OverlapEvent,
    balance,
    classify_overlaps,
    floor_transfer_offsets,
    mark_backchannels,
)
from duetflow.turntaking.selection import select
from duetflow.turntaking.stats import overlap_counts

CFG = build_config({})
CORPORA = ["dailytalk", "iemocap", "magicdata_ramc"]


class CallCounter:
    """``classify_overlaps`` wrapped in every loaded duetflow module that bound the name."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, turns: Sequence[Turn], cfg: TurnsConfig) -> list[OverlapEvent]:
        self.calls += 1
        return classify_overlaps(turns, cfg)


@pytest.fixture
def counter(monkeypatch: pytest.MonkeyPatch) -> CallCounter:
    c = CallCounter()
    patched = 0
    for name, module in list(sys.modules.items()):
        if name.startswith("duetflow") and getattr(module, "classify_overlaps", None) is (
            classify_overlaps
        ):
            monkeypatch.setattr(module, "classify_overlaps", c)
            patched += 1
    assert patched >= 4  # overlaps itself, windows, filters, selection
    return c


@pytest.fixture(scope="module")
def sample_dialogues(tmp_path_factory: pytest.TempPathFactory) -> list[Dialogue]:
    root = tmp_path_factory.mktemp("samples")
    make_samples(root, seed=7, include=CORPORA)
    truth = json.loads((root / "truth.json").read_text(encoding="utf-8"))
    out: list[Dialogue] = []
    for name in CORPORA:
        out.extend(_scan(name, root / truth["corpora"][name]["root"]))
    return out


def _scan(name: str, root: Path) -> Iterator[Dialogue]:
    for item in get_adapter(name)(root, {}, config=CFG).scan():
        if isinstance(item, Dialogue):
            yield item


def test_select_classifies_once_per_dialogue_and_once_per_window(
    sample_dialogues: list[Dialogue], counter: CallCounter
) -> None:
    assert len(sample_dialogues) >= 6
    windows = 0
    for d in sample_dialogues:
        before = counter.calls
        sel = select(d, CFG)
        # before: 4 calls per dialogue (+1 without a window) and 3-4 per window
        assert counter.calls - before == 1 + sel.stats.n_windows, d.id
        windows += sel.stats.n_windows
    assert windows > len(sample_dialogues)  # some dialogue is cut into several windows


def test_shared_events_give_what_each_step_computed_alone(
    sample_dialogues: list[Dialogue],
) -> None:
    tc = CFG.turns
    for d in sample_dialogues:
        sel = select(d, CFG)
        speakers = [s.id for s in d.speakers]
        assert sel.stats.overlaps == overlap_counts(classify_overlaps(d.turns, tc))
        assert sel.stats.ftos == tuple(floor_transfer_offsets(d.turns, tc))
        assert sel.stats.balance == balance(d.turns, tc, speakers)
        kept_ftos = [x for k in sel.kept for x in floor_transfer_offsets(k.turns, tc)]
        assert list(sel.stats.kept_ftos) == kept_ftos


_TEXTS = ["", "yeah", "mm-hm", "right", "I think that is", "so what--", "no no wait"]


@st.composite
def timelines(draw: st.DrawFn) -> tuple[Turn, ...]:
    """Two-party timelines with overlaps, gaps, nonspeech, transcripts and adapter marks."""
    n = draw(st.integers(0, 30))
    t = 0.0
    out = []
    for _ in range(n):
        speaker = draw(st.sampled_from("AB"))
        start = max(0.0, round(t + draw(st.floats(-2.0, 1.5)), 2))
        dur = draw(st.sampled_from([0.0, 0.1, 0.3, 0.8, 2.0, 5.0]))
        kind = draw(
            st.sampled_from([TurnKind.TURN] * 5 + [TurnKind.NONSPEECH, TurnKind.BACKCHANNEL])
        )
        out.append(
            Turn(
                speaker, start, round(start + dur, 2), text=draw(st.sampled_from(_TEXTS)), kind=kind
            )
        )
        t = max(t, start + dur)
    return tuple(out)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(timelines(), st.booleans())
def test_marking_backchannels_does_not_change_the_classification(
    turns: tuple[Turn, ...], cues: bool
) -> None:
    """What lets a window's events serve its marked turns (filters, balance, statistics)."""
    tc = TurnsConfig(transcript_cues=cues)
    events = classify_overlaps(turns, tc)
    marked = mark_backchannels(turns, tc)
    assert classify_overlaps(marked, tc) == events
    assert mark_backchannels(turns, tc, events) == marked
    assert balance(marked, tc, ["A", "B"], events) == balance(marked, tc, ["A", "B"])
    assert floor_transfer_offsets(marked, tc, events) == floor_transfer_offsets(marked, tc)
