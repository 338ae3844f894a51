"""Dataset statistics for the report, computed in one streaming pass over the manifests.

Everything the HTML page and the dataset card show is a field of
:class:`~duetflow.report.data.ReportData`, so the numbers on the page, in the card, in
``report.json`` and in the Prefect artifacts are the same numbers. Distributions are fixed-bin
histograms with exact count/mean/min/max: memory stays constant however large the corpus is.
Distributions *measured from the audio* (VAD gaps, per-speaker loudness) run on a deterministic
sample of dialogues — the ``vad_sample`` with the smallest
``seed_for(seed, "report-sample", dialogue_id)`` — so the same release always samples the same
dialogues, independently of row order. Rows are read by :mod:`~duetflow.report.rows`, source
statistics parsed by :mod:`~duetflow.report.source_stats`.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from duetflow._version import __version__
from duetflow.audio.edges import change_gaps
from duetflow.audio.gap_tolerance import ZERO_RUN_MS, floor_in_file_db
from duetflow.audio.io import read_frames
from duetflow.audio.loudness import SILENCE_LUFS, measure
from duetflow.config import RunConfig
from duetflow.design import DesignTally
from duetflow.errors import DuetflowError
from duetflow.fairness.audit import AuditResult
from duetflow.licences import UNDECLARED, release_terms
from duetflow.licences import terms as terms_of
from duetflow.records.dialogue import Category, Rejection, Stage
from duetflow.records.manifest import read_rejections
from duetflow.records.rows import ReleaseDialogueRow, RenderedDialogueRow, RenderedTurnRow
from duetflow.report.data import (
    DEFAULT_AUDIO_SAMPLE,
    MAX_EXAMPLES,
    NO_SPLIT,
    Accumulator,
    CountRow,
    DesignRow,
    LicenceRow,
    PhStats,
    Provenance,
    RejectionRow,
    ReportData,
)
from duetflow.report.parity import release_audit
from duetflow.report.quality import DnsmosTally
from duetflow.report.rows import dialogues_with_turns, json_obj, num, similarities
from duetflow.report.source_names import LICENCES
from duetflow.report.source_stats import parse_source_stats
from duetflow.report.sources import ReportInput
from duetflow.seeding import seed_for

log = logging.getLogger(__name__)

_GAP_TOL_MS = 0.5  # rendering places samples at 1/sr; a gap of 179.99 ms is "180 ms"
_EDGE_RES_MS = 2.5  # resolution of an acoustic edge (the envelope's hop)

_STAGE_ORDER = {str(s): i for i, s in enumerate(Stage)}


# --- the pass -----------------------------------------------------------------------------------


#: A dialogue of the audio sample: (-hash, id, record, turns, where it was read).
_Sampled = tuple[int, str, RenderedDialogueRow, list[RenderedTurnRow], ReportInput]


class _Collector:
    def __init__(
        self, config: RunConfig, audio_sample: int, splits: Mapping[str, str] | None = None
    ) -> None:
        self.config = config
        self.splits = splits or {}
        r, f = config.render, config.filters
        gap_band = (r.gap_ms_min, r.gap_ms_max)
        self.acc: dict[str, Accumulator] = {
            "gap_ms": Accumulator(-1000, 2000, 5, gap_band, _GAP_TOL_MS),
            "gap_ms_audio": Accumulator(-1000, 2000, 5, gap_band, _EDGE_RES_MS),
            "floor_step_db": Accumulator(-20, 20, 0.5, (-3.0, 3.0)),
            "floor_dip_db": Accumulator(0, 20, 0.5, (0.0, 6.0)),
            "gap_corrections": Accumulator(0, 50, 1, (0.0, 0.5)),
            "duration_s": Accumulator(0, 120, 1),
            "turns_per_dialogue": Accumulator(0, 200, 1),
            "utterance_share_a": Accumulator(0, 1.0001, 0.02, (f.balance_min, f.balance_max)),
            "speaking_time_share_a": Accumulator(0, 1.0001, 0.02),
            "loudness_a": Accumulator(-70, 0, 0.5),
            "loudness_b": Accumulator(-70, 0, 0.5),
            "loudness_diff": Accumulator(
                -12, 12, 0.2, (-r.loudness_tolerance_lu, r.loudness_tolerance_lu)
            ),
            "loudness_a_audio": Accumulator(-70, 0, 0.5),
            "loudness_b_audio": Accumulator(-70, 0, 0.5),
            "loudness_diff_audio": Accumulator(
                -12, 12, 0.2, (-r.loudness_tolerance_lu, r.loudness_tolerance_lu)
            ),
            "ph_similarity": Accumulator(-1, 1.0001, 0.02),
        }
        self.counts: dict[tuple[str, str, str, str], list[float]] = {}
        self.design: dict[tuple[str, str, str, str, str, str], list[float]] = {}
        self.contract = DesignTally()  # the design contract's counts (duetflow.design)
        self.rej: dict[tuple[str, str], tuple[int, Counter[str], list[str]]] = {}
        self.ph_n = 0
        self.ph_backends: Counter[str] = Counter()
        self.ph_cloning: Counter[str] = Counter()
        self.ph_licences: dict[str, str] = {}
        self.licences: dict[str, tuple[int, float, set[str]]] = {}
        self.code_versions: Counter[str] = Counter()
        self.dnsmos = DnsmosTally()
        self.sample_size = audio_sample
        self.heap: list[
            tuple[int, str, RenderedDialogueRow, list[RenderedTurnRow], ReportInput]
        ] = []
        self.notes: list[str] = []
        self.zero_gaps: list[str] = []  # dialogues with digital zeros in a pause

    # -- manifests --

    def dialogue(
        self, inp: ReportInput, row: RenderedDialogueRow, turns: list[RenderedTurnRow]
    ) -> None:
        released = row.split if isinstance(row, ReleaseDialogueRow) else None
        split = str(released or self.splits.get(row.dialogue_id) or NO_SPLIT)
        key = (split, str(row.category), str(row.language), str(row.corpus))
        cell = self.counts.setdefault(key, [0, 0.0, 0])
        dur = float(row.duration_s)
        cell[0] += 1
        cell[1] += dur
        cell[2] += len(turns)
        self._design(row, dur)
        lic = str(row.licence or UNDECLARED)
        n_lic, s_lic, corpora = self.licences.get(lic, (0, 0.0, set()))
        corpora.add(str(row.corpus))
        self.licences[lic] = (n_lic + 1, s_lic + dur, corpora)
        a = self.acc
        a["duration_s"].add(dur)
        a["turns_per_dialogue"].add(len(turns))
        la, lb = num(row.loudness_lufs_a), num(row.loudness_lufs_b)
        if la is not None:
            a["loudness_a"].add(la)
        if lb is not None:
            a["loudness_b"].add(lb)
        if la is not None and lb is not None:
            a["loudness_diff"].add(la - lb)
        self._turn_stats(row, turns)
        self.dnsmos.add(row)
        prov = json_obj(row.provenance)
        cv = prov.get("code_version")
        if isinstance(cv, str) and (cv in self.code_versions or len(self.code_versions) < 20):
            self.code_versions[cv] += 1
        moved = num(prov.get("gap_corrections"))
        if moved is not None:
            self.acc["gap_corrections"].add(moved)
        if str(row.category) == Category.PH:
            self._ph(prov)
        self._maybe_sample(inp, row, turns)

    def _design(self, row: RenderedDialogueRow, dur: float) -> None:
        d = row.design
        system = " ".join(str(v or "") for v in (d.system_name, d.system_version))
        key = (
            str(row.category),
            str(row.language),
            str(row.topic or ""),
            system.strip(),
            str(d.strategy or ""),
            str(d.tts_backend or ""),
        )
        cell = self.design.setdefault(key, [0, 0.0])
        cell[0] += 1
        cell[1] += dur
        self.contract.add(str(row.category), str(row.language), d)

    def _turn_stats(self, row: RenderedDialogueRow, turns: Sequence[RenderedTurnRow]) -> None:
        spk_a = row.speaker_a
        floor = sorted(
            (t for t in turns if t.kind == "turn"), key=lambda t: (t.start_s, t.turn_index)
        )
        for prev, nxt in itertools.pairwise(floor):
            if prev.speaker != nxt.speaker:
                self.acc["gap_ms"].add((float(nxt.start_s) - float(prev.end_s)) * 1000.0)
        excl = (
            ("nonspeech", "backchannel")
            if self.config.turns.balance_excludes_backchannels
            else ("nonspeech",)
        )
        utts = [t for t in turns if t.kind not in excl]
        if utts:
            self.acc["utterance_share_a"].add(sum(t.speaker == spk_a for t in utts) / len(utts))
        speech = [t for t in turns if t.kind != "nonspeech"]
        total = sum(float(t.end_s) - float(t.start_s) for t in speech)
        if total > 0:
            mine = sum(float(t.end_s) - float(t.start_s) for t in speech if t.speaker == spk_a)
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
        for s in similarities(prov):
            self.acc["ph_similarity"].add(s)

    def rejection(self, r: Rejection) -> None:
        key = (str(r.stage), r.reason)
        n, corpora, examples = self.rej.get(key, (0, Counter(), []))
        corpora[r.corpus] += 1
        if len(examples) < MAX_EXAMPLES:
            examples.append(r.item_id)
        self.rej[key] = (n + 1, corpora, examples)

    # -- audio sample --

    def _maybe_sample(
        self, inp: ReportInput, row: RenderedDialogueRow, turns: list[RenderedTurnRow]
    ) -> None:
        if self.sample_size <= 0:
            return
        h = seed_for(self.config.seed, "report-sample", row.dialogue_id)
        item = (-h, str(row.dialogue_id), row, turns, inp)
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
        self, inp: ReportInput, row: RenderedDialogueRow, turns: Sequence[RenderedTurnRow]
    ) -> None:
        path = inp.audio(row)
        data, sr = read_frames(path)
        data2 = data if data.ndim == 2 else data[:, None]
        spk = (row.speaker_a, row.speaker_b)

        def track(speaker: str) -> np.ndarray[Any, np.dtype[np.float32]]:
            if data2.shape[1] >= 2:
                return np.ascontiguousarray(data2[:, spk.index(speaker)])
            return np.asarray(data2.mean(axis=1), dtype=np.float32)

        floor_turns = [
            (str(t.speaker), float(t.start_s), float(t.end_s)) for t in turns if t.kind == "turn"
        ]
        level = floor_in_file_db(json_obj(row.provenance))
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
                self.zero_gaps.append(str(row.dialogue_id))
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
    turns: Sequence[RenderedTurnRow],
    speaker: str,
    own_channel: bool,
) -> float | None:
    """BS.1770 loudness of one speaker's turns (their own channel, or solo parts of a mix)."""
    others = [
        (float(t.start_s), float(t.end_s))
        for t in turns
        if t.speaker != speaker and t.kind != "nonspeech"
    ]
    parts = []
    for t in turns:
        if t.speaker != speaker or t.kind == "nonspeech":
            continue
        s, e = float(t.start_s), float(t.end_s)
        if not own_channel and any(o0 < e and s < o1 for o0, o1 in others):
            continue
        parts.append(x[max(0, int(s * sr)) : min(len(x), int(e * sr))])
    if not parts:
        return None
    m = measure(np.concatenate(parts).astype(np.float32), sr)
    return m.lufs if m.lufs > SILENCE_LUFS else None


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
    cue_audit: AuditResult | None = None,
) -> ReportData:
    """Compute every number of the report in one pass (plus audio of a bounded sample).

    ``splits`` (dialogue id → split) labels work-directory rows, which carry no split column,
    so publish can report a release before it exists; ``release_id`` names it. ``cue_audit``
    is publish's cue audit; without it a local release's ``cues/cues.parquet`` is compared.
    """
    release = next((i for i in inputs if i.release), None)
    cfg = config or _config_from_release(release.release if release else None) or RunConfig()
    c = _Collector(cfg, audio_sample, splits)
    for inp in inputs:
        for row, turns in dialogues_with_turns(inp):
            c.dialogue(inp, row, turns)
        if inp.rejections is not None:
            for r in read_rejections(inp.rejections):
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
    contract = c.contract.report(cfg.design) if cfg.design.declared else None
    if contract is not None:
        notes.extend(f"design: {p}" for p in contract.problems)
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
        design_cells=contract.cells if contract is not None else (),
        design_problems=tuple(contract.problems) if contract is not None else (),
        cue_audit=cue_audit if cue_audit is not None else release_audit(inputs, cfg),
        dnsmos=c.dnsmos.freeze(),
    )
