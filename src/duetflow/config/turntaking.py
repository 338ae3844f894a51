"""Config sections of turn-taking analysis: overlaps, windows, filters, HH/HM matching."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from duetflow.config.section import CATEGORIES, _Section

#: DNSMOS scores lie on the MOS scale.
MOS_RANGE = (1.0, 5.0)


class TurnsConfig(_Section):
    """Overlap classification thresholds (see docs/turn-taking.md for the rationale)."""

    terminal_overlap_s: float = Field(
        0.3,
        ge=0,
        le=60,
        description="a listener who starts at most this long before the current speaker's talk "
        "ends, and then holds the floor, made a turn transition (terminal overlap), not an "
        "interruption; a transcript cut-off mark on the current turn overrides it",
    )
    min_overlap_s: float = Field(
        0.05, ge=0, le=60, description="overlaps shorter than this are ignored"
    )
    same_speaker_join_s: float = Field(
        0.3,
        ge=0,
        le=60,
        description="a speaker's own pauses shorter than this do not end their floor",
    )
    transcript_cues: bool = Field(
        True,
        description="use transcript text as evidence: cut-off marks (trailing --, —, …) and "
        "backchannel words (duetflow.turntaking.cues); false: timing alone",
    )
    balance_excludes_backchannels: bool = True
    acoustic_timing: bool = Field(
        True,
        description="before windows and filters, move every turn's start/end to the acoustic "
        "extent of its speech within its annotation (duetflow.acoustics.timing); false: "
        "analyse the annotated times as given",
    )
    timing_outward_s: float = Field(
        0.05,
        ge=0,
        le=1,
        description="acoustic timing moves an edge at most this far outside its annotation",
    )
    max_slack_s: float = Field(
        0.3,
        ge=0,
        le=2,
        description="mono mixes: the most a boundary inside an overlap is moved by the "
        "dialogue's typical annotation slack",
    )


#: Longest excerpt a window may be (s): a bound, so a typo cannot ask for days of audio.
MAX_WINDOW_S = 4 * 3600.0


class WindowConfig(_Section):
    """Cutting long dialogues into excerpts; lengths are of the *rendered* audio."""

    min_s: float = Field(20.0, gt=0, le=MAX_WINDOW_S, description="shortest rendered dialogue")
    max_s: float = Field(60.0, gt=0, le=MAX_WINDOW_S, description="longest rendered dialogue")
    margin_s: float = Field(
        1.0,
        ge=0,
        le=MAX_WINDOW_S,
        description="selection keeps the predicted rendered length this far inside "
        "[min_s, max_s] (at most half the range), for what the timeline cannot predict",
    )
    policy: Literal["greedy", "non_overlapping", "max_count"] = "greedy"

    @model_validator(mode="after")
    def _order(self) -> WindowConfig:
        if self.min_s > self.max_s:
            raise ValueError(f"window.min_s ({self.min_s}) must be <= window.max_s ({self.max_s})")
        return self

    @property
    def select_range(self) -> tuple[float, float]:
        """Predicted rendered lengths selection accepts: the range less the margin."""
        m = min(self.margin_s, (self.max_s - self.min_s) / 2)
        return self.min_s + m, self.max_s - m


class FilterConfig(_Section):
    """Dialogue filters, applied in ``order``; the first failing one names the rejection."""

    order: list[str] = Field(
        default_factory=lambda: [
            "collection_header",
            "unintelligible",
            "duration",
            "min_turns",
            "interruptions",
            "mono_overlaps",
            "balance",
            "language",
            "topics",
        ]
    )
    balance_min: float = Field(0.4, ge=0, le=1)
    balance_max: float = Field(0.6, ge=0, le=1)
    min_turns_per_speaker: int = Field(2, ge=0, le=100_000)
    max_interruptions: int = Field(0, ge=0, description="floor-taking interruptions allowed")
    max_non_floor_interruptions: int | None = Field(None, ge=0, description="None: unlimited")
    languages: list[str] | None = Field(None, description="allowed languages; None: any")
    topics: list[str] | None = Field(
        None, description="allowed taxonomy topics (the `topics` filter); None: any"
    )
    unintelligible_max_share: float = Field(
        0.5, ge=0, le=1, description="max share of turns that are only [*] / unintelligible"
    )
    collection_header_patterns: list[str] = Field(
        default_factory=lambda: [r"^\s*爱数智慧语音采集"],
        description="regexes of spoken corpus collection headers (MagicData-RAMC's first segment)",
    )

    min_dnsmos_ovrl: float | dict[str, float] | None = Field(
        None,
        description="after rendering (process and synth), reject a dialogue whose DNSMOS OVRL "
        "lies below this (reason dnsmos_ovrl_low); a mapping sets it per category (HH, HM, "
        "PH; a category left out is not filtered); None: no DNSMOS filter. Needs "
        "quality.dnsmos: on",
    )

    @field_validator("min_dnsmos_ovrl")
    @classmethod
    def _mos(cls, v: float | dict[str, float] | None) -> float | dict[str, float] | None:
        values = v.values() if isinstance(v, dict) else [] if v is None else [v]
        if any(not MOS_RANGE[0] <= x <= MOS_RANGE[1] for x in values):
            raise ValueError(f"every value must lie in [{MOS_RANGE[0]}, {MOS_RANGE[1]}] (MOS)")
        unknown = sorted(set(v) - set(CATEGORIES)) if isinstance(v, dict) else []
        if unknown:
            raise ValueError(f"unknown categor(y/ies) {unknown}; known: {list(CATEGORIES)}")
        return v

    def min_dnsmos_ovrl_for(self, category: str) -> float | None:
        """The DNSMOS OVRL floor of ``category``'s dialogues, or None where none is set."""
        v = self.min_dnsmos_ovrl
        return v.get(str(category)) if isinstance(v, dict) else v

    @field_validator("collection_header_patterns")
    @classmethod
    def _regexes(cls, patterns: list[str]) -> list[str]:
        for i, p in enumerate(patterns):
            try:
                re.compile(p)
            except re.error as e:
                raise ValueError(f"item {i} {p!r} is not a valid regex: {e}") from None
        return patterns

    @model_validator(mode="after")
    def _balance(self) -> FilterConfig:
        if self.balance_min > self.balance_max:
            raise ValueError(
                f"filters.balance_min ({self.balance_min}) must be <= filters.balance_max "
                f"({self.balance_max})"
            )
        return self


class MatchConfig(_Section):
    """HH ↔ HM matching: pick HH windows so that, per language, their count and topic
    distribution equal the HM subset's (``duetflow.turntaking.matching``)."""

    enabled: bool = Field(True, description="False: keep every HH window")
    ratio: float = Field(
        1.0, gt=0, description="HH windows wanted per HM window (per language and topic)"
    )
    duration: bool = Field(
        True,
        description="pick, per HM dialogue, the HH window of its topic nearest its duration "
        "(false: a seeded draw); docs/fairness.md",
    )
