"""The ``design`` section: the Turing-test experiment a release is built for.

A listening test is a designed experiment: S2S systems × elicitation strategies × languages,
with a target number of HM dialogues per cell, and PH quotas per TTS backend and language.
Declaring it lets the report and ``publish`` count every cell against its target and name the
missing and over-full ones (:mod:`duetflow.design`), and lets ingest refuse an HM session in a
language its system does not speak (reason ``system_language``).

``preset: seed_study`` fills every field left unset with the seed study's design:

* languages ``en`` and ``zh``; the three elicitation strategies of the studio sidecar;
* 2 / 3 / 4 HM dialogues per cell. The study reports 2, 3 and 4 dialogues per cell (its
  App. B.3); which strategy has which count is not in the project's references, so the preset
  gives 2 to ``human_guided_initiation``, 3 to ``role_playing`` and 4 to
  ``human_likeness_prompting`` — set ``strategy_targets`` when your design differs;
* PH quotas: 36 Dia English, 36 Spark-TTS English, 72 Spark-TTS Chinese.

The study's systems are not part of the preset (name yours under ``systems``, with the
languages each speaks); systems found in the data but not declared get cells in every design
language, and the report says so.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from duetflow.config.section import _Section

#: The elicitation strategies of the seed study (the studio sidecar's ``strategy`` values).
SEED_STUDY_STRATEGIES = ("human_guided_initiation", "role_playing", "human_likeness_prompting")

#: What ``preset: seed_study`` sets (fields the config leaves unset).
SEED_STUDY: dict[str, Any] = {
    "languages": ["en", "zh"],
    "strategies": list(SEED_STUDY_STRATEGIES),
    "strategy_targets": dict(zip(SEED_STUDY_STRATEGIES, (2, 3, 4), strict=True)),
    "ph_quotas": {"dia": {"en": 36}, "spark": {"en": 36, "zh": 72}},
}


class SystemSpec(_Section):
    """One S2S system of the design: the languages it speaks."""

    languages: list[str] = Field(min_length=1, description="languages the system speaks")


class DesignConfig(_Section):
    """The experiment's grid and quotas (module docstring). Empty: no design is checked."""

    preset: Literal["seed_study"] | None = None
    systems: dict[str, SystemSpec] = Field(
        default_factory=dict, description="S2S systems (sidecar system.name) and their languages"
    )
    strategies: list[str] = Field(default_factory=list)
    languages: list[str] = Field(default_factory=list)
    cell_target: int = Field(
        0, ge=0, le=1_000_000, description="HM dialogues per system × strategy × language"
    )
    strategy_targets: dict[str, int] = Field(
        default_factory=dict, description="per-strategy cell targets (override cell_target)"
    )
    ph_quotas: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="PH dialogues per TTS backend and language"
    )
    opening_line: Literal["same_per_language", "off"] = Field(
        "same_per_language",
        description="check that every HM dialogue of a language starts from one opening line",
    )

    @model_validator(mode="before")
    @classmethod
    def _preset(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("preset") == "seed_study":
            data = {**{k: v for k, v in SEED_STUDY.items() if k not in data}, **data}
        return data

    @model_validator(mode="after")
    def _checks(self) -> DesignConfig:
        for name, target in self.strategy_targets.items():
            if self.strategies and name not in self.strategies:
                raise ValueError(f"strategy_targets: {name!r} is not one of strategies")
            if not 0 <= target <= 1_000_000:
                raise ValueError(f"strategy_targets.{name}: {target} is out of 0-1000000")
        for backend, quotas in self.ph_quotas.items():
            for lang, n in quotas.items():
                if not 0 <= n <= 1_000_000:
                    raise ValueError(f"ph_quotas.{backend}.{lang}: {n} is out of 0-1000000")
        for name, spec in self.systems.items():
            extra = sorted(set(spec.languages) - set(self.languages)) if self.languages else []
            if extra:
                raise ValueError(
                    f"systems.{name}.languages: {extra} not among the design's languages"
                )
        return self

    @property
    def declared(self) -> bool:
        """True when the config declares a grid or a quota to check."""
        return bool(self.ph_quotas or (self.languages and self.target_of_any()))

    def target_of_any(self) -> bool:
        return self.cell_target > 0 or any(v > 0 for v in self.strategy_targets.values())

    def target(self, strategy: str) -> int:
        """The HM dialogues a cell of ``strategy`` should hold."""
        return self.strategy_targets.get(strategy, self.cell_target)

    def speaks(self, system: str, language: str) -> bool:
        """Whether ``system`` may give HM dialogues in ``language`` (undeclared: yes)."""
        spec = self.systems.get(system)
        return spec is None or _lang(language) in {_lang(x) for x in spec.languages}


def _lang(code: str) -> str:
    """``zh-CN`` → ``zh``: the primary subtag, lower case."""
    return code.lower().replace("_", "-").split("-")[0]
