"""The cue audit of a set of dialogues: measure, compare, judge, write.

:func:`audit_items` runs the whole audit over a stream of (dialogue row, turns, audio file);
:func:`audit_workdirs` over rendered work directories (what ``publish`` stages);
:func:`write_audit` writes ``cues.parquet``, ``summary.json`` and ``summary.md`` into a folder.
The dialogues' audio is read one file at a time; what is kept is one small record per dialogue,
because the comparisons (ranks, leave-one-out) need every value of a pair at once.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from duetflow.config.release import CueThresholds
from duetflow.fairness.compare import PairAudit
from duetflow.fairness.cues import DEFAULT_LEVELS, DialogueCues, Levels, measure_all
from duetflow.fairness.gate import ParityVerdict, audit
from duetflow.fairness.table import (
    CUES_FILE,
    SUMMARY_FILE,
    TABLE_FILE,
    format_pairs,
    summary_bytes,
    write_cues,
)
from duetflow.records.manifest import DIALOGUES, TURNS, iter_record_groups
from duetflow.records.rows import RenderedDialogueRow, RenderedTurnRow

#: One dialogue to audit: its row, its turn rows, its audio file.
Item = tuple[RenderedDialogueRow, Sequence[RenderedTurnRow], Path]


@dataclass(frozen=True)
class AuditResult:
    """A finished audit: the per-dialogue cues, the per-pair comparison, the gate's verdict."""

    rows: tuple[DialogueCues, ...]
    pairs: tuple[PairAudit, ...]
    verdict: ParityVerdict
    errors: tuple[str, ...] = ()  # dialogues whose audio could not be read, with the reason

    def markdown(self) -> str:
        """The per-pair table, d per cue and the verdict (what ``duetflow audit`` prints)."""
        return format_pairs(self.pairs, self.verdict)


def audit_items(
    items: Iterable[Item],
    thresholds: CueThresholds,
    *,
    seed: int = 0,
    mode: str = "warn",
    levels: Levels = DEFAULT_LEVELS,
) -> AuditResult:
    """Measure every dialogue of the stream, then compare and judge its category pairs.

    ``levels``: the true-peak ceiling and loudness target the files were rendered to (the run
    config's render section; the defaults are its defaults)."""
    errors: list[str] = []
    rows = tuple(measure_all(items, errors, levels))
    pairs, verdict = audit(rows, thresholds, seed=seed, mode=mode)
    return AuditResult(rows, pairs, verdict, tuple(errors))


def workdir_items(workdirs: Sequence[Path], skip: Collection[str] = ()) -> Iterator[Item]:
    """The dialogues of rendered work directories with their turns and audio (``skip``: ids)."""
    for wd in workdirs:
        for row, turns in iter_record_groups(wd / DIALOGUES, wd / TURNS, RenderedDialogueRow):
            if row.dialogue_id not in skip:
                yield row, turns, wd / row.audio_path


def audit_workdirs(
    workdirs: Sequence[Path],
    thresholds: CueThresholds,
    *,
    seed: int = 0,
    mode: str = "warn",
    skip: Collection[str] = (),
    levels: Levels = DEFAULT_LEVELS,
) -> AuditResult:
    """The audit of rendered work directories (the dialogues a release will hold)."""
    return audit_items(
        workdir_items(workdirs, skip), thresholds, seed=seed, mode=mode, levels=levels
    )


def write_audit(result: AuditResult, folder: Path) -> tuple[Path, Path, Path]:
    """Write ``cues.parquet``, ``summary.json`` and ``summary.md`` into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    cues = folder / CUES_FILE
    write_cues(cues, result.rows)
    summary = folder / SUMMARY_FILE
    summary.write_bytes(summary_bytes(result.pairs, result.verdict, result.errors))
    table = folder / TABLE_FILE
    table.write_text(result.markdown(), encoding="utf-8")
    return cues, summary, table
