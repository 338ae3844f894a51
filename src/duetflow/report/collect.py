"""Dataset statistics for the report, computed in one streaming pass over the manifests.

Everything the HTML page and the dataset card show is a field of :class:`ReportData`, so the
numbers on the page, in the card, in ``report.json`` and in the Prefect artifacts are the same
numbers. Distributions are fixed-bin histograms with exact count/mean/min/max: memory stays
constant however large the corpus is. Distributions *measured from the audio* (VAD gaps,
per-speaker loudness) run on a deterministic sample of dialogues — the ``vad_sample`` with the
smallest ``seed_for(seed, "report-sample", dialogue_id)`` — so the same release always samples
the same dialogues, independently of row order.
"""

from __future__ import annotations

import heapq
import itertools
import json
import logging
import math
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from duetflow._version import __version__
from duetflow.audio.edges import change_gaps
from duetflow.audio.io import read_frames
from duetflow.audio.loudness import SILENCE_LUFS, measure
from duetflow.config import RunConfig
from duetflow.errors import DuetflowError
from duetflow.licences import UNDECLARED, release_terms
from duetflow.licences import terms as terms_of
from duetflow.manifest import iter_grouped, iter_rows
from duetflow.model import Category, Stage
from duetflow.rendering.mixdown import floor_in_file_db
from duetflow.report.sources import ReportInput
from duetflow.seeding import seed_for

log = logging.getLogger(__name__)

NO_SPLIT = "-"
MAX_EXAMPLES = 3
DEFAULT_AUDIO_SAMPLE = 24
_GAP_TOL_MS = 0.5  # rendering places samples at 1/sr; a gap of 179.99 ms is "180 ms"
_EDGE_RES_MS = 2.5  # resolution of an acoustic edge (the envelope's hop)
#: A run of exact digital zeros longer than this in a pause is a hole in the room tone (ms).
ZERO_RUN_MS = 1.0

#: Names and licences of the sources and models a release can draw on. Only the *names* are
#: shown for corpora: a dialogue's licence is its own ``licence`` column, so the card reports what
#: the data holds (the licences here are the fallback for TTS backends that record none).
LICENCES: dict[str, tuple[str, str]] = {
    "dailytalk": ("DailyTalk", "CC BY-SA 4.0"),
    "iemocap": ("IEMOCAP", "USC SAIL academic EULA (non-commercial, by request)"),
    "magicdata_ramc": ("MagicData-RAMC", "CC BY-NC-ND 4.0"),
    "studio": ("Studio recordings", "in-house; see the session consent forms"),
    "ph": (
        "Pseudo-human TTS dialogues",
        "derived: scripts + voice references from kept dialogues; the references' and TTS"
        " model's licences apply",
    ),
    "spark": ("Spark-TTS-0.5B weights", "CC BY-NC-SA 4.0"),
    "dia": ("Dia-1.6B weights", "Apache-2.0"),
    "default": (
        "eSpeak NG (offline default TTS, no cloning)",
        "GPL-3.0 engine; output unrestricted",
    ),
}

_STAGE_ORDER = {str(s): i for i, s in enumerate(Stage)}


# --- distributions ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Distribution:
    """A fixed-bin histogram with exact moments; ``in_band`` counts values inside ``band``."""

    name: str
    unit: str
    n: int
    mean: float | None
    min: float | None
    max: float | None
    edges: tuple[float, ...]
    counts: tuple[int, ...]
    below: int = 0
    above: int = 0
    band: tuple[float, float] | None = None
    in_band: int | None = None

    @property
    def in_band_share(self) -> float | None:
        if self.in_band is None or self.n == 0:
            return None
        return self.in_band / self.n

    def quantile(self, q: float) -> float | None:
        """Approximate quantile (linear inside the bin; exact to one bin width)."""
        if self.n == 0 or self.min is None or self.max is None:
            return None
        target = q * self.n
        cum = float(self.below)
        if target <= cum:
            return self.min
        for i, c in enumerate(self.counts):
            if c and cum + c >= target:
                lo, hi = self.edges[i], self.edges[i + 1]
                val = lo + (hi - lo) * (target - cum) / c
                return min(max(val, self.min), self.max)
            cum += c
        return self.max


