"""The design contract: the dialogues a release holds, counted against the declared design.

The ``design`` config section (:class:`duetflow.config.DesignConfig`) declares the experiment:
HM dialogues per S2S system × elicitation strategy × language, PH dialogues per TTS backend ×
language. :class:`DesignTally` counts dialogues by their design columns in one streaming pass
(the report's, or publish's over the staged rows); :meth:`DesignTally.report` gives every cell
with its count and target, and names the missing (none yet), short, over-full and
out-of-design cells. It also lists the opening lines per language: every HM session of a
language (and the HH studio sessions, whose volunteers reuse it) should start from one line.

Rules the pipeline enforces elsewhere, stated here once:

* **Languages per system**: an HM session in a language its system does not speak
  (``design.systems.<name>.languages``) is rejected at ingest, reason ``system_language``
  (:func:`system_language_problem`).
* **HM windows**: an HM session cut into several windows gives one HM item, the window that
  starts with the session's first turn (the opening line); later windows are rejected at
  selection, reason ``hm_not_opening`` (``duetflow.turntaking.selection``). A later window
  would be an HM dialogue that did not start from the design's opening line.

Plain Python over records; no Prefect, no I/O.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from duetflow.config import DesignConfig
from duetflow.records.dialogue import DesignFields

#: Rejection reason of an HM session in a language its system does not speak.
SYSTEM_LANGUAGE = "system_language"
#: Rejection reason of an HM window that does not start with the session's opening line.
HM_NOT_OPENING = "hm_not_opening"


def _lang(code: str) -> str:
    return code.lower().replace("_", "-").split("-")[0]


def system_language_problem(
    design: DesignConfig, category: str, system: str | None, language: str
) -> str | None:
    """Why an HM session may not be kept (its system does not speak ``language``), or None."""
    if category != "HM" or system is None or design.speaks(system, language):
        return None
    spoken = ", ".join(design.systems[system].languages)
    return (
        f"system {system!r} speaks {spoken} (design.systems.{system}.languages); "
        f"this HM session is in {language!r}"
    )


@dataclass(frozen=True, slots=True)
class DesignCell:
    """One cell of the design: HM (system, strategy, language) or PH (backend, language)."""

    kind: str  # HM | PH
    system: str  # the S2S system (HM) or the TTS backend (PH)
    strategy: str  # HM: the elicitation strategy; PH: ""
    language: str
    target: int
    count: int

    @property
    def status(self) -> str:
        """``ok``, ``missing`` (none), ``short``, ``over`` or ``outside`` (not in the design)."""
        if self.target == 0:
            return "ok" if self.count == 0 else "outside"
        if self.count == 0:
            return "missing"
        if self.count < self.target:
            return "short"
        return "over" if self.count > self.target else "ok"

    @property
    def name(self) -> str:
        parts = [self.kind, self.system, self.strategy, self.language]
        return " / ".join(p for p in parts if p)


@dataclass(frozen=True, slots=True)
class OpeningLine:
    """One opening line of a language: how many dialogues start from it, of which systems."""

    language: str
    line: str
    dialogues: int
    systems: tuple[str, ...]  # S2S systems; "HH" for the HH studio sessions


@dataclass(frozen=True)
class DesignReport:
    """The design contract of a set of dialogues (module docstring)."""

    cells: tuple[DesignCell, ...]
    opening_lines: tuple[OpeningLine, ...]
    undeclared_systems: tuple[str, ...]
    check_opening: bool = True

    @property
    def problems(self) -> list[str]:
        """One line per cell off its target and per language with several opening lines."""
        out = []
        for c in self.cells:
            if c.status == "missing":
                out.append(f"missing: {c.name} has 0 of {c.target}")
            elif c.status == "short":
                out.append(f"short: {c.name} has {c.count} of {c.target}")
            elif c.status == "over":
                out.append(f"over-full: {c.name} has {c.count} of {c.target}")
            elif c.status == "outside":
                out.append(f"outside the design: {c.name} has {c.count}")
        if self.check_opening:
            for lang in sorted({o.language for o in self.opening_lines}):
                lines = [o for o in self.opening_lines if o.language == lang]
                if len(lines) > 1:
                    quoted = "; ".join(
                        f"{_short(o.line)!r} ({o.dialogues}: {', '.join(o.systems)})" for o in lines
                    )
                    out.append(f"opening lines differ in {lang}: {len(lines)} lines: {quoted}")
        return out

    def named(self, status: str) -> list[str]:
        """Names of the cells with ``status``."""
        return [c.name for c in self.cells if c.status == status]

    def to_dict(self) -> dict[str, object]:
        return {
            "cells": [{**asdict(c), "status": c.status} for c in self.cells],
            "opening_lines": [asdict(o) for o in self.opening_lines],
            "undeclared_systems": list(self.undeclared_systems),
            "problems": self.problems,
        }


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class DesignTally:
    """Counts dialogues by design columns, one :meth:`add` per dialogue (O(cells) memory)."""

    def __init__(self) -> None:
        self.hm: Counter[tuple[str, str, str]] = Counter()
        self.ph: Counter[tuple[str, str]] = Counter()
        self.openings: Counter[tuple[str, str]] = Counter()
        self.opening_systems: defaultdict[tuple[str, str], set[str]] = defaultdict(set)

    def add(self, category: str, language: str, design: DesignFields) -> None:
        lang = _lang(language)
        if category == "HM":
            system = design.system_name or "unknown"
            self.hm[(system, design.strategy or "", lang)] += 1
        elif category == "PH":
            self.ph[(design.tts_backend or "unknown", lang)] += 1
        if category in ("HM", "HH") and design.opening_line:
            line = " ".join(design.opening_line.split())
            self.openings[(lang, line)] += 1
            who = (design.system_name or "unknown") if category == "HM" else "HH"
            self.opening_systems[(lang, line)].add(who)

    def report(self, design: DesignConfig) -> DesignReport:
        """Every declared cell with its count, plus the counted cells outside the design."""
        langs = [_lang(x) for x in design.languages]
        seen_systems = sorted({s for s, _, _ in self.hm})
        systems = sorted(set(design.systems) | set(seen_systems))
        cells: dict[tuple[str, str, str, str], DesignCell] = {}
        if langs and design.target_of_any():
            for system in systems:
                for strategy in design.strategies or sorted({st for _, st, _ in self.hm}):
                    for lang in langs:
                        if not design.speaks(system, lang):
                            continue
                        n = self.hm.get((system, strategy, lang), 0)
                        cells[("HM", system, strategy, lang)] = DesignCell(
                            "HM", system, strategy, lang, design.target(strategy), n
                        )
        for backend, quotas in sorted(design.ph_quotas.items()):
            for lang, target in sorted(quotas.items()):
                key = ("PH", backend, "", _lang(lang))
                cells[key] = DesignCell("PH", backend, "", _lang(lang), target, 0)
        for (system, strategy, lang), n in self.hm.items():
            key = ("HM", system, strategy, lang)
            old = cells.get(key)
            cells[key] = DesignCell("HM", system, strategy, lang, old.target if old else 0, n)
        for (backend, lang), n in self.ph.items():
            key = ("PH", backend, "", lang)
            old = cells.get(key)
            cells[key] = DesignCell("PH", backend, "", lang, old.target if old else 0, n)
        declared = design.declared
        ordered = tuple(
            c
            for _, c in sorted(cells.items())
            if declared or c.count  # without a design: the counts only
        )
        opening = tuple(
            OpeningLine(lang, line, n, tuple(sorted(self.opening_systems[(lang, line)])))
            for (lang, line), n in sorted(self.openings.items())
        )
        undeclared = tuple(s for s in seen_systems if design.systems and s not in design.systems)
        return DesignReport(
            ordered, opening, undeclared, check_opening=design.opening_line != "off"
        )


def design_report(
    rows: Iterable[tuple[str, str, DesignFields]], design: DesignConfig
) -> DesignReport:
    """The design report of (category, language, design fields) rows."""
    tally = DesignTally()
    for category, language, fields_ in rows:
        tally.add(category, language, fields_)
    return tally.report(design)


def format_design_report(report: DesignReport) -> str:
    """The cells as a Markdown table, then the problems (or that there are none)."""
    lines = [
        "| kind | system / backend | strategy | language | target | dialogues | status |",
        "| --- | --- | --- | --- | ---: | ---: | --- |",
    ]
    for c in report.cells:
        lines.append(
            f"| {c.kind} | {c.system} | {c.strategy or '–'} | {c.language} | {c.target} | "
            f"{c.count} | {c.status} |"
        )
    lines.append("")
    problems = report.problems
    if problems:
        lines += [f"- {p}" for p in problems]
    else:
        lines.append("Every cell of the design holds its target.")
    if report.undeclared_systems:
        lines.append(
            f"- systems not declared in design.systems: {', '.join(report.undeclared_systems)}"
        )
    return "\n".join(lines) + "\n"


def design_json(report: DesignReport) -> bytes:
    """``design.json`` of a release: cells, opening lines, problems."""
    return (
        json.dumps(report.to_dict(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    ).encode()
