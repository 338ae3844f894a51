"""Prompt templates shipped with the package, filled per request and recorded by hash.

Templates are plain text files under ``duetflow/data/prompts/`` with ``$name`` placeholders
(:class:`string.Template`, so the JSON examples in them need no escaping):

* ``generate.txt`` — the topic-conditioned prompt: a casual 40–50 s dialogue between A and B on
  one topic, light interjections and fillers, a JSON array only;
* ``rewrite.txt`` — the seed study's refinement (App. B.5): the same turns, speakers and
  meaning, rephrased into everyday speech with light interjections and fillers added;
* ``repair.txt`` — the follow-up after an invalid answer, carrying the validation error.

A script's provenance records the sha256 of every template that shaped it, so a changed prompt
is visible in the data (and changes the cache keys of the stage).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from string import Template

from duetflow.errors import ConfigError

TEMPLATE_NAMES = ("generate", "rewrite", "repair")

#: How a language is named in a prompt, and fillers that sound natural in it.
LANGUAGE_NAMES = {"en": "English", "zh": "Mandarin Chinese (simplified characters)"}
FILLERS = {
    "en": '"um", "uh", "well", "you know", "I mean", "oh", "yeah"',
    "zh": '"嗯", "呃", "那个", "就是", "然后", "对", "哎"',
}


@dataclass(frozen=True)
class PromptTemplate:
    """One template: its name, text and the sha256 of its bytes."""

    name: str
    text: str
    sha256: str

    def render(self, **values: object) -> str:
        """The prompt with every ``$name`` filled; a missing value is a ConfigError."""
        try:
            return Template(self.text).substitute({k: str(v) for k, v in values.items()})
        except KeyError as e:
            raise ConfigError(f"prompt template {self.name!r}: no value for ${e.args[0]}") from None


@cache
def load_template(name: str) -> PromptTemplate:
    """A shipped template by name (``generate``, ``rewrite``, ``repair``)."""
    if name not in TEMPLATE_NAMES:
        raise ConfigError(f"unknown prompt template {name!r}; shipped: {list(TEMPLATE_NAMES)}")
    data = files("duetflow").joinpath("data", "prompts", f"{name}.txt").read_bytes()
    return PromptTemplate(name, data.decode("utf-8"), hashlib.sha256(data).hexdigest())


def language_name(language: str) -> str:
    """``en`` → English, ``zh``/``zh-CN`` → Mandarin Chinese; other codes are named as given."""
    code = language.lower()
    key = "zh" if code.startswith(("zh", "cmn")) else code.split("-")[0]
    return LANGUAGE_NAMES.get(key, language)


def fillers(language: str) -> str:
    """Example interjections/fillers for the prompt (English ones for unknown languages)."""
    code = language.lower()
    key = "zh" if code.startswith(("zh", "cmn")) else code.split("-")[0]
    return FILLERS.get(key, FILLERS["en"])
