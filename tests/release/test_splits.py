"""Deterministic, addition-stable splits by group key."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duetflow.config import ReleaseConfig
from duetflow.errors import ConfigError
from duetflow.release.splits import (
    SplitItem,
    format_split_report,
    plan_splits,
    split_for,
    split_report,
    unit_hash,
)


def item(i: int, src: int | None = None, cat: str = "HH", lang: str = "en", spk=None) -> SplitItem:
    a, b = spk or (f"a{i}", f"b{i}")
    return SplitItem(f"d{i}", f"s{i if src is None else src}", "c", cat, lang, a, b, 36.0)


def test_split_for_follows_ratios() -> None:
    assert split_for(0.0, (0.8, 0.1, 0.1)) == "train"
    assert split_for(0.85, (0.8, 0.1, 0.1)) == "val"
    assert split_for(0.95, (0.8, 0.1, 0.1)) == "test"
    assert split_for(0.5, (0, 0, 1)) == "test"
    assert split_for(0.9999999999, (1, 0, 0)) == "train"
    with pytest.raises(ConfigError):
        split_for(0.5, (0, 0, 0))


def test_ratios_roughly_respected_and_deterministic() -> None:
    items = [item(i) for i in range(3000)]
    plan = plan_splits(items, ReleaseConfig())
    counts = Counter(plan.splits.values())
    assert 0.77 < counts["train"] / 3000 < 0.83
    assert 0.08 < counts["val"] / 3000 < 0.12
    assert plan == plan_splits(list(reversed(items)), ReleaseConfig())  # order-independent
    assert 0 <= unit_hash("x") < 1 and unit_hash("x") == unit_hash("x")


def test_windows_of_one_source_share_a_split() -> None:
    items = [item(i, src=i // 5) for i in range(500)]
    plan = plan_splits(items, ReleaseConfig())
    by_src: dict[str, set[str]] = {}
    for it in items:
        by_src.setdefault(it.source_id, set()).add(plan.splits[it.dialogue_id])
    assert all(len(s) == 1 for s in by_src.values())
    assert len(set(plan.splits.values())) == 3


def test_ph_is_test_only_and_mixed_groups_follow_the_most_test_heavy() -> None:
    items = [item(i, cat="PH") for i in range(50)]
    items += [item(100, src=7, cat="HH"), item(101, src=7, cat="PH")]
    plan = plan_splits(items, ReleaseConfig())
    assert set(plan.splits.values()) == {"test"}


def test_speaker_disjoint_groups() -> None:
    # speakers chain: d0 (x,y), d1 (y,z) share y -> one group; d2 stands alone
    items = [item(0, spk=("x", "y")), item(1, spk=("y", "z")), item(2, spk=("p", "q"))]
    items += [item(i) for i in range(3, 200)]
    plan = plan_splits(items, ReleaseConfig(group_by="speaker"))
    assert plan.groups["d0"] == plan.groups["d1"] == "spk:c:x"
    assert plan.splits["d0"] == plan.splits["d1"]
    seen: dict[str, str] = {}
    for it in items:
        for spk in (it.speaker_a, it.speaker_b):
            assert seen.setdefault(spk, plan.splits[it.dialogue_id]) == plan.splits[it.dialogue_id]


def test_balance_test_makes_categories_equal_and_never_moves_to_train() -> None:
    items = [item(i, cat="HH") for i in range(300)] + [item(1000 + i, cat="PH") for i in range(12)]
    items += [item(2000 + i, cat="HM") for i in range(200)]
    free = plan_splits(items, ReleaseConfig())
    plan = plan_splits(items, ReleaseConfig(balance_test=True))
    test = Counter(it.category for it in items if plan.splits.get(it.dialogue_id) == "test")
    assert len(set(test.values())) == 1 and test["PH"] == 12
    for did, split in plan.splits.items():
        assert free.splits[did] == split  # balancing only removes from test
    assert all(free.splits[d] == "test" for d in plan.dropped)
    assert len(plan.dropped) == sum(1 for s in free.splits.values() if s == "test") - 36


def test_missing_category_ratio_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="no entry for category 'HM'"):
        plan_splits([item(0, cat="HM")], ReleaseConfig(ratios={"HH": (1, 0, 0)}))


@settings(max_examples=30, deadline=None)
@given(
    n_old=st.integers(1, 60),
    n_new=st.integers(1, 30),
    per_source=st.integers(1, 4),
    group_by=st.sampled_from(["source", "speaker"]),
)
def test_adding_dialogues_never_moves_existing_ones(
    n_old: int, n_new: int, per_source: int, group_by: str
) -> None:
    cfg = ReleaseConfig(group_by=group_by)
    old = [item(i, src=i // per_source) for i in range(n_old)]
    new = [item(i, src=i // per_source) for i in range(10_000, 10_000 + n_new)]
    before = plan_splits(old, cfg).splits
    after = plan_splits(old + new, cfg).splits
    assert all(after[d] == s for d, s in before.items())


def test_split_report_counts_and_hours() -> None:
    items = [item(i, lang="en" if i % 2 else "zh") for i in range(100)]
    plan = plan_splits(items, ReleaseConfig())
    rows = split_report(items, plan.splits)
    assert sum(r.dialogues for r in rows) == 100
    assert sum(r.hours for r in rows) == pytest.approx(1.0)  # 100 × 36 s
    assert {(r.split, r.language) for r in rows} <= {
        (s, lang) for s in ("train", "val", "test") for lang in ("en", "zh")
    }
    md = format_split_report(rows)
    assert md.startswith("| split | category | language | dialogues | hours |")
    assert "| **train** | all | all |" in md
