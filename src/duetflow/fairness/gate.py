"""The release gate on cue parity: which cues fail, and what the mode does about it.

``release.cue_parity`` (:class:`~duetflow.config.ReleaseConfig`): ``off`` audits nothing,
``warn`` publishes and names the failing cues (log, report, ``publish``'s output), ``fail``
refuses the release with :class:`CueParityError` before anything is sent. The thresholds are
``release.cue_thresholds`` (:class:`~duetflow.config.release.CueThresholds`, their one
declaration); :func:`evaluate` applies them to judged pairs only, to the gated cues only (never a
voice cue; between HH and HM never a conversation cue), and never to a cue whose two means differ
by no more than its floor (:class:`~duetflow.fairness.cues.Cue`, docs/fairness.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from duetflow.config.release import CueThresholds
from duetflow.errors import ConfigError, DuetflowError
from duetflow.fairness.compare import PairAudit, below_floor, compare_all
from duetflow.fairness.cues import CUE_NAMES, DialogueCues

#: What a failing check is called when it is the classifier rather than one cue.
CLASSIFIER = "classifier"


class CueParityError(DuetflowError):
    """A release refused because pipeline cues tell its categories apart (``cue_parity: fail``)."""


@dataclass(frozen=True)
class CueFailure:
    """One failing check of one pair: a cue (or the classifier) and why."""

    language: str
    pair: str
    cue: str
    reason: str

    def __str__(self) -> str:
        return f"{self.language} {self.pair}: {self.cue} ({self.reason})"


@dataclass(frozen=True)
class ParityVerdict:
    """The gate's answer for one release: the mode, what failed, which pairs were not judged."""

    mode: str
    failures: tuple[CueFailure, ...]
    unjudged: tuple[str, ...]  # "<language> <pair>: <why>"
    judged: int = 0  # pairs judged

    @property
    def passed(self) -> bool:
        return not self.failures

    def headline(self) -> str:
        """One sentence: fails, passes, or could not judge."""
        head = f"Gate release.cue_parity: {self.mode} — "
        if self.failures:
            return head + f"{len(self.failures)} failing check(s)."
        if not self.judged:
            return head + "nothing judged (every pair has too few dialogues)."
        tail = f"; {len(self.unjudged)} not judged" if self.unjudged else ""
        return head + f"passes ({self.judged} pair(s) judged{tail})."

    def failing_cues(self) -> tuple[str, ...]:
        """Names of the failing cues (and ``classifier``), each once, in table order."""
        names = {f.cue for f in self.failures}
        return tuple(c for c in (*CUE_NAMES, CLASSIFIER) if c in names)

    def lines(self) -> list[str]:
        """Human-readable lines: one per failure, one per pair not judged."""
        out = [f"cue parity FAILS: {f}" for f in self.failures]
        out += [f"cue parity not judged: {u}" for u in self.unjudged]
        return out


def check_cue_names(thresholds: CueThresholds) -> None:
    """ConfigError for a ``per_cue`` threshold that names no cue."""
    unknown = sorted(set(thresholds.per_cue) - set(CUE_NAMES))
    if unknown:
        raise ConfigError(
            f"release.cue_thresholds.per_cue: unknown cue(s) {', '.join(unknown)}; "
            f"known: {', '.join(CUE_NAMES)}"
        )


def _fmt_d(d: float) -> str:
    return f"{d:+.2f}" if math.isfinite(d) else ("+inf" if d > 0 else "-inf")


def evaluate(
    pairs: Sequence[PairAudit], thresholds: CueThresholds, mode: str = "warn"
) -> ParityVerdict:
    """Apply the thresholds to every judged pair (module docstring)."""
    check_cue_names(thresholds)
    failures: list[CueFailure] = []
    unjudged: list[str] = []
    for p in pairs:
        if not p.judged:
            unjudged.append(f"{p.language} {p.pair}: {p.note}")
            continue
        for c in p.cues:
            if not c.gated or below_floor(c):  # a step under the cue's floor counts for nothing
                continue
            limit = thresholds.per_cue.get(c.cue, thresholds.max_abs_d)
            why = []
            if abs(c.d) > limit and c.p_value < thresholds.alpha:
                why.append(f"d={_fmt_d(c.d)} > {limit:g}, p={c.p_value:.2g}")
            if c.separates:
                why.append("separates the pair perfectly")
            if why:
                failures.append(CueFailure(p.language, p.pair, c.cue, "; ".join(why)))
        k = p.classifier
        if (
            k is not None
            and k.accuracy > thresholds.max_accuracy
            and (k.p_permutation < thresholds.alpha)
        ):
            failures.append(
                CueFailure(
                    p.language,
                    p.pair,
                    CLASSIFIER,
                    f"accuracy {k.accuracy:.2f} > {thresholds.max_accuracy:g}, "
                    f"permutation p={k.p_permutation:.3g}",
                )
            )
    judged = sum(1 for p in pairs if p.judged)
    return ParityVerdict(mode, tuple(failures), tuple(unjudged), judged)


def audit(
    rows: Sequence[DialogueCues], thresholds: CueThresholds, *, seed: int = 0, mode: str = "warn"
) -> tuple[tuple[PairAudit, ...], ParityVerdict]:
    """Compare every pair of the cue rows and judge them: (pairs, verdict)."""
    check_cue_names(thresholds)
    pairs = compare_all(rows, seed=seed, min_per_side=thresholds.min_per_side)
    return pairs, evaluate(pairs, thresholds, mode)


def enforce(verdict: ParityVerdict) -> None:
    """Raise :class:`CueParityError` when the mode is ``fail`` and a check failed."""
    if verdict.mode != "fail" or verdict.passed:
        return
    shown = "; ".join(str(f) for f in verdict.failures[:12])
    more = len(verdict.failures) - 12
    raise CueParityError(
        f"release refused (release.cue_parity: fail): pipeline-controlled cues tell categories "
        f"apart: {shown}{f'; and {more} more' if more > 0 else ''}. Equalise them "
        "(docs/fairness.md) or set release.cue_parity: warn to publish anyway"
    )