class _Acc:
    """Streaming histogram accumulator behind a :class:`Distribution`."""

    def __init__(
        self,
        lo: float,
        hi: float,
        width: float,
        band: tuple[float, float] | None = None,
        tol: float = 0.0,
    ) -> None:
        self.bins = max(1, round((hi - lo) / width))
        self.lo, self.hi = lo, lo + self.bins * width
        self.width = width
        self.counts = np.zeros(self.bins, dtype=np.int64)
        self.n = 0
        self.total = 0.0
        self.min = math.inf
        self.max = -math.inf
        self.below = 0
        self.above = 0
        self.band = band
        self.tol = tol
        self.in_band = 0

    def add(self, x: float) -> None:
        if not math.isfinite(x):
            return
        self.n += 1
        self.total += x
        self.min = min(self.min, x)
        self.max = max(self.max, x)
        if x < self.lo:
            self.below += 1
        elif x >= self.hi:
            self.above += 1
        else:
            # the epsilon keeps 0.5 in [0.50, 0.52) despite 0.5 / 0.02 = 24.999...
            idx = int(math.floor((x - self.lo) / self.width + 1e-9))
            self.counts[min(self.bins - 1, idx)] += 1
        if self.band is not None and self.band[0] - self.tol <= x <= self.band[1] + self.tol:
            self.in_band += 1

    def freeze(self, name: str, unit: str, band: tuple[float, float] | None = None) -> Distribution:
        edges = tuple(round(self.lo + i * self.width, 9) for i in range(self.bins + 1))
        return Distribution(
            name=name,
            unit=unit,
            n=self.n,
            mean=self.total / self.n if self.n else None,
            min=self.min if self.n else None,
            max=self.max if self.n else None,
            edges=edges,
            counts=tuple(int(c) for c in self.counts),
            below=self.below,
            above=self.above,
            band=band if band is not None else self.band,
            in_band=self.in_band if self.band is not None else None,
        )


# --- report records -----------------------------------------------------------------------------


@dataclass(frozen=True)
class CountRow:
    """Dialogues, hours and turns of one split × category × language × corpus cell."""

    split: str
    category: str
    language: str
    corpus: str
    dialogues: int
    seconds: float
    turns: int

    @property
    def hours(self) -> float:
        return self.seconds / 3600.0


@dataclass(frozen=True)
class DesignRow:
    """Dialogues and hours of one category × language × topic × system × strategy × backend cell.

    The Turing-test design at a glance (the layout of the seed study's dataset table): topics
    per category and language, HM dialogues per S2S system and elicitation strategy, PH
    dialogues per TTS backend. ``system`` is ``"<name> <version>"`` (HM), else empty; so are
    ``strategy`` (studio sessions) and ``tts_backend`` (PH).
    """

    category: str
    language: str
    topic: str
    system: str
    strategy: str
    tts_backend: str
    dialogues: int
    seconds: float

    @property
    def hours(self) -> float:
        return self.seconds / 3600.0


@dataclass(frozen=True)
class RejectionRow:
    stage: str
    reason: str
    count: int
    corpora: tuple[str, ...]
    examples: tuple[str, ...]


@dataclass(frozen=True)
class SourceStats:
    """Turn-taking statistics of one corpus's *source* dialogues before filtering.

    Read from the process stage's ``stats.json``
    (``duetflow.turntaking.stats.CorpusStats.to_dict()``):
    ``fto``/``balance``/``overlaps`` describe all source dialogues (balance per candidate
    window), the ``kept_*`` fields the windows that were kept.
    """

    label: str
    dialogues: int | None
    windows: int | None
    kept: int | None
    rejected: int | None
    rejected_by_reason: Mapping[str, int]
    rejected_by_stage: Mapping[str, int]
    source_hours: float | None
    kept_hours: float | None
    fto: Distribution | None
    kept_fto: Distribution | None
    overlap_classes: Mapping[str, int]
    kept_overlap_classes: Mapping[str, int]
    balance: Distribution | None
    kept_balance: Distribution | None


@dataclass(frozen=True)
class PhStats:
    dialogues: int
    backends: Mapping[str, int]
    cloning: Mapping[str, int]  # "cloned" / "not cloned" / "unknown"
    similarity: Distribution
    failures: Mapping[str, int]  # synthesize-stage rejection reason -> count


@dataclass(frozen=True)
class LicenceRow:
    """One licence the report's dialogues carry, with how much of the data it covers."""

    licence: str
    name: str
    corpora: tuple[str, ...]
    dialogues: int
    seconds: float


@dataclass(frozen=True)
class Provenance:
    code_version: str
    code_versions_in_data: tuple[str, ...]
    config_hash: str
    config: Mapping[str, Any]
    inputs: tuple[tuple[str, str], ...]  # (kind, label)
    release_id: str | None
    release_meta: Mapping[str, Any]
    sources: tuple[tuple[str, str, str], ...]  # (key, name, licence)
    licences: tuple[LicenceRow, ...] = ()  # from the rows' ``licence`` column
    terms: tuple[str, ...] = ()  # what those licences imply (duetflow.licences.release_terms)


