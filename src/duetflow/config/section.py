"""What every config section shares: frozen, no unknown keys; the category names."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from duetflow.errors import ConfigError
from duetflow.licences import check_licence
from duetflow.records.dialogue import Category

#: Dialogue categories (the keys of ``release.ratios``).
CATEGORIES = tuple(str(c) for c in Category)


def _licence_value(value: str) -> str:
    try:
        return check_licence(value, "licence")
    except ConfigError as e:  # pydantic reports ValueErrors with the field's path
        raise ValueError(str(e).removeprefix("licence: ")) from None


def language_keys(language: str) -> tuple[str, str]:
    """The keys a per-language setting is looked up by, most specific first: the code as
    written (lower case, ``_`` → ``-``) and its base language (``zh`` for any Chinese)."""
    lang = language.lower().replace("_", "-")
    return lang, "zh" if lang.startswith(("zh", "cmn")) else lang.split("-")[0]


class _Section(BaseModel):
    """Frozen, no unknown keys, every float finite (``.inf``/``.nan`` in YAML is a config error
    naming the key, never an OverflowError deep in a run)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
