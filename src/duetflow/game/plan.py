"""Which dialogues a Turing-test game plays, in which round: balanced, seeded, opaque.

A game is ``rounds`` rounds of ``per_round`` dialogues (five, as in the seed study). The plan
is a pure function of the candidate items, the seed and the release id:

* **Categories** take the slots in turn (slot ``i`` of the game goes to the ``i mod k``-th of the
  ``k`` categories present, sorted), so every category gets the same number of items (±1) and
  each round holds every category at least once when ``per_round >= k`` (five slots over
  HH/HM/PH: 2/2/1, 2/1/2, 1/2/2 rotating).
* **Duration bins**: a category's ``j``-th item comes from the ``j mod B``-th of the ``B`` bins
  that every category has items in, so each category's items spread over the same bins in the
  same counts (±1). A bin that one category lacks is not played: its length alone would tell
  the answer. Too few items in a (category, bin) cell is a :class:`~duetflow.errors.ConfigError`
  naming the cell and the most rounds the release can balance.
* **Which** items of a cell: the smallest opaque ids, i.e. a seeded order independent of the
  rows' order. The order within a round is by opaque id too.
* **One recording per round**: items of one category and bin are swapped between rounds so no
  round plays two dialogues of the same source recording (an HH window next to the PH voiced
  from its transcript would give both away); a clash no swap solves is counted
  (:func:`shared_source_rounds`, ``game.json``).
* **Opaque id**: HMAC-SHA256 of ``release id + dialogue id`` keyed by the seed, 16 hex digits.
  Whoever holds the seed and the release can map files back to dialogues: keep the seed with
  the answer key.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from duetflow.errors import ConfigError

#: Dialogues per round in the seed study.
PER_ROUND = 5
#: Default duration bin edges (seconds): <30, 30-40, 40-50, >=50 (windows render to 20-60 s).
DEFAULT_BIN_EDGES: tuple[float, ...] = (30.0, 40.0, 50.0)


@dataclass(frozen=True, slots=True)
class GameItem:
    """The facts of one candidate dialogue that the plan and the answer key need."""

    dialogue_id: str
    source_id: str  # the source recording (a PH made from an HH transcript shares it)
    category: str
    system: str  # HM: the S2S system; PH: the TTS backend; HH: "human"
    language: str
    duration_s: float
    corpus: str
    topic: str
    audio_key: str
    sha256: str


@dataclass(frozen=True, slots=True)
class Slot:
    """One played item: round and position (both from 1), its opaque id and its facts."""

    round: int
    item: int
    opaque_id: str
    duration_bin: str
    source: GameItem


def opaque_id(seed: int, release_id: str, dialogue_id: str) -> str:
    """The name a dialogue's audio gets in a packet (see the module docstring)."""
    key = f"duetflow-game\x1f{seed}".encode()
    msg = f"{release_id}\x1f{dialogue_id}".encode()
    return hmac.new(key, msg, hashlib.sha256).hexdigest()[:16]


def bin_labels(edges: Sequence[float]) -> list[str]:
    """Labels of the bins cut at ``edges``: ``<30s``, ``30-40s``, ..., ``>=50s``."""
    edges = _checked_edges(edges)
    if not edges:
        return ["all"]
    labels = [f"<{_num(edges[0])}s"]
    labels += [f"{_num(a)}-{_num(b)}s" for a, b in itertools.pairwise(edges)]
    labels.append(f">={_num(edges[-1])}s")
    return labels


def duration_bin(duration_s: float, edges: Sequence[float]) -> str:
    """The label of the bin ``duration_s`` falls in (lower edge inclusive)."""
    labels = bin_labels(edges)
    index = sum(1 for e in edges if duration_s >= e)
    return labels[index]


def _num(x: float) -> str:
    return f"{x:g}"


def _checked_edges(edges: Sequence[float]) -> tuple[float, ...]:
    out = tuple(float(e) for e in edges)
    if any(not math.isfinite(e) or e <= 0 for e in out) or list(out) != sorted(set(out)):
        raise ConfigError(f"duration bin edges must be increasing positive seconds, got {out}")
    return out