@dataclass(frozen=True)
class ReportData:
    """Everything a report shows; the one source of truth for page, card and artifacts."""

    title: str
    counts: tuple[CountRow, ...]
    rejections: tuple[RejectionRow, ...]
    distributions: Mapping[str, Distribution]
    audio_sample: tuple[str, ...]  # ids of the dialogues whose audio was measured
    audio_errors: tuple[str, ...]
    source_stats: tuple[SourceStats, ...]
    ph: PhStats
    provenance: Provenance
    notes: tuple[str, ...] = field(default_factory=tuple)
    design: tuple[DesignRow, ...] = field(default_factory=tuple)
    unmapped_topic: str = "other"

    @property
    def total_dialogues(self) -> int:
        return sum(r.dialogues for r in self.counts)

    @property
    def total_hours(self) -> float:
        return sum(r.seconds for r in self.counts) / 3600.0

    @property
    def total_turns(self) -> int:
        return sum(r.turns for r in self.counts)

    @property
    def total_rejections(self) -> int:
        return sum(r.count for r in self.rejections)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``report.json``)."""
        d = asdict(self)
        d["totals"] = {
            "dialogues": self.total_dialogues,
            "hours": self.total_hours,
            "turns": self.total_turns,
            "rejections": self.total_rejections,
        }
        return d


# --- the pass -----------------------------------------------------------------------------------


def _in_lockstep(inp: ReportInput) -> bool:
    """Whether turn rows follow dialogue rows in order (a cheap pass over the id columns)."""
    if inp.turns is None:
        return True
    turn_ids = (r["dialogue_id"] for r in iter_rows(inp.turns, ["dialogue_id"]))
    cur = next(turn_ids, None)
    for r in iter_rows(inp.dialogues, ["dialogue_id"]):
        while cur is not None and cur == r["dialogue_id"]:
            cur = next(turn_ids, None)
    return cur is None


def _zip_turns(inp: ReportInput) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Dialogue rows with their turn rows, zipped in lockstep (how stages write them)."""
    return iter_grouped(inp.dialogues, inp.turns)


