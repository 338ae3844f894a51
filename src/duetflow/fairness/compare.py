"""Per language and category pair: do the cues tell the two categories apart?

For every language and every pair of its categories (``HH-HM``, ``HH-PH``, ``HM-PH``):

* per cue (:class:`CueComparison`): the standardised difference (Cohen's d with the pooled
  standard deviation, ``mean(a) - mean(b)``), a two-sided Mann-Whitney U test (rank based: no
  normality, ties corrected, constant sides handled), and whether the cue *separates* the pair
  perfectly (every value of one side below every value of the other);
* all cues together (:class:`ClassifierResult`): a nearest-centroid classifier on the
  standardised cues, leave-one-out cross-validated, with its accuracy (Wilson 95 % interval),
  the AUC of its scores (stratified bootstrap 95 % interval over the held-out scores) and a
  permutation p-value (labels shuffled, the whole leave-one-out repeated).

The classifier sees the pair's gated cues (:func:`gated_cues`: between HH and HM the
conversation's own cues are left out); NaN values are filled with the cue's median over both
sides and cues constant over both sides are dropped; the standardisation uses both sides'
values without their labels. A side with fewer than ``min_per_side`` dialogues (config
``release.cue_thresholds``) is *not judged*
(:attr:`PairAudit.judged`, with the reason in :attr:`PairAudit.note`): its numbers are shown but
gate nothing. Random draws come from ``seeding.rng_for(seed, language, pair)``: the same cues
give the same audit.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from duetflow.fairness.cues import CUE_BY_NAME, CUE_NAMES, CUES, DialogueCues, FloatArray
from duetflow.seeding import rng_for

#: Category order in pair names (``HH-PH``, never ``PH-HH``).
CATEGORY_ORDER = ("HH", "HM", "PH")
#: Conversation cues are not pipeline cues between these two (docs/fairness.md).
CONVERSATION_PAIR = ("HH", "HM")
#: Shuffles of the permutation test; resamples of the AUC bootstrap.
PERMUTATIONS = 999
BOOTSTRAPS = 1000
_Z95 = 1.959963984540054


@dataclass(frozen=True)
class CueComparison:
    """One cue between the two sides of a pair (``a`` - ``b``)."""

    cue: str
    gated: bool  # a pipeline cue for this pair (conversation cues between HH and HM are not)
    n_a: int
    n_b: int
    mean_a: float
    mean_b: float
    sd_a: float
    sd_b: float
    d: float  # Cohen's d; +-inf when both sides are constant and differ
    p_value: float  # two-sided Mann-Whitney U
    separates: bool  # every value of one side lies below every value of the other


@dataclass(frozen=True)
class ClassifierResult:
    """Leave-one-out nearest-centroid classification of the pair on its gated cues."""

    cues: tuple[str, ...]  # the cues it used (non-constant gated cues)
    accuracy: float
    accuracy_lo: float
    accuracy_hi: float
    auc: float
    auc_lo: float
    auc_hi: float
    p_permutation: float


@dataclass(frozen=True)
class PairAudit:
    """One language's category pair: every cue, the classifier, whether it can be judged."""

    language: str
    category_a: str
    category_b: str
    n_a: int
    n_b: int
    judged: bool
    note: str  # why not judged (else empty)
    cues: tuple[CueComparison, ...]
    classifier: ClassifierResult | None

    @property
    def pair(self) -> str:
        return f"{self.category_a}-{self.category_b}"

    def top(self, k: int = 3, gated_only: bool = True) -> list[CueComparison]:
        """The ``k`` cues with the largest |d| (gated ones only by default)."""
        pool = [c for c in self.cues if c.gated or not gated_only]
        return sorted(pool, key=lambda c: (-_abs_d(c.d), c.cue))[:k]


def _abs_d(d: float) -> float:
    return 0.0 if math.isnan(d) else abs(d)


def gated_cues(category_a: str, category_b: str) -> tuple[str, ...]:
    """The cues that count between two categories: never the voices' own cues, and between
    HH and HM not the conversation's own (docs/fairness.md, *Which cues the gate counts*)."""
    conversation = {category_a, category_b} == set(CONVERSATION_PAIR)
    return tuple(c.name for c in CUES if not c.voice and not (conversation and c.conversation))


def below_floor(c: CueComparison) -> bool:
    """Whether the two sides' means differ by no more than the cue's floor (:class:`Cue`)."""
    floor = CUE_BY_NAME[c.cue].floor if c.cue in CUE_BY_NAME else 0.0
    diff = abs(c.mean_a - c.mean_b)
    return floor > 0 and math.isfinite(diff) and diff <= floor


def _category_key(c: str) -> tuple[int, str]:
    return (CATEGORY_ORDER.index(c) if c in CATEGORY_ORDER else len(CATEGORY_ORDER), c)


# --- one cue ------------------------------------------------------------------------------------


