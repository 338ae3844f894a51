"""HH ↔ HM matching: the HH topic histogram mirrors the HM one, per language."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from duetflow.config import MatchConfig
from duetflow.records.manifest import (
    DIALOGUES,
    REJECTION_SCHEMA,
    REJECTIONS,
    RENDERED_DIALOGUE_SCHEMA,
    RENDERED_TURN_SCHEMA,
    TURNS,
    iter_rows,
    write_table,
)
from duetflow.turntaking.matching import MatchItem, apply_match, plan_match

TOPICS = ("work", "health", "tourism", "finance")


def _items(spec: dict[tuple[str, str, str], int]) -> list[MatchItem]:
    """``{(category, language, topic): count}`` → items with distinct ids."""
    out = []
    for (cat, lang, topic), n in sorted(spec.items()):
        out += [
            MatchItem(f"{cat}-{lang}-{topic}-{i:03d}", f"corpus{i % 3}", cat, lang, topic)
            for i in range(n)
        ]
    return out


def _kept_histogram(items: list[MatchItem], dropped: set[str], cat: str, lang: str) -> Counter[str]:
    return Counter(
        it.topic
        for it in items
        if it.category == cat and it.language == lang and it.dialogue_id not in dropped
    )


def test_hh_histogram_equals_hm_per_language_when_enough_hh_exists() -> None:
    spec = {
        ("HM", "en", "work"): 3,
        ("HM", "en", "tourism"): 1,
        ("HH", "en", "work"): 7,
        ("HH", "en", "tourism"): 4,
        ("HH", "en", "finance"): 5,
        ("HM", "zh", "health"): 2,
        ("HH", "zh", "health"): 2,
        ("HH", "zh", "work"): 3,
        ("PH", "en", "finance"): 4,  # PH is never matched away
    }
    items = _items(spec)
    plan = plan_match(items, MatchConfig(), seed=7)
    dropped = set(plan.dropped)
    for lang in ("en", "zh"):
        assert _kept_histogram(items, dropped, "HH", lang) == _kept_histogram(
            items, set(), "HM", lang
        )
    assert not any(i.startswith(("HM", "PH")) for i in dropped)
    assert len(dropped) == (7 - 3) + (4 - 1) + 5 + 3
    cells = {(t.language, t.topic): t for t in plan.table}
    assert (cells["en", "work"].hm, cells["en", "work"].hh_available) == (3, 7)
    assert cells["en", "finance"].hh_selected == 0 and cells["en", "work"].shortfall == 0
    assert "work wants 3" in plan.dropped[next(i for i in dropped if "en-work" in i)]


def test_shortfall_is_reported_not_filled_from_other_topics() -> None:
    items = _items({("HM", "en", "work"): 4, ("HH", "en", "work"): 1, ("HH", "en", "health"): 9})
    plan = plan_match(items, MatchConfig(), seed=1)
    kept = _kept_histogram(items, set(plan.dropped), "HH", "en")
    assert kept == Counter({"work": 1})
    (work,) = [t for t in plan.table if t.topic == "work"]
    assert work.shortfall == 3


def test_languages_without_hm_and_disabled_matching_keep_everything() -> None:
    items = _items({("HM", "en", "work"): 1, ("HH", "en", "work"): 2, ("HH", "zh", "work"): 5})
    plan = plan_match(items, MatchConfig(), seed=1)
    assert plan.unmatched_languages == ("zh",)
    assert not any("-zh-" in i for i in plan.dropped) and len(plan.dropped) == 1
    off = plan_match(items, MatchConfig(enabled=False), seed=1)
    assert off.dropped == {} and not off.enabled


def test_ratio_scales_the_wanted_count() -> None:
    items = _items({("HM", "en", "work"): 2, ("HH", "en", "work"): 9})
    plan = plan_match(items, MatchConfig(ratio=2.0), seed=1)
    assert _kept_histogram(items, set(plan.dropped), "HH", "en") == Counter({"work": 4})


def test_selection_is_seeded_order_free_and_stable_when_hh_grows() -> None:
    items = _items({("HM", "en", "work"): 3, ("HH", "en", "work"): 10})
    a = plan_match(items, MatchConfig(), seed=5)
    assert plan_match(list(reversed(items)), MatchConfig(), seed=5).dropped == a.dropped
    assert plan_match(items, MatchConfig(), seed=6).dropped != a.dropped
    grown = [*items, MatchItem("HH-en-work-new", "c", "HH", "en", "work")]
    b = plan_match(grown, MatchConfig(), seed=5)
    kept_a = {i.dialogue_id for i in items if i.category == "HH"} - set(a.dropped)
    kept_b = {i.dialogue_id for i in grown if i.category == "HH"} - set(b.dropped)
    assert len(kept_a - kept_b) <= 1  # a new window displaces at most one


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.tuples(
            st.sampled_from(["HH", "HM"]), st.sampled_from(["en", "zh"]), st.sampled_from(TOPICS)
        ),
        st.integers(0, 6),
    ),
    st.integers(0, 2**31),
)
def test_property_kept_hh_is_min_of_wanted_and_available(
    spec: dict[tuple[str, str, str], int], seed: int
) -> None:
    items = _items(spec)
    plan = plan_match(items, MatchConfig(), seed=seed)
    dropped = set(plan.dropped)
    for lang in ("en", "zh"):
        hm = _kept_histogram(items, set(), "HM", lang)
        hh_all = _kept_histogram(items, set(), "HH", lang)
        hh = _kept_histogram(items, dropped, "HH", lang)
        if not hm:
            assert hh == hh_all
            continue
        for topic in TOPICS:
            assert hh[topic] == min(hm[topic], hh_all[topic])
    # inputs = kept + dropped: nothing disappears outside the plan
    assert dropped <= {i.dialogue_id for i in items}


def _workdir(root: Path, rows: list[tuple[str, str, str]]) -> Path:
    """A rendered work directory of (dialogue id, category, topic) rows, two turns each."""
    drows, trows = [], []
    for did, cat, topic in rows:
        (root / "audio").mkdir(parents=True, exist_ok=True)
        (root / "audio" / f"{did}.flac").write_bytes(did.encode())
        drows.append(
            {
                "dialogue_id": did,
                "source_id": did,
                "corpus": "c",
                "category": cat,
                "language": "en",
                "topic": topic,
                "speaker_a": "a",
                "speaker_b": "b",
                "audio_path": f"audio/{did}.flac",
                "sha256": "0" * 64,
                "duration_s": 30.0,
                "sample_rate": 16000,
                "num_channels": 1,
                "n_turns": 2,
            }
        )
        trows += [
            {
                "dialogue_id": did,
                "turn_index": k,
                "speaker": "ab"[k],
                "kind": "turn",
                "start_s": float(k),
                "end_s": k + 0.5,
            }
            for k in (0, 1)
        ]
    write_table(root / DIALOGUES, RENDERED_DIALOGUE_SCHEMA, drows)
    write_table(root / TURNS, RENDERED_TURN_SCHEMA, trows)
    write_table(
        root / REJECTIONS,
        REJECTION_SCHEMA,
        [
            {
                "item_id": "x",
                "corpus": "c",
                "source_path": "",
                "stage": "filter",
                "reason": "too_short",
                "detail": "",
            }
        ],
    )
    return root


def test_apply_match_keeps_inputs_equal_kept_plus_rejected(tmp_path: Path) -> None:
    wd = _workdir(
        tmp_path / "in",
        [("d1", "HH", "work"), ("d2", "HH", "work"), ("d3", "HM", "work"), ("d4", "HH", "health")],
    )
    kept, gone = apply_match(wd, tmp_path / "out", {"d2": "surplus", "d4": "surplus"})
    assert (kept, gone) == (2, 2)
    out = tmp_path / "out"
    assert [r["dialogue_id"] for r in iter_rows(out / DIALOGUES)] == ["d1", "d3"]
    assert [r["dialogue_id"] for r in iter_rows(out / TURNS)] == ["d1", "d1", "d3", "d3"]
    rej = [(r["item_id"], r["stage"], r["reason"]) for r in iter_rows(out / REJECTIONS)]
    assert rej == [
        ("x", "filter", "too_short"),
        ("d2", "match", "hh_topic_surplus"),
        ("d4", "match", "hh_topic_surplus"),
    ]
    assert sorted(p.name for p in (out / "audio").iterdir()) == ["d1.flac", "d3.flac"]
    assert (out / "audio" / "d1.flac").read_bytes() == b"d1"


def test_duration_match_picks_the_hh_windows_nearest_the_hm_lengths() -> None:
    """Duration is the pipeline's (the window it cuts): HH lengths follow the HM ones."""
    hm = [MatchItem(f"HM-{i}", "studio", "HM", "en", "work", d) for i, d in enumerate((30, 33, 36))]
    lengths = [20.0, 29.0, 31.0, 34.0, 37.0, 45.0, 55.0, 58.0, 59.0]
    hh = [MatchItem(f"HH-{i}", "c", "HH", "en", "work", d) for i, d in enumerate(lengths)]
    plan = plan_match(hm + hh, MatchConfig(), seed=3)
    kept = sorted(h.duration_s for h in hh if h.dialogue_id not in plan.dropped)
    assert kept == [29.0, 34.0, 37.0]  # nearest 30, 33, 36 in turn, each window once
    assert plan_match(list(reversed(hm + hh)), MatchConfig(), seed=3).dropped == plan.dropped
    drawn = plan_match(hm + hh, MatchConfig(duration=False), seed=3)
    assert len(drawn.dropped) == len(plan.dropped) == 6  # the same count, a seeded draw
    # a long-window corpus no longer lengthens the HH side: mean gap to HM under 1.5 s
    assert abs(sum(kept) / 3 - 33.0) < 1.5
    unknown = [MatchItem(f"HH-x{i}", "c", "HH", "en", "work") for i in range(5)]
    assert len(plan_match(hm + unknown, MatchConfig(), seed=3).dropped) == 2  # NaN: seeded order