def _grouped_turns(inp: ReportInput) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Fallback for a turn table not in dialogue order: index it once (logged, uses memory)."""
    import pyarrow.parquet as pq

    log.warning("%s: turns are not in dialogue order; grouping them in memory", inp.label)
    assert inp.turns is not None
    table = pq.read_table(inp.turns).sort_by(
        [("dialogue_id", "ascending"), ("turn_index", "ascending")]
    )
    ids = table.column("dialogue_id").to_pylist()
    index: dict[str, tuple[int, int]] = {}
    start = 0
    for i in range(1, len(ids) + 1):
        if i == len(ids) or ids[i] != ids[start]:
            index[ids[start]] = (start, i)
            start = i
    for row in iter_rows(inp.dialogues):
        span = index.get(row["dialogue_id"])
        rows = table.slice(span[0], span[1] - span[0]).to_pylist() if span else []
        yield row, rows


def _dialogues_with_turns(
    inp: ReportInput,
) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    return _zip_turns(inp) if _in_lockstep(inp) else _grouped_turns(inp)


def _json_obj(text: Any) -> dict[str, Any]:
    if not text:
        return {}
    try:
        v = json.loads(text)
    except (TypeError, json.JSONDecodeError):
        return {}
    return v if isinstance(v, dict) else {}


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _similarities(prov: Mapping[str, Any]) -> list[float]:
    """Clone-similarity values a PH provenance carries, whatever its exact key layout."""
    out: list[float] = []
    for key in ("clone_similarity", "similarity", "speaker_similarity", "similarity_mean"):
        v = prov.get(key)
        if isinstance(v, Mapping):
            out.extend(f for f in (_num(x) for x in v.values()) if f is not None)
        elif isinstance(v, list):
            out.extend(f for f in (_num(x) for x in v) if f is not None)
        elif (f := _num(v)) is not None:
            out.append(f)
        if out:
            return out
    pair = [
        _num(prov.get(f"{key}_{side}"))
        for key in ("clone_similarity", "similarity")
        for side in ("a", "b")
    ]
    out.extend(f for f in pair if f is not None)
    if out:
        return out
    qa = prov.get("qa")
    if isinstance(qa, Mapping):
        return _similarities(qa)
    return out


class _Collector:
    def __init__(
        self, config: RunConfig, audio_sample: int, splits: Mapping[str, str] | None = None
    ) -> None:
        self.config = config
        self.splits = splits or {}
        r, f = config.render, config.filters
        gap_band = (r.gap_ms_min, r.gap_ms_max)
        self.acc: dict[str, _Acc] = {
            "gap_ms": _Acc(-1000, 2000, 5, gap_band, _GAP_TOL_MS),
            "gap_ms_audio": _Acc(-1000, 2000, 5, gap_band, _EDGE_RES_MS),
            "floor_step_db": _Acc(-20, 20, 0.5, (-3.0, 3.0)),
            "floor_dip_db": _Acc(0, 20, 0.5, (0.0, 6.0)),
            "gap_corrections": _Acc(0, 50, 1, (0.0, 0.5)),
            "duration_s": _Acc(0, 120, 1),
            "turns_per_dialogue": _Acc(0, 200, 1),
            "utterance_share_a": _Acc(0, 1.0001, 0.02, (f.balance_min, f.balance_max)),
            "speaking_time_share_a": _Acc(0, 1.0001, 0.02),
            "loudness_a": _Acc(-70, 0, 0.5),
            "loudness_b": _Acc(-70, 0, 0.5),
            "loudness_diff": _Acc(
                -12, 12, 0.2, (-r.loudness_tolerance_lu, r.loudness_tolerance_lu)
            ),
            "loudness_a_audio": _Acc(-70, 0, 0.5),
            "loudness_b_audio": _Acc(-70, 0, 0.5),
            "loudness_diff_audio": _Acc(
                -12, 12, 0.2, (-r.loudness_tolerance_lu, r.loudness_tolerance_lu)
            ),
            "ph_similarity": _Acc(-1, 1.0001, 0.02),
        }
        self.counts: dict[tuple[str, str, str, str], list[float]] = {}
        self.design: dict[tuple[str, str, str, str, str, str], list[float]] = {}
        self.rej: dict[tuple[str, str], tuple[int, Counter[str], list[str]]] = {}
        self.ph_n = 0
        self.ph_backends: Counter[str] = Counter()
        self.ph_cloning: Counter[str] = Counter()
        self.ph_licences: dict[str, str] = {}
        self.licences: dict[str, tuple[int, float, set[str]]] = {}
        self.code_versions: Counter[str] = Counter()
        self.sample_size = audio_sample
        self.heap: list[tuple[int, str, dict[str, Any], list[dict[str, Any]], ReportInput]] = []
        self.notes: list[str] = []
        self.zero_gaps: list[str] = []  # dialogues with digital zeros in a pause

    # -- manifests --

    def dialogue(self, inp: ReportInput, row: dict[str, Any], turns: list[dict[str, Any]]) -> None:
        split = str(row.get("split") or self.splits.get(row["dialogue_id"]) or NO_SPLIT)
        key = (split, str(row["category"]), str(row["language"]), str(row["corpus"]))
        cell = self.counts.setdefault(key, [0, 0.0, 0])
        dur = float(row["duration_s"])
        cell[0] += 1
        cell[1] += dur
        cell[2] += len(turns)
        self._design(row, dur)
        lic = str(row.get("licence") or UNDECLARED)
        n_lic, s_lic, corpora = self.licences.get(lic, (0, 0.0, set()))
        corpora.add(str(row["corpus"]))
        self.licences[lic] = (n_lic + 1, s_lic + dur, corpora)
        a = self.acc
        a["duration_s"].add(dur)
        a["turns_per_dialogue"].add(len(turns))
        la, lb = _num(row.get("loudness_lufs_a")), _num(row.get("loudness_lufs_b"))
        if la is not None:
            a["loudness_a"].add(la)
        if lb is not None:
            a["loudness_b"].add(lb)
        if la is not None and lb is not None:
            a["loudness_diff"].add(la - lb)
        self._turn_stats(row, turns)
        prov = _json_obj(row.get("provenance"))
        cv = prov.get("code_version")
        if isinstance(cv, str) and (cv in self.code_versions or len(self.code_versions) < 20):
            self.code_versions[cv] += 1
        moved = _num(prov.get("gap_corrections"))
        if moved is not None:
            self.acc["gap_corrections"].add(moved)
        if str(row["category"]) == Category.PH:
            self._ph(prov)
        self._maybe_sample(inp, row, turns)

    def _design(self, row: Mapping[str, Any], dur: float) -> None:
        system = " ".join(str(row.get(k) or "") for k in ("system_name", "system_version"))
        key = (
            str(row["category"]),
            str(row["language"]),
            str(row.get("topic") or ""),
            system.strip(),
            str(row.get("strategy") or ""),
            str(row.get("tts_backend") or ""),
        )
        cell = self.design.setdefault(key, [0, 0.0])
        cell[0] += 1
        cell[1] += dur

    def _turn_stats(self, row: Mapping[str, Any], turns: Sequence[Mapping[str, Any]]) -> None:
        spk_a = row["speaker_a"]
        floor = sorted(
            (t for t in turns if t["kind"] == "turn"), key=lambda t: (t["start_s"], t["turn_index"])
        )
        for prev, nxt in itertools.pairwise(floor):
            if prev["speaker"] != nxt["speaker"]:
                self.acc["gap_ms"].add((float(nxt["start_s"]) - float(prev["end_s"])) * 1000.0)
        excl = (
            ("nonspeech", "backchannel")
            if self.config.turns.balance_excludes_backchannels
            else ("nonspeech",)
        )
        utts = [t for t in turns if t["kind"] not in excl]
        if utts:
            self.acc["utterance_share_a"].add(sum(t["speaker"] == spk_a for t in utts) / len(utts))
        speech = [t for t in turns if t["kind"] != "nonspeech"]
        total = sum(float(t["end_s"]) - float(t["start_s"]) for t in speech)
        if total > 0:
            mine = sum(
                float(t["end_s"]) - float(t["start_s"]) for t in speech if t["speaker"] == spk_a
            )
            self.acc["speaking_time_share_a"].add(mine / total)

    def _ph(self, prov: Mapping[str, Any]) -> None:
        self.ph_n += 1
        backend = prov.get("backend") or prov.get("tts_backend")
        name = str(backend) if backend else "unknown"
        self.ph_backends[name] += 1
        lic = prov.get("license") or prov.get("licence")
        if isinstance(lic, str) and lic and name not in self.ph_licences:
            engine = prov.get("engine") or prov.get("model_path") or name
            self.ph_licences[name] = f"{engine}: {lic}"
        cloned = prov.get("cloned", prov.get("clones"))
        self.ph_cloning[
            "unknown" if cloned is None else ("cloned" if cloned else "not cloned")
        ] += 1
        for s in _similarities(prov):
            self.acc["ph_similarity"].add(s)

    def rejection(self, row: Mapping[str, Any]) -> None:
        key = (str(row["stage"]), str(row["reason"]))
        n, corpora, examples = self.rej.get(key, (0, Counter(), []))
        corpora[str(row.get("corpus") or "")] += 1
        if len(examples) < MAX_EXAMPLES:
            examples.append(str(row["item_id"]))
        self.rej[key] = (n + 1, corpora, examples)

    # -- audio sample --

    def _maybe_sample(
        self, inp: ReportInput, row: dict[str, Any], turns: list[dict[str, Any]]
    ) -> None:
        if self.sample_size <= 0:
            return
        h = seed_for(self.config.seed, "report-sample", row["dialogue_id"])
        item = (-h, str(row["dialogue_id"]), row, turns, inp)
        if len(self.heap) < self.sample_size:
            heapq.heappush(self.heap, item)  # type: ignore[misc]
        elif -h > self.heap[0][0]:
            heapq.heapreplace(self.heap, item)  # type: ignore[misc]

    def measure_sample(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        chosen = sorted(self.heap, key=lambda it: it[1])
        ids: list[str] = []
        errors: list[str] = []
        for _, did, row, turns, inp in chosen:
            try:
                self._measure_audio(inp, row, turns)
                ids.append(did)
            except DuetflowError as e:
                log.warning("report: audio of %s not measured: %s", did, e)
                errors.append(f"{did}: {e}")
        return tuple(ids), tuple(errors)

    def _measure_audio(
        self, inp: ReportInput, row: Mapping[str, Any], turns: Sequence[Mapping[str, Any]]
    ) -> None:
        path = inp.audio(row)
        data, sr = read_frames(path)
        data2 = data if data.ndim == 2 else data[:, None]
        spk = (row["speaker_a"], row["speaker_b"])

        def track(speaker: str) -> np.ndarray[Any, np.dtype[np.float32]]:
            if data2.shape[1] >= 2:
                return np.ascontiguousarray(data2[:, spk.index(speaker)])
            return np.asarray(data2.mean(axis=1), dtype=np.float32)

        floor_turns = [
            (str(t["speaker"]), float(t["start_s"]), float(t["end_s"]))
            for t in turns
            if t["kind"] == "turn"
        ]
        level = floor_in_file_db(_json_obj(row.get("provenance")))
        digital = level is not None and math.isinf(level)
        mono = np.asarray(data2.mean(axis=1), dtype=np.float32)
        for m in change_gaps(
            mono, sr, floor_turns, digital=digital, floor_db=None if digital else level
        ):
            if m is None:
                continue
            self.acc["gap_ms_audio"].add(m.gap / sr * 1000.0)
            if not m.floor.digital:
                self.acc["floor_step_db"].add(m.step_db)
                self.acc["floor_dip_db"].add(m.dip_db)
            if not digital and m.zero_run > ZERO_RUN_MS / 1000.0 * sr:
                self.zero_gaps.append(str(row["dialogue_id"]))
        lufs = [_speaker_loudness(track(s), sr, turns, s, data2.shape[1] >= 2) for s in spk]
        if lufs[0] is not None:
            self.acc["loudness_a_audio"].add(lufs[0])
        if lufs[1] is not None:
            self.acc["loudness_b_audio"].add(lufs[1])
        if lufs[0] is not None and lufs[1] is not None:
            self.acc["loudness_diff_audio"].add(lufs[0] - lufs[1])


def _speaker_loudness(
    x: np.ndarray[Any, np.dtype[np.float32]],
    sr: int,
    turns: Sequence[Mapping[str, Any]],
    speaker: str,
    own_channel: bool,
) -> float | None:
    """BS.1770 loudness of one speaker's turns (their own channel, or solo parts of a mix)."""
    others = [
        (float(t["start_s"]), float(t["end_s"]))
        for t in turns
        if t["speaker"] != speaker and t["kind"] != "nonspeech"
    ]
    parts = []
    for t in turns:
        if t["speaker"] != speaker or t["kind"] == "nonspeech":
            continue
        s, e = float(t["start_s"]), float(t["end_s"])
        if not own_channel and any(o0 < e and s < o1 for o0, o1 in others):
            continue
        parts.append(x[max(0, int(s * sr)) : min(len(x), int(e * sr))])
    if not parts:
        return None
    m = measure(np.concatenate(parts).astype(np.float32), sr)
    return m.lufs if m.lufs > SILENCE_LUFS else None