def cohens_d(a: FloatArray, b: FloatArray) -> float:
    """(mean a - mean b) / pooled sd; 0 when equal constants, +-inf when distinct constants."""
    if a.size == 0 or b.size == 0:
        return math.nan
    diff = float(a.mean() - b.mean())
    dof = a.size + b.size - 2
    var = (
        ((a.size - 1) * a.var(ddof=1) if a.size > 1 else 0.0)
        + ((b.size - 1) * b.var(ddof=1) if b.size > 1 else 0.0)
    ) / max(dof, 1)
    sd = math.sqrt(var)
    if sd <= 1e-12 * max(1.0, abs(float(a.mean())), abs(float(b.mean()))):
        return (
            0.0
            if abs(diff) <= 1e-12 * max(1.0, abs(float(a.mean())))
            else math.copysign(math.inf, diff)
        )
    return diff / sd


def rank_test(a: FloatArray, b: FloatArray) -> float:
    """Two-sided Mann-Whitney U p-value (1.0 when every value is the same; NaN: a side empty)."""
    if a.size == 0 or b.size == 0:
        return math.nan
    both = np.concatenate([a, b])
    if np.all(both == both[0]):
        return 1.0
    return float(stats.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic").pvalue)


def separates(a: FloatArray, b: FloatArray) -> bool:
    """Whether every value of one side lies strictly below every value of the other."""
    if a.size == 0 or b.size == 0:
        return False
    return bool(a.max() < b.min() or b.max() < a.min())


def compare_cue(cue: str, gated: bool, a: FloatArray, b: FloatArray) -> CueComparison:
    """One cue between two sides (NaN values left out)."""
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]

    def sd(x: FloatArray) -> float:
        return float(x.std(ddof=1)) if x.size > 1 else math.nan

    return CueComparison(
        cue=cue,
        gated=gated,
        n_a=int(a.size),
        n_b=int(b.size),
        mean_a=float(a.mean()) if a.size else math.nan,
        mean_b=float(b.mean()) if b.size else math.nan,
        sd_a=sd(a),
        sd_b=sd(b),
        d=cohens_d(a, b),
        p_value=rank_test(a, b),
        separates=separates(a, b),
    )


# --- all cues: the classifier -------------------------------------------------------------------


def standardise(
    x: FloatArray, floors: Sequence[float] | None = None
) -> tuple[FloatArray, np.ndarray[tuple[int], np.dtype[np.bool_]]]:
    """Fill NaN with the column median, drop constant columns, centre, and scale each column
    by its sd, or by its floor (``floors``, the cue's smallest difference that counts) where
    the sd is smaller: a spread under the floor does not make an inaudible step look large.

    Returns the scaled matrix and which columns were kept.
    """
    x = x.copy()
    for j in range(x.shape[1]):
        col = x[:, j]
        bad = ~np.isfinite(col)
        if bad.any():
            good = col[~bad]
            col[bad] = float(np.median(good)) if good.size else 0.0
    sd = x.std(axis=0)
    keep = sd > 1e-12 * np.maximum(1.0, np.abs(x.mean(axis=0)))
    x = x[:, keep]
    scale = x.std(axis=0)
    if floors is not None:
        scale = np.maximum(scale, np.asarray(floors, dtype=np.float64)[keep])
    return np.asarray((x - x.mean(axis=0)) / scale, dtype=np.float64), keep


def loo_scores(x: FloatArray, y: np.ndarray[tuple[int], np.dtype[np.bool_]]) -> FloatArray:
    """Leave-one-out nearest-centroid scores: distance² to side b's centroid minus that to a's.

    Positive: closer to a (``y`` True). Each dialogue is scored against centroids fitted
    without it (its own side's centroid recomputed in closed form).
    """
    n_a, n_b = int(y.sum()), int((~y).sum())
    sum_a, sum_b = x[y].sum(axis=0), x[~y].sum(axis=0)
    own_n = np.where(y, n_a, n_b)[:, None].astype(np.float64)
    own_sum = np.where(y[:, None], sum_a, sum_b)
    other = np.where(y[:, None], sum_b / max(n_b, 1), sum_a / max(n_a, 1))
    own = (own_sum - x) / np.maximum(own_n - 1, 1)
    d_own = ((x - own) ** 2).sum(axis=1)
    d_other = ((x - other) ** 2).sum(axis=1)
    to_a = np.where(y, d_own, d_other)
    to_b = np.where(y, d_other, d_own)
    return np.asarray(to_b - to_a, dtype=np.float64)


def auc(scores: FloatArray, y: np.ndarray[tuple[int], np.dtype[np.bool_]]) -> float:
    """P(score of an a-dialogue > score of a b-dialogue), ties counted half."""
    pos, neg = scores[y], scores[~y]
    if pos.size == 0 or neg.size == 0:
        return math.nan
    ranks = stats.rankdata(np.concatenate([pos, neg]))
    u = ranks[: pos.size].sum() - pos.size * (pos.size + 1) / 2.0
    return float(u / (pos.size * neg.size))


