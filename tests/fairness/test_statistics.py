"""The audit's statistics against slower, obvious second computations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from duetflow.fairness.compare import auc, classify, cohens_d, loo_scores, rank_test, wilson


def test_loo_scores_equal_refitting_without_each_dialogue() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((23, 5))
    y = np.arange(23) % 3 == 0
    fast = loo_scores(x, y)
    for i in range(23):
        keep = np.arange(23) != i
        ca = x[keep & y].mean(axis=0)
        cb = x[keep & ~y].mean(axis=0)
        slow = ((x[i] - cb) ** 2).sum() - ((x[i] - ca) ** 2).sum()
        assert fast[i] == pytest.approx(slow)


def test_auc_counts_pairs() -> None:
    rng = np.random.default_rng(2)
    s = np.round(rng.standard_normal(30), 1)  # ties on purpose
    y = rng.random(30) < 0.4
    pairs = [(a, b) for a in s[y] for b in s[~y]]
    slow = sum(1.0 if a > b else 0.5 if a == b else 0.0 for a, b in pairs) / len(pairs)
    assert auc(s, y) == pytest.approx(slow)


def test_wilson_interval() -> None:
    lo, hi = wilson(8, 10)  # a textbook value
    assert (round(lo, 3), round(hi, 3)) == (0.490, 0.943)
    assert wilson(10, 10)[1] == pytest.approx(1.0) and wilson(0, 10)[0] == pytest.approx(0.0)
    assert wilson(10, 10)[0] == pytest.approx(0.722, abs=1e-3)


def test_d_and_rank_test_edges() -> None:
    a, b = np.array([1.0, 2, 3, 4]), np.array([3.0, 4, 5, 6])
    assert cohens_d(a, b) == pytest.approx(-2 / math.sqrt(5 / 3))
    assert cohens_d(np.full(5, 0.18), np.full(5, 0.3)) == -math.inf
    assert cohens_d(np.full(5, 0.18), np.full(5, 0.18)) == 0
    assert rank_test(np.full(5, 1.0), np.full(5, 1.0)) == 1.0
    assert rank_test(np.full(9, 0.18), np.full(9, 0.3)) < 1e-3


def test_classifier_on_noise_is_at_chance_and_on_a_shift_is_not() -> None:
    rng = np.random.default_rng(4)
    y = np.arange(40) < 20
    noise = classify(rng.standard_normal((40, 6)), y, list("abcdef"), np.random.default_rng(0))
    assert noise.p_permutation > 0.05 and noise.auc_lo < 0.5 < noise.auc_hi
    shifted = rng.standard_normal((40, 6))
    shifted[y, 2] += 3.0
    k = classify(shifted, y, list("abcdef"), np.random.default_rng(0))
    assert k.accuracy > 0.85 and k.p_permutation == pytest.approx(0.001)
    const = np.ones((40, 2))
    flat = classify(const, y, ["x", "y"], np.random.default_rng(0))
    assert flat.cues == () and flat.accuracy == 0.5 and flat.p_permutation == 1.0
