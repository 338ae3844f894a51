"""Training data for an AI judge: HH/HM pairs 1:1 with the responder's turns marked.

The seed study also trains and tests evaluator models on the question judges answer (is
speaker B human?), on HH and HM dialogues in equal numbers. :func:`export_judge_pairs` writes
that set from one split of a release, so a judge model can be trained without re-deriving
labels::

    OUT/judge.jsonl     one dialogue per line: pair, label (B is "human" in HH, "machine" in
                        HM), category, language, topic, system, audio, duration, and its turns
                        with speaker "A"/"B" and ``responder: true`` on speaker B's turns
    OUT/pairs.csv       pair, language, HH dialogue id and topic, HM dialogue id and topic
    OUT/audio/<dialogue id>.flac   the release's audio, checksum-verified
    OUT/summary.json    counts: pairs per language, the HH and HM left unpaired

Pairing, per language: first HH and HM of the same topic (the smallest seeded hashes first),
then what is left of the language, across topics. Every HH and HM dialogue of the split is in
one pair or counted as unpaired; PH is not part of this set.
"""

from __future__ import annotations

import csv
import hashlib
import json
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duetflow.config import RunConfig
from duetflow.errors import ConfigError
from duetflow.game.packets import system_of
from duetflow.records.manifest import iter_record_groups, iter_records
from duetflow.records.rows import ReleaseDialogueRow, RenderedTurnRow
from duetflow.release.layout import manifest_key, read_release_json, resolve_release
from duetflow.release.table_schemas import SPLITS
from duetflow.storage import open_store


@dataclass(frozen=True, slots=True)
class _Fact:
    dialogue_id: str
    category: str
    language: str
    topic: str
    rank: str  # seeded hash: the pairing order


@dataclass(frozen=True)
class JudgeExport:
    """What :func:`export_judge_pairs` wrote."""

    release_id: str
    out: Path
    pairs: int
    unpaired_hh: int
    unpaired_hm: int


def _rank(seed: int, dialogue_id: str) -> str:
    return hashlib.sha256(f"duetflow-judge\x1f{seed}\x1f{dialogue_id}".encode()).hexdigest()


def pair_dialogues(facts: Sequence[_Fact]) -> tuple[list[tuple[_Fact, _Fact]], int, int]:
    """HH/HM pairs (module docstring) and the HH and HM left unpaired."""
    pairs: list[tuple[_Fact, _Fact]] = []
    unpaired = {"HH": 0, "HM": 0}
    by_lang: dict[str, dict[str, list[_Fact]]] = defaultdict(lambda: defaultdict(list))
    for f in facts:
        by_lang[f.language][f.category].append(f)
    for lang in sorted(by_lang):
        hh = sorted(by_lang[lang]["HH"], key=lambda f: f.rank)
        hm = sorted(by_lang[lang]["HM"], key=lambda f: f.rank)
        used: set[str] = set()
        for topic in sorted({f.topic for f in hh} & {f.topic for f in hm}):
            a = [f for f in hh if f.topic == topic]
            b = [f for f in hm if f.topic == topic]
            for x, y in zip(a, b, strict=False):
                pairs.append((x, y))
                used.update((x.dialogue_id, y.dialogue_id))
        rest_hh = [f for f in hh if f.dialogue_id not in used]
        rest_hm = [f for f in hm if f.dialogue_id not in used]
        pairs.extend(zip(rest_hh, rest_hm, strict=False))
        n = min(len(rest_hh), len(rest_hm))
        unpaired["HH"] += len(rest_hh) - n
        unpaired["HM"] += len(rest_hm) - n
    pairs.sort(key=lambda p: (p[0].language, p[0].rank))
    return pairs, unpaired["HH"], unpaired["HM"]


def judge_record(
    pair: str, row: ReleaseDialogueRow, turns: Sequence[RenderedTurnRow]
) -> dict[str, Any]:
    """One line of ``judge.jsonl``."""
    return {
        "pair": pair,
        "dialogue_id": row.dialogue_id,
        "label": "human" if row.category == "HH" else "machine",
        "category": row.category,
        "language": row.language,
        "topic": row.topic,
        "system": system_of(row),
        "audio": f"audio/{row.dialogue_id}.flac",
        "duration_s": row.duration_s,
        "turns": [
            {
                "speaker": "B" if t.speaker == row.speaker_b else "A",
                "responder": t.speaker == row.speaker_b,
                "kind": t.kind,
                "start_s": t.start_s,
                "end_s": t.end_s,
                "text": t.text,
            }
            for t in turns
        ],
    }


def export_judge_pairs(
    store_uri: str,
    release: str,
    out: str | Path,
    *,
    split: str = "train",
    seed: int = 0,
    language: str | None = None,
    config: RunConfig | None = None,
) -> JudgeExport:
    """Write the HH/HM judge set of one split (module docstring)."""
    if split != "all" and split not in SPLITS:
        raise ConfigError(f"unknown split {split!r}: choose one of {', '.join(SPLITS)} or all")
    cfg = config or RunConfig()
    store = open_store(store_uri, cfg.release)
    rid = resolve_release(store, release)
    objects = {o["key"]: o["sha256"] for o in read_release_json(store, rid)["objects"]}
    dest = Path(out)
    if (dest / "judge.jsonl").exists():
        raise ConfigError(f"{dest} already holds a judge set (judge.jsonl): pick another folder")
    (dest / "audio").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".judge-", dir=dest) as tmp:
        local = {
            name: store.get_file(manifest_key(rid, name), Path(tmp) / f"{name}.parquet",
                                 objects[manifest_key(rid, name)])
            for name in ("dialogues", "turns")
        }  # fmt: skip
        facts = [
            _Fact(r.dialogue_id, r.category, r.language, r.topic, _rank(seed, r.dialogue_id))
            for r in iter_records(local["dialogues"], ReleaseDialogueRow)
            if r.category in ("HH", "HM")
            and (split == "all" or r.split == split)
            and (language is None or r.language == language)
        ]
        pairs, left_hh, left_hm = pair_dialogues(facts)
        pair_of = {f.dialogue_id: f"pair-{i:05d}" for i, p in enumerate(pairs, start=1) for f in p}
        with (dest / "judge.jsonl").open("w", encoding="utf-8") as jf:
            for row, turns in iter_record_groups(
                local["dialogues"], local["turns"], ReleaseDialogueRow
            ):
                pair = pair_of.get(row.dialogue_id)
                if pair is None:
                    continue
                store.get_file(
                    row.audio_key, dest / "audio" / f"{row.dialogue_id}.flac", row.sha256
                )
                record = judge_record(pair, row, turns)
                jf.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
    with (dest / "pairs.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["pair", "language", "hh_dialogue_id", "hh_topic", "hm_dialogue_id", "hm_topic"])
        for i, (hh, hm) in enumerate(pairs, start=1):
            w.writerow(
                [f"pair-{i:05d}", hh.language, hh.dialogue_id, hh.topic, hm.dialogue_id, hm.topic]
            )
    per_lang: dict[str, int] = defaultdict(int)
    for hh, _ in pairs:
        per_lang[hh.language] += 1
    summary = {
        "release_id": rid,
        "split": split,
        "pairs": len(pairs),
        "pairs_per_language": dict(sorted(per_lang.items())),
        "unpaired_hh": left_hh,
        "unpaired_hm": left_hm,
    }
    (dest / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    return JudgeExport(rid, dest, len(pairs), left_hh, left_hm)
