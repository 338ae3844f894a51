"""Deterministic train/val/test splits, stable when the corpus grows.

A dialogue's split is a pure function of its *group key* and the ratios of its category: the
key is hashed (sha256, salted with a fixed version string) to a number ``u`` in [0, 1), and
``u`` falls into the train / val / test interval of the ratios. Adding dialogues therefore never
moves an existing one, and nothing depends on the order or the set of other dialogues.

Group keys (``release.group_by``):

* ``source`` (default): the source recording (``source_id``), so the windows cut from one
  recording never straddle splits.
* ``speaker``: connected components of the speaker graph (speakers ``corpus:id`` joined by the
  dialogues they share), so no speaker is in two splits. The component is named by its smallest
  speaker; a new dialogue that joins two components can move the smaller-named one — the price
  of speaker-disjointness, reported in the log.

A PH dialogue made from an HH transcript carries its source recording's ``source_id``, so it
is in its source's group: with ``source`` grouping by construction, with ``speaker`` grouping
because it takes the group of the non-PH dialogues of that recording (its own speakers are
the cloned voices, not the source's). A group that mixes categories follows the ratios that put
the most mass on test, so test-only material (PH by default) never leaks into train — and
neither does the HH recording a PH dialogue was rewritten from (:func:`leakage_problems`).

``balance_val`` does the same for val over the categories val holds (HH:HM 1:1 with PH
test-only; reason ``val_balance_surplus``); ``release.preset: seed_study`` turns both on (the
seed study's splits: test 1:1:1, PH test-only, val HH:HM 1:1).

``balance_test`` makes the test set 1:1:1 over the categories present, per language: in each
language, each category keeps the test groups with the smallest hash until it has as many
dialogues as that language's smallest category, and the surplus is left out of the release (a
``test_balance_surplus`` rejection), never moved into train — a dialogue that was test never
becomes train in a later release.
"""

from __future__ import annotations

import hashlib
import logging
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields

from duetflow.config import ReleaseConfig
from duetflow.errors import ConfigError
from duetflow.records.rows import RenderedDialogueRow
from duetflow.release.table_schemas import SPLITS

log = logging.getLogger(__name__)

_SALT = "duetflow-split-v1"


@dataclass(frozen=True, slots=True)
class SplitItem:
    """The facts about one dialogue that splitting and the split report need.

    Publish holds one per dialogue until the split plan is drawn: slotted, with the few-valued
    fields (corpus, category, language) interned so dialogues share them.
    """

    dialogue_id: str
    source_id: str
    corpus: str
    category: str
    language: str
    speaker_a: str
    speaker_b: str
    duration_s: float

    @classmethod
    def of(cls, row: RenderedDialogueRow) -> SplitItem:
        """The split facts of a dialogue record (its fields of the same names)."""
        facts = {f.name: getattr(row, f.name) for f in fields(cls)}
        for name in _FEW_VALUED:
            facts[name] = sys.intern(facts[name])
        return cls(**facts)


_FEW_VALUED = ("corpus", "category", "language")


@dataclass(frozen=True)
class SplitPlan:
    """Split per dialogue id; ``dropped`` holds dialogues left out (id → reason detail)."""

    splits: Mapping[str, str]
    groups: Mapping[str, str]  # dialogue id -> group key
    dropped: Mapping[str, str]


@dataclass(frozen=True)
class SplitReportRow:
    split: str
    category: str
    language: str
    dialogues: int
    hours: float


