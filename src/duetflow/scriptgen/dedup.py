"""Near-duplicate scripts: the same topic said twice is one script, not two.

An LLM asked several times for a dialogue on one topic repeats itself; S2S-Arena merges such
near-duplicates, and so does duetflow when ``scripts.dedup_threshold`` is set. Scripts are
compared only within one (language, topic) group, in id order: each script is compared with
the scripts of its group kept so far, and one whose similarity to any of them reaches the
threshold is merged into the first such (its file removed, a ``near_duplicate`` rejection
naming the kept script and the score recorded). Comparing within a group is quadratic in the
scripts of a topic (tens), never in the corpus.

Two measures (``scripts.dedup_method``):

* ``tfidf`` (default): cosine of TF-IDF vectors (smoothed idf over the group; tokens are
  lower-case words, and character bigrams for CJK text, which has no word spaces);
* ``edit``: difflib's ratio (2 × matching characters / total) of the whole texts, lower case,
  whitespace collapsed: an edit-distance similarity.

Pure functions over :class:`~duetflow.tts.script.Script`; :func:`merge_near_duplicates` applies
them to a script folder.
"""

from __future__ import annotations

import difflib
import itertools
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from duetflow.records.dialogue import Rejection, Stage
from duetflow.tts.script import Script

Method = Literal["tfidf", "edit"]
#: Rejection reason of a merged near-duplicate.
NEAR_DUPLICATE = "near_duplicate"

_WORD = re.compile(r"[^\W\d_]+|\d+", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")


@dataclass(frozen=True, slots=True)
class Duplicate:
    """``script_id`` repeats ``kept_id`` (similarity ``score`` by ``method``)."""

    script_id: str
    kept_id: str
    score: float
    method: Method


def script_text(script: Script) -> str:
    """The words a script says, turns joined by spaces, lower case."""
    return " ".join(" ".join(ln.text for ln in script.lines).lower().split())


def tokens(text: str) -> list[str]:
    """Lower-case words; a CJK run becomes its character bigrams (its single character alone)."""
    out: list[str] = []
    for word in _WORD.findall(text.lower()):
        if _CJK.search(word) and len(word) > 1:
            out.extend(a + b for a, b in itertools.pairwise(word))
        else:
            out.append(word)
    return out


def tfidf_vectors(docs: Sequence[Sequence[str]]) -> list[dict[str, float]]:
    """TF-IDF vectors (raw counts × smoothed idf ``ln((1 + n) / (1 + df)) + 1``), unit length."""
    n = len(docs)
    df: Counter[str] = Counter()
    for doc in docs:
        df.update(set(doc))
    out = []
    for doc in docs:
        tf = Counter(doc)
        vec = {t: c * (math.log((1 + n) / (1 + df[t])) + 1) for t, c in tf.items()}
        norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        out.append({t: v / norm for t, v in vec.items()})
    return out


def cosine(a: dict[str, float], b: dict[str, float]) -> float:
    """Cosine of two unit-length sparse vectors."""
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b.get(t, 0.0) for t, v in a.items())


def edit_similarity(a: str, b: str) -> float:
    """difflib's ratio of two texts (1: identical)."""
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def find_near_duplicates(
    scripts: Sequence[Script], threshold: float, method: Method = "tfidf"
) -> list[Duplicate]:
    """The scripts to merge (module docstring), in id order."""
    groups: dict[tuple[str, str], list[Script]] = {}
    for s in sorted(scripts, key=lambda s: s.id):
        groups.setdefault((s.language, s.topic), []).append(s)
    out: list[Duplicate] = []
    for members in groups.values():
        texts = [script_text(s) for s in members]
        vectors = tfidf_vectors([tokens(t) for t in texts]) if method == "tfidf" else []
        kept: list[int] = []
        for i, s in enumerate(members):
            best, best_j = -1.0, -1
            for j in kept:
                score = (
                    cosine(vectors[i], vectors[j])
                    if method == "tfidf"
                    else edit_similarity(texts[i], texts[j])
                )
                if score > best:
                    best, best_j = score, j
            if best_j >= 0 and best >= threshold:
                out.append(Duplicate(s.id, members[best_j].id, round(best, 4), method))
            else:
                kept.append(i)
    return sorted(out, key=lambda d: d.script_id)


def duplicate_rejection(dup: Duplicate, threshold: float, corpus: str, path: str = "") -> Rejection:
    """The rejection recording a merged near-duplicate."""
    name = "TF-IDF cosine" if dup.method == "tfidf" else "edit similarity"
    return Rejection(
        dup.script_id,
        Stage.SCRIPT,
        NEAR_DUPLICATE,
        f"merged into {dup.kept_id}: same topic, {name} {dup.score:.3f} >= "
        f"scripts.dedup_threshold {threshold:g}",
        corpus=corpus,
        source_path=path,
    )
