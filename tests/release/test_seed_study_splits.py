"""``release.preset: seed_study`` reproduces the study's splits, checked on counts."""

from __future__ import annotations

from collections import Counter

import pytest

from duetflow.config import ReleaseConfig, build_config
from duetflow.errors import ConfigError
from duetflow.release.splits import SplitItem, plan_splits, surplus_reason


def _items() -> list[SplitItem]:
    out = []
    for lang, n_hh, n_hm, n_ph in (("en", 400, 150, 40), ("zh", 300, 90, 70)):
        for cat, n in (("HH", n_hh), ("HM", n_hm), ("PH", n_ph)):
            for i in range(n):
                did = f"{lang}-{cat}-{i}"
                out.append(SplitItem(did, f"src-{did}", "c", cat, lang, f"a{did}", f"b{did}", 30.0))
    return out


def test_preset_sets_both_balances_and_keeps_ph_in_test() -> None:
    cfg = build_config({"release": {"preset": "seed_study"}}, environ={}).release
    assert (cfg.balance_test, cfg.balance_val) == (True, True)
    assert cfg.ratios["PH"] == (0.0, 0.0, 1.0)
    with pytest.raises(ConfigError, match="PH in test only"):
        build_config(
            {"release": {"preset": "seed_study", "ratios": {"PH": [0.5, 0, 0.5]}}}, environ={}
        )
    with pytest.raises(ConfigError, match="leave both on"):
        build_config({"release": {"preset": "seed_study", "balance_val": False}}, environ={})


def test_seed_study_splits_on_counts() -> None:
    items = _items()
    plan = plan_splits(items, ReleaseConfig(preset="seed_study"))
    n: Counter[tuple[str, str, str]] = Counter()
    for it in items:
        if it.dialogue_id in plan.splits:
            n[(plan.splits[it.dialogue_id], it.language, it.category)] += 1
    for lang in ("en", "zh"):
        test = [n[("test", lang, c)] for c in ("HH", "HM", "PH")]
        assert len(set(test)) == 1 and test[0] > 0  # test 1:1:1
        assert n[("val", lang, "HH")] == n[("val", lang, "HM")] > 0  # val HH:HM 1:1
        assert n[("train", lang, "PH")] == n[("val", lang, "PH")] == 0  # PH test-only
        assert n[("train", lang, "HH")] > n[("train", lang, "HM")] > 0  # train keeps the rest
    # every item is kept or left out with its reason; nothing left out of train
    assert len(plan.splits) + len(plan.dropped) == len(items)
    reasons = Counter(surplus_reason(d) for d in plan.dropped.values())
    assert set(reasons) == {"test_balance_surplus", "val_balance_surplus"}
    base = plan_splits(items, ReleaseConfig())  # the same hash draws: only test/val shrink
    for did, split in plan.splits.items():
        assert base.splits[did] == split
    for did in plan.dropped:
        assert base.splits[did] in ("test", "val")
    val_left = sum(1 for d in plan.dropped.values() if d.startswith("val "))
    assert val_left == sum(
        abs(n2 - n1)
        for lang in ("en", "zh")
        for n1, n2 in [
            (
                sum(1 for it in items if it.language == lang and it.category == "HH"
                    and base.splits[it.dialogue_id] == "val"),
                sum(1 for it in items if it.language == lang and it.category == "HM"
                    and base.splits[it.dialogue_id] == "val"),
            )
        ]
    )  # fmt: skip
