"""HH ↔ HM matching: pick HH windows whose count and topics mirror the HM subset, per language.

A Turing-test listener compares human-human and human-machine dialogues; if the HH side talks
about other things than the HM side, topic alone tells them apart. So, per language that has HM
dialogues, the HH windows kept are, for every taxonomy topic, ``round(match.ratio × HM count of
that topic)`` windows of that topic (all of them when fewer exist: the shortfall is reported,
never filled from other topics, which would skew the distribution). HH windows of topics the
HM side does not have are left out. Languages without HM dialogues are not matched (nothing to
match against): their HH windows all stay.

Which windows of a topic are kept: with ``match.duration`` (the default) and every duration
known, for each HM dialogue of the topic (shortest first) the unused HH window nearest its
duration, so the two sides' lengths match (duration is something the pipeline controls: the
window it cuts; docs/fairness.md); ties, and the order without durations, by a seeded hash of
the dialogue id (``seed_for(seed, "match", id)``, smallest first). Deterministic and
independent of row order; without durations stable when the corpus grows (a new window
displaces at most one old one per topic).

:func:`plan_match` is the pure decision over :class:`MatchItem` records; :func:`apply_match`
writes a work directory without the left-out windows (their rejections, stage ``match``,
reason ``hh_topic_surplus``, are added, so inputs = kept + rejected still holds).
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from duetflow.config import MatchConfig
from duetflow.records import convert, manifest
from duetflow.records.dialogue import Category, Rejection, Stage
from duetflow.records.rows import RenderedDialogueRow
from duetflow.seeding import seed_for

REASON = "hh_topic_surplus"


@dataclass(frozen=True)
class MatchItem:
    """What matching needs to know about one dialogue."""

    dialogue_id: str
    corpus: str
    category: str
    language: str
    topic: str
    duration_s: float = math.nan


@dataclass(frozen=True)
class TopicCount:
    """One language × topic cell: HM dialogues, HH windows available and selected."""

    language: str
    topic: str
    hm: int
    hh_available: int
    hh_selected: int

    @property
    def shortfall(self) -> int:
        """HH windows wanted but not available (0 when matched exactly)."""
        return max(0, self.hm - self.hh_selected) if self.hm else 0


@dataclass(frozen=True)
class MatchPlan:
    """Dialogues to leave out (id → why), the per-topic table and the unmatched languages."""

    dropped: Mapping[str, str]
    table: tuple[TopicCount, ...]
    unmatched_languages: tuple[str, ...] = ()
    enabled: bool = True
    counts_by_corpus: Mapping[str, int] = field(default_factory=dict)  # corpus -> dropped

    def to_json(self) -> dict[str, object]:
        return {
            "enabled": self.enabled,
            "dropped": len(self.dropped),
            "dropped_by_corpus": dict(sorted(self.counts_by_corpus.items())),
            "unmatched_languages": list(self.unmatched_languages),
            "table": [asdict(t) for t in self.table],
        }


def plan_match(items: Iterable[MatchItem], config: MatchConfig, seed: int) -> MatchPlan:
    """Decide which HH windows to keep (see the module docstring)."""
    hm: dict[str, Counter[str]] = defaultdict(Counter)
    hm_lengths: dict[tuple[str, str], list[float]] = defaultdict(list)
    hh: dict[tuple[str, str], list[MatchItem]] = defaultdict(list)
    for it in items:
        if it.category == Category.HM:
            hm[it.language][it.topic] += 1
            hm_lengths[(it.language, it.topic)].append(it.duration_s)
        elif it.category == Category.HH:
            hh[(it.language, it.topic)].append(it)
    languages = sorted({lang for lang, _ in hh} | set(hm))
    if not config.enabled:
        return MatchPlan({}, (), tuple(languages), enabled=False)
    dropped: dict[str, str] = {}
    by_corpus: Counter[str] = Counter()
    table: list[TopicCount] = []
    unmatched = [lang for lang in languages if not hm.get(lang)]
    for lang in languages:
        if lang in unmatched:
            continue
        topics = sorted(set(hm[lang]) | {t for la, t in hh if la == lang})
        for topic in topics:
            cands = sorted(
                hh.get((lang, topic), []),
                key=lambda it: (seed_for(seed, "match", it.dialogue_id), it.dialogue_id),
            )
            want = round(config.ratio * hm[lang][topic])
            if config.duration:
                cands = by_duration(cands, hm_lengths.get((lang, topic), []), want)
            for it in cands[want:]:
                dropped[it.dialogue_id] = (
                    f"HH matched to the HM topics of {lang}: {topic} wants {want} HH "
                    f"window(s) for {hm[lang][topic]} HM, {len(cands)} available"
                )
                by_corpus[it.corpus] += 1
            kept = min(want, len(cands))
            table.append(TopicCount(lang, topic, hm[lang][topic], len(cands), kept))
    return MatchPlan(dropped, tuple(table), tuple(unmatched), True, dict(by_corpus))


def by_duration(cands: Sequence[MatchItem], targets: Sequence[float], want: int) -> list[MatchItem]:
    """``cands`` (in their seeded order) reordered so that the first ``want`` are, for each
    target duration in turn (shortest first, repeated when ``want`` exceeds them), the unused
    candidate nearest it (the earlier in the seeded order on a tie); the rest follow in their
    order. Unchanged when a duration is unknown (NaN) or nothing is wanted."""
    lengths = sorted(targets)
    known = all(math.isfinite(t) for t in lengths) and all(
        math.isfinite(c.duration_s) for c in cands
    )
    if not lengths or not known or want <= 0:
        return list(cands)
    left = list(cands)
    picked: list[MatchItem] = []
    for j in range(min(want, len(cands))):
        target = lengths[j % len(lengths)]
        best = min(range(len(left)), key=lambda i: (abs(left[i].duration_s - target), i))
        picked.append(left.pop(best))
    return picked + left


def items_of(workdirs: Sequence[Path]) -> Iterator[MatchItem]:
    """Match items of the dialogues of rendered work directories (one column pass each)."""
    facts = [f.name for f in fields(MatchItem) if f.name != "duration_s"]
    for wd in workdirs:
        for row in manifest.iter_records(wd / manifest.DIALOGUES, RenderedDialogueRow):
            yield MatchItem(
                **{name: str(getattr(row, name) or "") for name in facts},
                duration_s=float(row.duration_s),
            )


def apply_match(workdir: Path, out_dir: Path, dropped: Mapping[str, str]) -> tuple[int, int]:
    """``workdir`` without the ``dropped`` dialogues, written to ``out_dir`` (atomically).

    Kept rows keep their order; audio of kept dialogues is hard-linked (copied across file
    systems); the dropped windows become rejections (stage ``match``) after the existing ones.
    Returns (kept, dropped) dialogue counts.
    """
    partial = out_dir.with_name(f".{out_dir.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    kept = gone = 0
    rejections: list[Rejection] = []
    dschema = manifest.RENDERED_DIALOGUE_SCHEMA
    with (
        manifest.TableWriter(partial / manifest.DIALOGUES, dschema, 256) as dw,
        manifest.TableWriter(partial / manifest.TURNS, manifest.RENDERED_TURN_SCHEMA) as tw,
    ):
        for row, turns in manifest.iter_rendered(workdir):
            did = row.dialogue_id
            if did in dropped:
                gone += 1
                rejections.append(
                    Rejection(did, Stage.MATCH, REASON, dropped[did], corpus=row.corpus)
                )
                continue
            kept += 1
            dw.write([row.to_row()])
            tw.write([t.to_row() for t in turns])
            for rel in (row.audio_path, row.stereo_path):  # the mix, its two-channel file
                if rel is None:
                    continue
                src = workdir / rel
                dst = partial / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                try:
                    os.link(src, dst)
                except OSError:
                    shutil.copy2(src, dst)
    with manifest.TableWriter(partial / manifest.REJECTIONS, manifest.REJECTION_SCHEMA) as rw:
        rw.write(convert.rejection_to_row(r) for r in manifest.iter_rejections(workdir))
        rw.write(convert.rejection_to_row(r) for r in rejections)
    stats = workdir / "stats.json"
    if stats.is_file():
        shutil.copy2(stats, partial / "stats.json")
    if out_dir.exists():
        shutil.rmtree(out_dir)
    os.replace(partial, out_dir)
    return kept, gone


def write_plan(plan: MatchPlan, path: Path) -> None:
    """``match.json``: the plan's table and counts, for people and the report."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(plan.to_json(), indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)
