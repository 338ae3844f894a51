"""Against the generated sample corpora: every placed interruption is caught, no placed
backchannel is counted as one, and selection rejects what the generator meant to be bad."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from duetflow.config import build_config
from duetflow.corpora import get_adapter
from duetflow.demo import make_samples
from duetflow.records.dialogue import Category, Dialogue, MixedMonoSource, Speaker, Turn, TurnKind
from duetflow.turntaking.overlaps import OverlapClass, balance, classify_overlaps
from duetflow.turntaking.selection import select

CFG = build_config({})


CORPORA = ["dailytalk", "iemocap", "magicdata_ramc"]


@pytest.fixture(scope="module")
def sample_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("samples")
    make_samples(root, seed=7, include=CORPORA)
    return root


@pytest.fixture(scope="module")
def truth(sample_root: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((sample_root / "truth.json").read_text(encoding="utf-8"))
    return data


def _dialogue(did: str, entry: dict[str, Any]) -> Dialogue:
    """The dialogue as an adapter yields it: non-party segments (RAMC G00000000) are nonspeech."""
    turns = tuple(
        Turn(
            speaker=t["speaker"],
            start=t["start"],
            end=t["end"],
            text=t.get("text", ""),
            kind=TurnKind.TURN if t["speaker"] in entry["speakers"] else TurnKind.NONSPEECH,
            labels=t.get("labels") or {},
        )
        for t in entry["turns"]
    )
    a, b = entry["speakers"]
    return Dialogue(
        id=did,
        corpus=entry["corpus"],
        source_id=entry["source_id"],
        category=Category.HH,
        language="en",
        topic="",
        speakers=(Speaker(a), Speaker(b)),
        turns=turns,
        source=MixedMonoSource(path="x.wav"),
        duration_s=float(entry.get("duration_s") or max(t.end for t in turns)),
    )


def test_samples_have_placed_events(truth: dict[str, Any]) -> None:
    dialogues = truth["dialogues"].values()
    assert sum(len(d["interruptions"]) for d in dialogues) >= 2
    assert sum(len(d["backchannels"]) for d in dialogues) >= 4


def test_every_placed_interruption_caught_no_backchannel_counted(truth: dict[str, Any]) -> None:
    for did, entry in truth["dialogues"].items():
        d = _dialogue(did, entry)
        events = classify_overlaps(d.turns, CFG.turns)
        interruptions = [e for e in events if e.klass is OverlapClass.INTERRUPTION]
        for placed in entry["interruptions"]:
            hits = [
                e
                for e in interruptions
                if e.listener == placed["interrupter"] and abs(e.start - placed["time"]) < 1e-6
            ]
            assert hits, (did, placed, events)
        # nothing else is an interruption: clean shapes have no floor-taking overlap
        assert len(interruptions) == len(entry["interruptions"]), (did, interruptions)
        for placed in entry["backchannels"]:
            [ev] = [
                e
                for e in events
                if e.listener == placed["speaker"] and abs(e.start - placed["time"]) < 1e-6
            ]
            assert ev.klass is OverlapClass.BACKCHANNEL, (did, placed, ev)
        # the balance filter measures what the generator meant by utterance share
        talk = [t for t in d.turns if "collection_header" not in t.labels]
        shares = balance(talk, CFG.turns, entry["speakers"]).utterance_share
        assert {k: round(v, 4) for k, v in shares.items()} == entry["utterance_share"], did


def test_selection_rejects_interrupted_and_imbalanced_windows(truth: dict[str, Any]) -> None:
    seen_shapes = set()
    for did, entry in truth["dialogues"].items():
        d = _dialogue(did, entry)
        sel = select(d, CFG)
        assert len(sel.kept) + len(sel.rejected) == max(sel.stats.n_windows, 1)
        for w in sel.kept:
            assert w.turns[0].labels.get("collection_header") is None
            assert not any(
                e.klass is OverlapClass.INTERRUPTION for e in classify_overlaps(w.turns, CFG.turns)
            )
        for placed in entry["interruptions"]:
            # the window holding the interruption is rejected for it (or never made)
            for r in sel.rejected:
                detail = json.loads(r.detail)
                if (
                    "window" in detail
                    and detail["window"][0] <= placed["time"] < detail["window"][1]
                ):
                    assert "interruption" in {f["reason"] for f in detail["failing"]}
            assert not any(w.window[0] <= placed["time"] < w.window[1] for w in sel.kept)
        if entry["shape"] == "imbalanced" and sel.stats.n_windows:
            seen_shapes.add("imbalanced")
            assert not sel.kept
            assert {r.reason for r in sel.rejected} <= {"imbalanced", "too_few_turns"}
        if entry["shape"] == "backchannels" and sel.kept:
            seen_shapes.add("backchannels")
    assert {"imbalanced", "backchannels"} <= seen_shapes


def test_through_the_adapters(sample_root: Path, truth: dict[str, Any]) -> None:
    """Same checks on what the corpus adapters actually yield (their rounding, kinds, labels)."""
    n_dialogues = 0
    for name in CORPORA:
        adapter = get_adapter(name)(sample_root / truth["corpora"][name]["root"], {}, config=CFG)
        for item in adapter.scan():
            if not isinstance(item, Dialogue):
                continue
            n_dialogues += 1
            entry = truth["dialogues"][item.id]
            events = classify_overlaps(item.turns, CFG.turns)
            interruptions = [e for e in events if e.klass is OverlapClass.INTERRUPTION]
            assert len(interruptions) == len(entry["interruptions"]), (item.id, events)
            for placed in entry["interruptions"]:
                assert any(
                    e.listener == placed["interrupter"] and abs(e.start - placed["time"]) < 1e-3
                    for e in interruptions
                ), (item.id, placed, events)
            bcs = [e for e in events if e.klass is OverlapClass.BACKCHANNEL]
            assert len(bcs) == len(entry["backchannels"]), (item.id, events)
            sel = select(item, CFG)
            assert len(sel.kept) + len(sel.rejected) == max(sel.stats.n_windows, 1)
            for w in sel.kept:
                assert w.window is not None
                assert not any(
                    w.window[0] <= p["time"] < w.window[1] for p in entry["interruptions"]
                )
                marked = sum(t.kind is TurnKind.BACKCHANNEL for t in w.turns)
                inside = sum(w.window[0] <= p["time"] < w.window[1] for p in entry["backchannels"])
                assert marked == inside, (w.id, marked, inside)
    assert n_dialogues == len(truth["dialogues"])


def test_terminal_overlaps_are_transitions_and_their_windows_kept(
    sample_root: Path, truth: dict[str, Any]
) -> None:
    """Planned 0.10–0.25 s terminal overlaps: classified as such (through the adapters), never
    as interruptions, and the windows holding them are kept, in separable and mono sources."""
    placed = {did: e.get("terminal_overlaps", []) for did, e in truth["dialogues"].items()}
    assert sum(len(v) for v in placed.values()) >= 6
    kept_with = {"iemocap": 0, "magicdata_ramc": 0}
    for name in ("iemocap", "magicdata_ramc"):
        adapter = get_adapter(name)(sample_root / truth["corpora"][name]["root"], {}, config=CFG)
        for item in adapter.scan():
            if not isinstance(item, Dialogue) or not placed[item.id]:
                continue
            events = {round(e.start, 3): e for e in classify_overlaps(item.turns, CFG.turns)}
            for p in placed[item.id]:
                assert 0.1 - 1e-3 <= p["overlap_s"] <= 0.25 + 1e-3
                ev = events[round(p["time"], 3)]
                assert (ev.klass, ev.listener) == (OverlapClass.TERMINAL_OVERLAP, p["speaker"])
            sel = select(item, CFG)
            for w in sel.kept:
                assert w.window is not None
                kept_with[name] += sum(
                    w.window[0] < p["time"] < w.window[1] for p in placed[item.id]
                )
            for r in sel.rejected:
                assert r.reason not in ("interruption",), (item.id, r.detail)
    # both a separable (IEMOCAP) and a mono-mix (RAMC) corpus keep windows with them
    assert kept_with["iemocap"] >= 2 and kept_with["magicdata_ramc"] >= 2, kept_with


def test_interruptions_are_mid_turn_or_marked(truth: dict[str, Any]) -> None:
    """IEMOCAP's planted interruption shows in the timing (the host talks on past the
    terminal-overlap tolerance); RAMC's only in its transcript (``——``), so timing alone reads it
    as a terminal overlap and the transcript cue is what rejects it."""
    timing_only = build_config({"turns": {"transcript_cues": False}})
    seen = set()
    for did, entry in truth["dialogues"].items():
        for placed in entry["interruptions"]:
            d = _dialogue(did, entry)
            onset = {round(e.start, 3): e.klass for e in classify_overlaps(d.turns, CFG.turns)}
            bare = {
                round(e.start, 3): e.klass for e in classify_overlaps(d.turns, timing_only.turns)
            }
            t = round(placed["time"], 3)
            assert onset[t] is OverlapClass.INTERRUPTION
            if placed["host_talks_on_s"] > CFG.turns.terminal_overlap_s:
                seen.add("timing")
                assert bare[t] is OverlapClass.INTERRUPTION
            else:
                seen.add("cut_off")
                assert placed["cut_off_mark"] and bare[t] is OverlapClass.TERMINAL_OVERLAP
    assert seen == {"timing", "cut_off"}