def plan_rounds(
    items: Iterable[GameItem],
    rounds: int,
    *,
    seed: int,
    release_id: str,
    edges: Sequence[float] = DEFAULT_BIN_EDGES,
    per_round: int = PER_ROUND,
) -> list[Slot]:
    """The slots of a game (module docstring), in round and item order."""
    if rounds < 1 or per_round < 1:
        raise ConfigError(f"a game needs rounds >= 1 and per_round >= 1, got {rounds}/{per_round}")
    pools: dict[str, dict[str, list[tuple[str, GameItem]]]] = defaultdict(lambda: defaultdict(list))
    for it in items:
        b = duration_bin(it.duration_s, edges)
        pools[it.category][b].append((opaque_id(seed, release_id, it.dialogue_id), it))
    cats = sorted(pools)
    if len(cats) < 2:
        raise ConfigError(
            f"a game needs dialogues of at least two categories, found {cats or 'none'}"
        )
    labels = bin_labels(edges)
    shared = [b for b in labels if all(pools[c].get(b) for c in cats)]
    if not shared:
        raise ConfigError("no duration bin holds dialogues of every category: " + _pool_text(pools))
    short = _shortfall(pools, cats, shared, rounds * per_round)
    if short:
        best = max(
            (
                n
                for n in range(rounds - 1, 0, -1)
                if not _shortfall(pools, cats, shared, n * per_round)
            ),
            default=0,
        )
        raise ConfigError(
            f"cannot balance {rounds} round(s) of {per_round}: {short}; the release balances at "
            f"most {best} round(s) ({_pool_text(pools)})"
        )
    picked = {
        c: _category_items(pools[c], shared, _count(c, cats, rounds * per_round)) for c in cats
    }
    taken = {c: 0 for c in cats}
    rounds_: list[list[tuple[str, str, GameItem]]] = []
    for r in range(rounds):
        members: list[tuple[str, str, GameItem]] = []
        for i in range(r * per_round, (r + 1) * per_round):
            c = cats[i % len(cats)]
            members.append(picked[c][taken[c]])
            taken[c] += 1
        rounds_.append(members)
    _separate_sources(rounds_)
    slots: list[Slot] = []
    for r, members in enumerate(rounds_):
        for pos, (oid, b, it) in enumerate(sorted(members, key=lambda m: m[0]), start=1):
            slots.append(Slot(r + 1, pos, oid, b, it))
    return slots


def _clashes(members: Sequence[tuple[str, str, GameItem]]) -> list[int]:
    """Positions of members whose source recording an earlier member of the round shares."""
    seen: set[str] = set()
    out = []
    for i, (_, _, it) in enumerate(members):
        if it.source_id in seen:
            out.append(i)
        seen.add(it.source_id)
    return out


def _separate_sources(rounds: list[list[tuple[str, str, GameItem]]]) -> None:
    """Swap items between rounds so no round plays two dialogues of one recording (an HH
    window and the PH made from its transcript would give each other away). A swap exchanges
    items of the same category and bin, so the balance holds; a clash no swap can solve stays
    (the export counts it)."""
    for r, members in enumerate(rounds):
        for i in _clashes(members):
            _, b, it = members[i]
            for r2, other in enumerate(rounds):
                if r2 == r:
                    continue
                j = next(
                    (
                        j
                        for j, (_, b2, it2) in enumerate(other)
                        if it2.category == it.category
                        and b2 == b
                        and it2.source_id not in {m[2].source_id for m in members}
                        and it.source_id
                        not in {m[2].source_id for k, m in enumerate(other) if k != j}
                    ),
                    None,
                )
                if j is not None:
                    members[i], other[j] = other[j], members[i]
                    break


def shared_source_rounds(slots: Sequence[Slot]) -> int:
    """Rounds that still play two dialogues of one source recording."""
    by_round: dict[int, list[str]] = defaultdict(list)
    for s in slots:
        by_round[s.round].append(s.source.source_id)
    return sum(1 for ids in by_round.values() if len(ids) != len(set(ids)))


def _count(cat: str, cats: Sequence[str], total: int) -> int:
    """Slots category ``cat`` gets of ``total`` dealt in turn over ``cats``."""
    k, i = len(cats), cats.index(cat)
    return total // k + (1 if i < total % k else 0)


def _bin_count(j_total: int, b_index: int, n_bins: int) -> int:
    return j_total // n_bins + (1 if b_index < j_total % n_bins else 0)


def _shortfall(
    pools: Mapping[str, Mapping[str, Sequence[object]]],
    cats: Sequence[str],
    shared: Sequence[str],
    total: int,
) -> str:
    for c in cats:
        n = _count(c, cats, total)
        for bi, b in enumerate(shared):
            need = _bin_count(n, bi, len(shared))
            have = len(pools[c].get(b, ()))
            if have < need:
                return f"{c} in bin {b} needs {need} dialogue(s), has {have}"
    return ""


def _category_items(
    pool: Mapping[str, Sequence[tuple[str, GameItem]]], shared: Sequence[str], n: int
) -> list[tuple[str, str, GameItem]]:
    """``n`` items of one category, the ``j``-th from bin ``j mod B``, smallest ids first."""
    ordered = {b: sorted(pool[b], key=lambda p: p[0]) for b in shared}
    out: list[tuple[str, str, GameItem]] = []
    for j in range(n):
        b = shared[j % len(shared)]
        oid, it = ordered[b][j // len(shared)]
        out.append((oid, b, it))
    return out


def _pool_text(pools: Mapping[str, Mapping[str, Sequence[object]]]) -> str:
    cells = [f"{c}/{b}: {len(v)}" for c in sorted(pools) for b, v in sorted(pools[c].items())]
    return "available " + ", ".join(cells)