# --- source turn-taking stats ------------------------------------------------------------------


def _dist_from_hist(name: str, unit: str, d: Any, scale: float = 1.0) -> Distribution | None:
    """A Distribution from a stats.json histogram (``turntaking.stats.Histogram.to_dict()``).

    ``scale`` converts units (seconds → ms). Min/max are not stored there, so they are the
    outer edges of the first and last non-empty bins.
    """
    if not isinstance(d, Mapping):
        return None
    edges, counts = d.get("edges"), d.get("counts")
    if not isinstance(edges, list) or not isinstance(counts, list):
        return None
    if len(edges) != len(counts) + 1:
        return None
    e = tuple(round(float(x) * scale, 9) for x in edges)
    c: tuple[int, ...] = tuple(int(x) for x in counts)
    below = int(d.get("underflow", d.get("below", 0)) or 0)
    above = int(d.get("overflow", d.get("above", 0)) or 0)
    total = int(sum(c))
    n = int(d.get("n") or (total + below + above))
    mean = _num(d.get("mean"))
    if mean is not None:
        mean *= scale
    elif total:
        mids = [(e[i] + e[i + 1]) / 2 for i in range(len(c))]
        mean = sum(m * k for m, k in zip(mids, c, strict=True)) / total
    nz = [i for i, k in enumerate(c) if k]
    return Distribution(
        name=name,
        unit=unit,
        n=n,
        mean=mean,
        min=e[nz[0]] if nz else None,
        max=e[nz[-1] + 1] if nz else None,
        edges=e,
        counts=c,
        below=below,
        above=above,
    )