def unit_hash(key: str) -> float:
    """A stable number in [0, 1) for a group key (platform- and run-independent)."""
    digest = hashlib.sha256(f"{_SALT}\x1f{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def split_for(u: float, ratios: Sequence[float]) -> str:
    """The split whose cumulative-ratio interval contains ``u``."""
    total = float(sum(ratios))
    if total <= 0 or any(r < 0 for r in ratios) or len(ratios) != 3:
        raise ConfigError(f"release.ratios: need three non-negative numbers, got {list(ratios)}")
    edge = 0.0
    for name, r in zip(SPLITS, ratios, strict=True):
        edge += r / total
        if u < edge:
            return name
    return next(n for n, r in zip(reversed(SPLITS), reversed(ratios), strict=True) if r > 0)


def _ratios(config: ReleaseConfig, category: str) -> tuple[float, float, float]:
    try:
        return config.ratios[category]
    except KeyError:
        raise ConfigError(
            f"release.ratios has no entry for category {category!r} "
            f"(configured: {sorted(config.ratios)})"
        ) from None


def _test_share(r: Sequence[float]) -> float:
    return r[2] / sum(r) if sum(r) > 0 else 0.0


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:  # the smaller name is the root, so a component is named by its minimum
            lo, hi = sorted((ra, rb))
            self.parent[hi] = lo


def group_keys(items: Sequence[SplitItem], group_by: str) -> dict[str, str]:
    """Group key per dialogue id (see the module docstring)."""
    if group_by == "source":
        named: dict[str, str] = {}  # one string per group, shared by its dialogues
        return {
            it.dialogue_id: named.setdefault(k, k)
            for it in items
            for k in (f"src:{it.source_id or it.dialogue_id}",)
        }
    if group_by == "speaker":
        derived = _derived_from_source(items)
        uf = _UnionFind()
        for it in items:
            if it.dialogue_id not in derived:
                uf.union(f"{it.corpus}:{it.speaker_a}", f"{it.corpus}:{it.speaker_b}")
        out: dict[str, str] = {}
        for it in items:
            node = derived.get(it.dialogue_id, f"{it.corpus}:{it.speaker_a}")
            out[it.dialogue_id] = f"spk:{uf.find(node)}"
        return out
    raise ConfigError(f"release.group_by must be 'source' or 'speaker', got {group_by!r}")


def _derived_from_source(items: Sequence[SplitItem]) -> dict[str, str]:
    """PH dialogue id → a speaker node of the non-PH recording it shares ``source_id`` with."""
    source_node: dict[str, str] = {}
    for it in items:
        if it.category != "PH":
            source_node.setdefault(it.source_id, f"{it.corpus}:{it.speaker_a}")
    return {
        it.dialogue_id: source_node[it.source_id]
        for it in items
        if it.category == "PH" and it.source_id in source_node
    }


def leakage_problems(items: Sequence[SplitItem], splits: Mapping[str, str]) -> list[str]:
    """PH dialogues whose source HH recording is in another split (empty list: no leakage).

    A PH dialogue made from an HH transcript shares the HH's ``source_id``; every non-PH
    dialogue of that recording must be in the PH dialogue's split (test, with the default
    ratios), else a model trained on train would have heard the content of a test item.
    """
    by_source: dict[str, list[SplitItem]] = defaultdict(list)
    for it in items:
        if it.category != "PH" and it.dialogue_id in splits:
            by_source[it.source_id].append(it)
    out: list[str] = []
    for it in items:
        if it.category != "PH" or it.dialogue_id not in splits:
            continue
        for src in by_source.get(it.source_id, []):
            if splits[src.dialogue_id] != splits[it.dialogue_id]:
                out.append(
                    f"{it.dialogue_id} ({splits[it.dialogue_id]}) is made from recording "
                    f"{it.source_id!r}, whose {src.dialogue_id} is in {splits[src.dialogue_id]}"
                )
    return out


def plan_splits(items: Iterable[SplitItem], config: ReleaseConfig) -> SplitPlan:
    """Assign every dialogue a split (see the module docstring for the rules)."""
    items = list(items)
    keys = group_keys(items, config.group_by)
    group_ratio: dict[str, tuple[float, float, float]] = {}
    for it in items:
        r = _ratios(config, it.category)
        key = keys[it.dialogue_id]
        if key not in group_ratio or _test_share(r) > _test_share(group_ratio[key]):
            group_ratio[key] = r
    group_split = {k: split_for(unit_hash(k), r) for k, r in group_ratio.items()}
    splits = {it.dialogue_id: group_split[keys[it.dialogue_id]] for it in items}
    dropped: dict[str, str] = {}
    for split, on in (("test", config.balance_test), ("val", config.balance_val)):
        if on:
            surplus = _balance_split(items, keys, splits, split)
            for did in surplus:
                del splits[did]
            dropped.update(surplus)
    return SplitPlan(splits=splits, groups=keys, dropped=dropped)


def surplus_reason(detail: str) -> str:
    """The rejection reason of a dialogue left out by balancing, from its detail."""
    return "val_balance_surplus" if detail.startswith("val ") else "test_balance_surplus"


def _balance_split(
    items: Sequence[SplitItem], keys: Mapping[str, str], splits: Mapping[str, str], split: str
) -> dict[str, str]:
    """Dialogues to leave out so ``split`` holds equal counts per category, per language."""
    per_lang: dict[str, dict[str, dict[str, list[str]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    for it in items:
        if splits.get(it.dialogue_id) == split:
            per_lang[it.language][it.category][keys[it.dialogue_id]].append(it.dialogue_id)
    dropped: dict[str, str] = {}
    for lang in sorted(per_lang):
        per_cat = per_lang[lang]
        if len(per_cat) < 2:
            continue
        counts = {c: sum(len(v) for v in g.values()) for c, g in per_cat.items()}
        target = min(counts.values())
        for cat in sorted(per_cat):
            groups = per_cat[cat]
            kept = 0
            for key in sorted(groups, key=lambda k: (unit_hash(k), k)):
                ids = groups[key]
                if kept < target:
                    kept += len(ids)
                    continue
                for did in ids:
                    dropped[did] = (
                        f"{split} set balanced to {target} dialogues per category for {lang}; "
                        f"{cat} had {counts[cat]}"
                    )
        log.info("balance %s %s: target %d per category (%s)", split, lang, target, counts)
    log.info("balance %s: %d dialogue(s) left out of %s", split, len(dropped), split)
    return dropped


def split_report(items: Iterable[SplitItem], splits: Mapping[str, str]) -> list[SplitReportRow]:
    """Counts and hours per split × category × language, sorted."""
    acc: dict[tuple[str, str, str], list[float]] = defaultdict(lambda: [0, 0.0])
    for it in items:
        split = splits.get(it.dialogue_id)
        if split is None:
            continue
        cell = acc[(split, it.category, it.language)]
        cell[0] += 1
        cell[1] += it.duration_s
    order = {s: i for i, s in enumerate(SPLITS)}
    return [
        SplitReportRow(s, c, lang, int(v[0]), round(v[1] / 3600.0, 6))
        for (s, c, lang), v in sorted(acc.items(), key=lambda kv: (order[kv[0][0]], kv[0][1:]))
    ]


def format_split_report(rows: Sequence[SplitReportRow]) -> str:
    """The split report as a Markdown table with per-split totals."""
    lines = [
        "| split | category | language | dialogues | hours |",
        "| --- | --- | --- | ---: | ---: |",
    ]
    for r in rows:
        lines.append(f"| {r.split} | {r.category} | {r.language} | {r.dialogues} | {r.hours:.3f} |")
    for s in SPLITS:
        sel = [r for r in rows if r.split == s]
        n, h = sum(r.dialogues for r in sel), sum(r.hours for r in sel)
        lines.append(f"| **{s}** | all | all | {n} | {h:.3f} |")
    return "\n".join(lines) + "\n"