def wilson(k: int, n: int) -> tuple[float, float]:
    """Wilson 95 % interval of a proportion k/n."""
    if n == 0:
        return (math.nan, math.nan)
    p = k / n
    z2 = _Z95 * _Z95
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = _Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def classify(
    x: FloatArray,
    y: np.ndarray[tuple[int], np.dtype[np.bool_]],
    cues: Sequence[str],
    rng: np.random.Generator,
) -> ClassifierResult:
    """Leave-one-out nearest centroid on ``x`` (rows: dialogues; True in ``y``: side a);
    each cue scaled by its spread or its floor, whichever is larger (:func:`standardise`)."""
    floors = [CUE_BY_NAME[c].floor if c in CUE_BY_NAME else 0.0 for c in cues]
    z_all, keep = standardise(x, floors)
    used = tuple(c for c, k in zip(cues, keep, strict=True) if k)
    n = y.size
    if z_all.shape[1] == 0:  # nothing varies: no cue can tell the sides apart
        lo, hi = wilson(0, n)
        return ClassifierResult(used, 0.5, lo, hi, 0.5, 0.5, 0.5, 1.0)
    scores = loo_scores(z_all, y)
    correct = int(((scores > 0) == y).sum())
    acc = correct / n
    lo, hi = wilson(correct, n)
    area = auc(scores, y)
    ia, ib = np.flatnonzero(y), np.flatnonzero(~y)
    boots = np.empty(BOOTSTRAPS)
    for i in range(BOOTSTRAPS):
        pick = np.concatenate([rng.choice(ia, ia.size), rng.choice(ib, ib.size)])
        boots[i] = auc(scores[pick], y[pick])
    beaten = 0
    for _ in range(PERMUTATIONS):
        yp = rng.permutation(y)
        if (((loo_scores(z_all, yp) > 0) == yp).sum()) >= correct:
            beaten += 1
    return ClassifierResult(
        cues=used,
        accuracy=acc,
        accuracy_lo=lo,
        accuracy_hi=hi,
        auc=area,
        auc_lo=float(np.percentile(boots, 2.5)),
        auc_hi=float(np.percentile(boots, 97.5)),
        p_permutation=(1 + beaten) / (1 + PERMUTATIONS),
    )


# --- the audit ----------------------------------------------------------------------------------


def _matrix(rows: Sequence[DialogueCues], cues: Sequence[str]) -> FloatArray:
    return np.array([[r.value(c) for c in cues] for r in rows], dtype=np.float64).reshape(
        len(rows), len(cues)
    )


def compare_pair(
    language: str,
    category_a: str,
    category_b: str,
    side_a: Sequence[DialogueCues],
    side_b: Sequence[DialogueCues],
    *,
    seed: int = 0,
    min_per_side: int,
) -> PairAudit:
    """Every cue and the classifier between two sides of one language."""
    gated = gated_cues(category_a, category_b)
    xa, xb = _matrix(side_a, CUE_NAMES), _matrix(side_b, CUE_NAMES)
    comparisons = tuple(
        compare_cue(c, c in gated, xa[:, j], xb[:, j]) for j, c in enumerate(CUE_NAMES)
    )
    n_a, n_b = len(side_a), len(side_b)
    few = [f"{cat} {n}" for cat, n in ((category_a, n_a), (category_b, n_b)) if n < min_per_side]
    note = f"too few dialogues to judge ({', '.join(few)} < {min_per_side})" if few else ""
    classifier = None
    if n_a >= 2 and n_b >= 2:
        cols = [CUE_NAMES.index(c) for c in gated]
        x = np.vstack([xa[:, cols], xb[:, cols]])
        y = np.concatenate([np.ones(n_a, bool), np.zeros(n_b, bool)])
        rng = rng_for(seed, "cue-audit", language, category_a, category_b)
        classifier = classify(x, y, gated, rng)
    return PairAudit(
        language, category_a, category_b, n_a, n_b, not few, note, comparisons, classifier
    )


def compare_all(
    rows: Iterable[DialogueCues], *, seed: int = 0, min_per_side: int
) -> tuple[PairAudit, ...]:
    """Every language's category pairs, in language then category order.

    Each side is taken in dialogue-id order: the audit of a release does not depend on the
    order its rows were read in (a pulled folder, a store, work directories).
    """
    groups: dict[tuple[str, str], list[DialogueCues]] = {}
    for r in sorted(rows, key=lambda r: r.dialogue_id):
        groups.setdefault((r.language, r.category), []).append(r)
    out = []
    for lang in sorted({lang for lang, _ in groups}):
        cats = sorted((c for lg, c in groups if lg == lang), key=_category_key)
        for a, b in itertools.combinations(cats, 2):
            out.append(
                compare_pair(
                    lang,
                    a,
                    b,
                    groups[(lang, a)],
                    groups[(lang, b)],
                    seed=seed,
                    min_per_side=min_per_side,
                )
            )
    return tuple(out)