def _int_map(v: Any) -> dict[str, int]:
    if not isinstance(v, Mapping):
        return {}
    out: dict[str, int] = {}
    for k, x in v.items():
        if isinstance(x, int | float):
            out[str(k)] = int(x)
    return out


def _opt_int(v: Any) -> int | None:
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _hours(v: Any) -> float | None:
    f = _num(v)
    return None if f is None else f / 3600.0


def _one_source(label: str, d: Mapping[str, Any]) -> SourceStats:
    # CorpusStats stores FTOs in seconds under "fto"; "fto_ms" is accepted as milliseconds.
    fto_scale = 1.0 if "fto_ms" in d else 1000.0
    fto_key = "fto_ms" if "fto_ms" in d else "fto"
    by_reason = _int_map(d.get("rejected_by_reason"))
    rejected = _opt_int(d.get("rejected"))
    return SourceStats(
        label=label,
        dialogues=_opt_int(d.get("dialogues")),
        windows=_opt_int(d.get("windows")),
        kept=_opt_int(d.get("kept")),
        rejected=rejected if rejected is not None else (sum(by_reason.values()) or None),
        rejected_by_reason=by_reason,
        rejected_by_stage=_int_map(d.get("rejected_by_stage")),
        source_hours=_hours(d.get("source_duration_s")),
        kept_hours=_hours(d.get("kept_duration_s")),
        fto=_dist_from_hist(
            f"{label}: floor-transfer offset, all sources", "ms", d.get(fto_key), fto_scale
        ),
        kept_fto=_dist_from_hist(
            f"{label}: floor-transfer offset, kept windows",
            "ms",
            d.get(f"kept_{fto_key}"),
            fto_scale,
        ),
        overlap_classes=_int_map(d.get("overlaps") or d.get("overlap_classes")),
        kept_overlap_classes=_int_map(d.get("kept_overlaps")),
        balance=_dist_from_hist(
            f"{label}: speaker B utterance share, all windows",
            "share",
            d.get("balance_b_share") or d.get("balance"),
        ),
        kept_balance=_dist_from_hist(
            f"{label}: speaker B utterance share, kept windows",
            "share",
            d.get("kept_balance_b_share"),
        ),
    )


