"""Process stage: intake work directory → acoustic turn timing → windows → filters → rendered
work directory.

``process_dialogues`` is the work of one shard: the pipeline's process step
(:func:`duetflow.pipeline.stages.process.run_process_shard`), which ``duetflow process`` runs too
(:func:`duetflow.pipeline.commands.process_workdir`). It streams: one source dialogue is timed
from its audio (:mod:`duetflow.acoustics.timing`, read in chunks), selected, and its kept
windows rendered before the next is read, and its records go to row-group writers (rows only
at the write, :class:`duetflow.records.manifest.WorkdirWriter`), so memory does not grow with the
shard.

Accounting: every window selection produces is either rendered or rejected (a render failure
is an ``InputError`` → ``Stage.RENDER`` rejection, and the run goes on; so is rendered audio
outside ``window.min_s``–``window.max_s``, reason ``rendered_too_short`` / ``rendered_too_long``,
its files removed; with ``quality.dnsmos`` on, each rendered window is scored
(:mod:`duetflow.rendering.quality`) and one whose DNSMOS OVRL lies under its category's
``filters.min_dnsmos_ovrl`` is a ``filter`` rejection ``dnsmos_ovrl_low``, files removed too); a
source dialogue that yields no window is one rejection of its own.
``ShardResult.units`` (= windows + window-less sources) therefore always equals
``rendered + rejected``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from duetflow.acoustics.timing import refine_timing
from duetflow.audio.dnsmos import get_model
from duetflow.config import RunConfig
from duetflow.errors import InputError
from duetflow.records import convert, manifest
from duetflow.records.dialogue import Dialogue, Rejection, Stage
from duetflow.records.locations import dialogue_roots, relative_rejection
from duetflow.records.rows import RenderedDialogueRow, RenderedTurnRow
from duetflow.rendering.quality import dnsmos_problem, remove_audio, scored
from duetflow.rendering.render import render_dialogue
from duetflow.rendering.rows import RenderedDialogue
from duetflow.turntaking.rendered_length import length_problem
from duetflow.turntaking.selection import select
from duetflow.turntaking.stats import CorpusStats

log = logging.getLogger(__name__)

STATS = "stats.json"


@dataclass
class ShardResult:
    """What processing a batch of source dialogues produced (its records, also written to
    ``out_dir``): the rendered dialogues and their turns in output order, the rejections."""

    dialogues: list[RenderedDialogueRow] = field(default_factory=list)
    turns: list[RenderedTurnRow] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)
    stats: CorpusStats = field(default_factory=CorpusStats)
    sources: int = 0
    windows: int = 0
    audio_s: float = 0.0

    windowless: int = 0  # sources that yielded no window (one rejection each)

    @property
    def units(self) -> int:
        """Windows + sources without any window: each ends up rendered or rejected."""
        return self.windows + self.windowless


def _rejection(d: Dialogue, e: InputError) -> Rejection:
    rej = Rejection(
        item_id=d.id,
        stage=Stage.RENDER,
        reason=e.reason,
        detail=str(e),
        corpus=d.corpus,
        source_path=e.path or "",
    )
    return relative_rejection(rej, dialogue_roots(d))


def _length_rejection(
    d: Dialogue, r: RenderedDialogue, config: RunConfig, out_dir: Path
) -> Rejection | None:
    """A rendered dialogue outside ``[window.min_s, window.max_s]`` becomes a rejection; its
    audio (and stems) are removed so the work directory holds only what its tables list."""
    problem = length_problem(r.record.duration_s, config.window)
    if problem is None:
        return None
    reason, detail = problem
    return _drop(d, r, out_dir, Stage.RENDER, reason, detail)


def _drop(
    d: Dialogue,
    r: RenderedDialogue,
    out_dir: Path,
    stage: Stage,
    reason: str,
    detail: dict[str, Any],
) -> Rejection:
    """The rejection of rendered window ``d``; its audio (two-channel file, stems) is removed
    so the work directory holds only what its tables list."""
    stems = json.loads(r.record.provenance).get("stems_path")
    remove_audio(r.record, out_dir, str(stems) if stems else None)
    window = list(d.window) if d.window else None
    rej = Rejection(
        item_id=d.id,
        stage=stage,
        reason=reason,
        detail=convert.dumps({**detail, "window": window}),
        corpus=d.corpus,
        source_path=str(getattr(d.source, "path", "")),
    )
    return relative_rejection(rej, dialogue_roots(d))


def _writer(out_dir: Path) -> manifest.WorkdirWriter:
    """The three rendered tables of a work directory, written in lockstep."""
    return manifest.WorkdirWriter(
        out_dir,
        manifest.RENDERED_DIALOGUE_SCHEMA,
        manifest.RENDERED_TURN_SCHEMA,
        (256, 4096, 1024),
    )


def _process_one(
    d: Dialogue,
    config: RunConfig,
    out_dir: Path,
    stats: CorpusStats,
    writer: manifest.WorkdirWriter,
    keep_rows: ShardResult | None,
) -> tuple[int, int, int, float]:
    """Time, select + render one source dialogue; returns (windows, rendered, rejected,
    audio_s). Acoustic timing (:mod:`duetflow.acoustics.timing`) runs first, so windows, filters,
    the length model and the renderer see where the speech is, not the annotation's slack."""
    if config.turns.acoustic_timing:
        d = refine_timing(d, config.turns)
    sel = select(d, config)
    rejected = list(sel.rejected)
    rendered = 0
    audio_s = 0.0
    lost_s = 0.0
    for w in sel.kept:
        try:
            r = render_dialogue(w, config, out_dir)
        except InputError as e:
            log.warning("render rejected %s: %s", w.id, e)
            rejected.append(_rejection(w, e))
            lost_s += w.duration_s
            continue
        too = _length_rejection(w, r, config, out_dir)
        if too is not None:
            log.info("render rejected %s: %s (%s)", w.id, too.reason, too.detail)
            rejected.append(too)
            lost_s += w.duration_s
            continue
        if config.quality.dnsmos:  # issue 29: scores, then filters.min_dnsmos_ovrl
            try:
                r = replace(r, record=scored(r.record, r.turn_records, out_dir))
            except InputError as e:
                log.warning("DNSMOS could not score %s: %s", w.id, e)
                rejected.append(_drop(w, r, out_dir, Stage.RENDER, e.reason, {"error": str(e)}))
                lost_s += w.duration_s
                continue
            low = dnsmos_problem(r.record, config.filters.min_dnsmos_ovrl_for(w.category))
            if low is not None:
                log.info("filter rejected %s: %s (%s)", w.id, *low)
                rejected.append(_drop(w, r, out_dir, Stage.FILTER, *low))
                lost_s += w.duration_s
                continue
        writer.write(r.record, r.turn_records)
        rendered += 1
        audio_s += r.record.duration_s
        if keep_rows is not None:
            keep_rows.dialogues.append(r.record)
            keep_rows.turns.extend(r.turn_records)
    s = sel.stats
    if rendered != len(sel.kept):
        s = replace(s, n_kept=rendered, kept_duration_s=max(0.0, s.kept_duration_s - lost_s))
    stats.add(s)
    stats.add_rejections(rejected)
    writer.reject(rejected)
    if keep_rows is not None:
        keep_rows.rejections.extend(rejected)
    return sel.stats.n_windows, rendered, len(rejected), audio_s


def _write_stats(out_dir: Path, stats: CorpusStats) -> None:
    path = out_dir / STATS
    tmp = path.with_name(f".{STATS}.tmp")
    tmp.write_text(json.dumps(stats.to_dict(), sort_keys=True, indent=1), encoding="utf-8")
    tmp.replace(path)


def process_dialogues(
    dialogues: Iterable[Dialogue], config: RunConfig, out_dir: str | Path
) -> ShardResult:
    """Select and render a batch (shard) of source dialogues into the work directory ``out_dir``.

    Writes ``audio/``, the three rendered tables and ``stats.json`` there, and returns the records
    (a shard is small; a whole corpus is shards merged, :mod:`duetflow.pipeline.commands`).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if config.quality.dnsmos:
        get_model()  # the install hint (ConfigError) before any work, not per dialogue
    result = ShardResult()
    with _writer(out) as writer:
        for d in dialogues:
            n_windows, _, _, audio_s = _process_one(d, config, out, result.stats, writer, result)
            result.sources += 1
            result.windows += n_windows
            result.windowless += n_windows == 0
            result.audio_s += audio_s
    _write_stats(out, result.stats)
    return result
