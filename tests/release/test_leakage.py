"""No leakage: a PH dialogue made from an HH transcript stays with its source, in test."""

from __future__ import annotations

from collections import Counter

import pytest

from duetflow.config import ReleaseConfig
from duetflow.release.splits import SplitItem, leakage_problems, plan_splits


def hh(i: int, src: int, spk: tuple[str, str] | None = None, lang: str = "en") -> SplitItem:
    a, b = spk or (f"a{src}", f"b{src}")
    return SplitItem(f"hh{i}", f"rec{src}", "corpus", "HH", lang, a, b, 30.0)


def ph(i: int, src: int | None, voices: tuple[str, str] = ("user", "p2")) -> SplitItem:
    source = f"rec{src}" if src is not None else f"gen-{i}"
    return SplitItem(f"ph{i}", source, "ph", "PH", "en", *voices, 45.0)


@pytest.mark.parametrize("group_by", ["source", "speaker"])
def test_ph_from_hh_puts_its_source_recording_in_test(group_by: str) -> None:
    # 200 HH recordings of 2 windows; PH rewrites of 40 of them, all voiced by the same two
    # studio participants (which must not chain the recordings together)
    items = [hh(2 * r + k, r) for r in range(200) for k in range(2)]
    items += [ph(r, r) for r in range(0, 200, 5)]
    items += [ph(1000 + i, None) for i in range(10)]  # generated scripts: no source
    cfg = ReleaseConfig(group_by=group_by)  # type: ignore[arg-type]
    plan = plan_splits(items, cfg)
    assert leakage_problems(items, plan.splits) == []
    for it in items:
        if it.category == "PH":
            assert plan.splits[it.dialogue_id] == "test"
    derived = {f"rec{r}" for r in range(0, 200, 5)}
    for it in items:
        if it.category == "HH" and it.source_id in derived:
            assert plan.splits[it.dialogue_id] == "test", it
    # the other recordings are still split by the HH ratios
    free = Counter(
        plan.splits[it.dialogue_id]
        for it in items
        if it.category == "HH" and it.source_id not in derived
    )
    assert free["train"] > free["test"] > 0


def test_leakage_problems_name_both_sides() -> None:
    items = [hh(1, 7), hh(2, 7), ph(1, 7)]
    splits = {"hh1": "test", "hh2": "train", "ph1": "test"}
    (problem,) = leakage_problems(items, splits)
    assert "ph1 (test)" in problem and "'rec7'" in problem and "hh2 is in train" in problem


def test_balance_test_is_one_to_one_to_one_per_language() -> None:
    items = []
    for lang, counts in (("en", {"HH": 30, "HM": 12, "PH": 20}), ("zh", {"HH": 9, "PH": 25})):
        for cat, n in counts.items():
            items += [
                SplitItem(
                    f"{lang}-{cat}-{i}", f"{lang}-{cat}-{i}", "c", cat, lang, f"a{i}", f"b{i}", 30.0
                )
                for i in range(n)
            ]
    cfg = ReleaseConfig(
        balance_test=True, ratios={"HH": (0, 0, 1), "HM": (0, 0, 1), "PH": (0, 0, 1)}
    )
    plan = plan_splits(items, cfg)
    kept = Counter((it.language, it.category) for it in items if it.dialogue_id in plan.splits)
    assert kept == Counter(
        {("en", "HH"): 12, ("en", "HM"): 12, ("en", "PH"): 12, ("zh", "HH"): 9, ("zh", "PH"): 9}
    )
    assert all("for en" in d or "for zh" in d for d in plan.dropped.values())