def parse_source_stats(label: str, d: Mapping[str, Any]) -> list[SourceStats]:
    """One :class:`SourceStats` per corpus of a ``stats.json``.

    The process stage writes ``{"total": {...}, "corpora": {name: {...}}}``; a bare per-corpus
    object is read as one source named ``label``.
    """
    corpora = d.get("corpora")
    if isinstance(corpora, Mapping) and corpora:
        return [
            _one_source(str(k), v) for k, v in sorted(corpora.items()) if isinstance(v, Mapping)
        ]
    return [_one_source(str(d.get("corpus") or label), d)]


# --- entry point --------------------------------------------------------------------------------


_DIST_META: dict[str, tuple[str, str]] = {
    "gap_ms": ("inter-turn gap at speaker changes (turn rows)", "ms"),
    "gap_ms_audio": ("acoustic gap at speaker changes (edges on the audio, audio sample)", "ms"),
    "floor_step_db": ("floor step across a pause, 2nd half − 1st half (audio sample)", "dB"),
    "floor_dip_db": ("quietest 20 ms of a pause under its floor (audio sample)", "dB"),
    "gap_corrections": ("gaps moved after the confirmation on the audio, per dialogue", "gaps"),
    "duration_s": ("dialogue duration", "s"),
    "turns_per_dialogue": ("turns per dialogue", "turns"),
    "utterance_share_a": ("speaker A share of utterances", "share"),
    "speaking_time_share_a": ("speaker A share of speaking time", "share"),
    "loudness_a": ("speaker A loudness (manifest)", "LUFS"),
    "loudness_b": ("speaker B loudness (manifest)", "LUFS"),
    "loudness_diff": ("loudness A − B (manifest)", "LU"),
    "loudness_a_audio": ("speaker A loudness (measured, audio sample)", "LUFS"),
    "loudness_b_audio": ("speaker B loudness (measured, audio sample)", "LUFS"),
    "loudness_diff_audio": ("loudness A − B (measured, audio sample)", "LU"),
    "ph_similarity": ("PH clone similarity", "cosine"),
}


def _config_from_release(meta: Mapping[str, Any] | None) -> RunConfig | None:
    """The config a release was built with, as far as RELEASE.json records it.

    Publish records the sections the report needs (``render_config``, ``release_config``);
    a full ``config`` object is used when present.
    """
    meta = meta or {}
    data: dict[str, Any] = {}
    if isinstance(meta.get("config"), Mapping):
        data = dict(meta["config"])
    for section in ("render", "release", "filters", "turns", "window"):
        v = meta.get(f"{section}_config")
        if isinstance(v, Mapping):
            data[section] = dict(v)
    if not data:
        return None
    try:
        return RunConfig.model_validate(data)
    except Exception as e:  # a release from another code version: fall back to defaults
        log.warning("report: release config not loadable (%s); using defaults", e)
        return None


def collect(
    inputs: Sequence[ReportInput],
    config: RunConfig | None = None,
    *,
    audio_sample: int = DEFAULT_AUDIO_SAMPLE,
    title: str | None = None,
    splits: Mapping[str, str] | None = None,
    release_id: str | None = None,
) -> ReportData:
    """Compute every number of the report in one pass (plus audio of a bounded sample).

    ``splits`` (dialogue id → split) labels work-directory rows, which carry no split column,
    so publish can report a release before it exists; ``release_id`` names it.
    """
    release = next((i for i in inputs if i.release), None)
    cfg = config or _config_from_release(release.release if release else None) or RunConfig()
    c = _Collector(cfg, audio_sample, splits)
    for inp in inputs:
        for row, turns in _dialogues_with_turns(inp):
            c.dialogue(inp, row, turns)
        if inp.rejections is not None:
            for r in iter_rows(inp.rejections):
                c.rejection(r)
    sample_ids, audio_errors = c.measure_sample()

    counts = tuple(
        CountRow(k[0], k[1], k[2], k[3], int(v[0]), float(v[1]), int(v[2]))
        for k, v in sorted(c.counts.items())
    )
    rejections = tuple(
        RejectionRow(stage, reason, n, tuple(sorted(x for x in corp if x)), tuple(ex))
        for (stage, reason), (n, corp, ex) in sorted(
            c.rej.items(), key=lambda kv: (_STAGE_ORDER.get(kv[0][0], 99), -kv[1][0], kv[0])
        )
    )
    dists = {k: c.acc[k].freeze(*_DIST_META[k]) for k in _DIST_META}
    source_stats = tuple(
        st
        for inp in inputs
        for s in inp.stats
        for st in parse_source_stats(Path(inp.label).name or inp.label, s)
    )
    failures = {r.reason: r.count for r in rejections if r.stage == Stage.SYNTHESIZE}
    ph = PhStats(
        dialogues=c.ph_n,
        backends=dict(sorted(c.ph_backends.items())),
        cloning=dict(sorted(c.ph_cloning.items())),
        similarity=dists["ph_similarity"],
        failures=failures,
    )
    corpora = sorted({r.corpus for r in counts} | {x for r in rejections for x in r.corpora})
    by_corpus: dict[str, set[str]] = {}
    for lic, (_, _, names) in c.licences.items():
        for name in names:
            by_corpus.setdefault(name, set()).add(lic)
    src: list[tuple[str, str, str]] = []
    for name in corpora:
        label = LICENCES[name][0] if name in LICENCES else name
        held = " / ".join(sorted(by_corpus.get(name, ()))) or "(no dialogue kept)"
        src.append((name, label, held))
    licence_rows = tuple(
        LicenceRow(lic, terms_of(lic).name, tuple(sorted(names)), n, secs)
        for lic, (n, secs, names) in sorted(c.licences.items())
    )
    for b in ph.backends:
        if b in c.ph_licences:  # what the backend itself recorded in the provenance
            known_name = LICENCES[b][0] if b in LICENCES else b
            src.append((f"tts:{b}", known_name, c.ph_licences[b]))
        elif b in LICENCES:
            src.append((f"tts:{b}", *LICENCES[b]))
    meta = dict(release.release) if release and release.release else {}
    rid = release_id or (release.release_id if release else None)
    prov = Provenance(
        code_version=str(meta.get("code_version") or __version__),
        code_versions_in_data=tuple(sorted(c.code_versions)),
        config_hash=str(meta.get("config_hash") or cfg.content_hash()),
        config=cfg.content_json(),
        inputs=tuple((i.kind, i.label) for i in inputs),
        release_id=rid,
        release_meta={k: v for k, v in meta.items() if k not in ("objects", "config", "stats")},
        sources=tuple(src),
        licences=licence_rows,
        terms=tuple(release_terms(c.licences)),
    )
    if title is None:
        title = f"duetflow release {rid}" if rid else "duetflow dataset report"
    notes = []
    if audio_errors:
        notes.append(f"{len(audio_errors)} sampled dialogue(s) could not be measured from audio")
    if c.zero_gaps:
        holes = ", ".join(sorted(set(c.zero_gaps))[:MAX_EXAMPLES])
        notes.append(
            f"{len(c.zero_gaps)} pause(s) hold digital zeros although room tone was laid: {holes}"
        )
    design = tuple(
        DesignRow(*k, dialogues=int(v[0]), seconds=float(v[1])) for k, v in sorted(c.design.items())
    )
    unmapped = sum(r.dialogues for r in design if r.topic == cfg.topics.unmapped)
    if unmapped:
        notes.append(
            f"{unmapped} dialogue(s) have topic '{cfg.topics.unmapped}': their source label maps"
            " to no taxonomy topic (see source_topic; extend topics.aliases)"
        )
    return ReportData(
        title=title,
        counts=counts,
        rejections=rejections,
        distributions=dists,
        audio_sample=sample_ids,
        audio_errors=audio_errors,
        source_stats=source_stats,
        ph=ph,
        provenance=prov,
        notes=tuple(notes),
        design=design,
        unmapped_topic=cfg.topics.unmapped,
    )
