"""Licences of what a dataset is made of: SPDX ids, named EULAs, and what a release implies.

Every dialogue carries one ``licence`` string from ingest to the published manifest: an SPDX
licence id (``CC-BY-SA-4.0``), a named licence in SPDX's ``LicenseRef-`` form
(``LicenseRef-IEMOCAP-EULA``), or an ``AND`` expression of them when several apply at once (a
pseudo-human dialogue: the TTS weights' licence *and* those of the voices it cloned).

Where a licence comes from:

* a corpus adapter declares its source's licence (``CorpusAdapter.licence``); the run config
  may override it per corpus (``corpora[].licence``);
* studio sessions take ``studio.licence`` from the config (they are yours to declare);
* a PH dialogue combines its TTS backend's ``output_licence`` (the weights' licence, which binds
  what they generate) with the licences of the reference dialogues its voices came from.

:func:`release_terms` turns the set of licences a release holds into the sentences of its
dataset card, so the card says what *this* release's sources imply, not a fixed warning.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from duetflow.errors import ConfigError

#: What a dialogue carries when nothing declared its licence (only legacy rows or a TTS backend
#: that does not declare one); the card flags it.
UNDECLARED = "LicenseRef-undeclared"
IEMOCAP_EULA = "LicenseRef-IEMOCAP-EULA"
#: Default of ``studio.licence``: in-house recordings under the participants' consent forms.
STUDIO_CONSENT = "LicenseRef-studio-consent"

_ID = re.compile(r"^(LicenseRef-)?[A-Za-z0-9][A-Za-z0-9.+-]*$")
_OPERATORS = ("AND", "OR", "WITH")


@dataclass(frozen=True)
class LicenceTerms:
    """What one licence allows, as far as a dataset user needs to know.

    ``None`` means "not known to duetflow": the card then tells the reader to check.
    """

    id: str
    name: str
    commercial: bool | None
    derivatives: bool | None
    share_alike: bool = False
    attribution: bool = True
    note: str = ""

    @property
    def known(self) -> bool:
        return self.commercial is not None


def _cc(version: str, *parts: str) -> LicenceTerms:
    tag = "-".join(("CC", "BY", *parts, version))
    return LicenceTerms(
        id=tag,
        name=f"Creative Commons {' '.join(('BY', *parts))} {version}",
        commercial="NC" not in parts,
        derivatives="ND" not in parts,
        share_alike="SA" in parts,
    )


#: Licences duetflow knows the terms of (the built-in sources, TTS weights, common choices).
KNOWN: dict[str, LicenceTerms] = {
    t.id: t
    for t in (
        _cc("4.0"),
        _cc("4.0", "SA"),
        _cc("4.0", "NC"),
        _cc("4.0", "NC", "SA"),
        _cc("4.0", "NC", "ND"),
        _cc("4.0", "ND"),
        LicenceTerms("CC0-1.0", "CC0 1.0 (public domain)", True, True, attribution=False),
        LicenceTerms("Apache-2.0", "Apache License 2.0", True, True),
        LicenceTerms("MIT", "MIT License", True, True),
        LicenceTerms(
            IEMOCAP_EULA,
            "USC SAIL IEMOCAP release form (academic, non-commercial; by request)",
            commercial=False,
            derivatives=None,
            note="each user must sign the release form with USC SAIL",
        ),
        LicenceTerms(
            STUDIO_CONSENT,
            "in-house studio recordings under the participants' consent forms",
            commercial=None,
            derivatives=None,
            note="what the consent forms allow; set studio.licence to the real terms",
        ),
        LicenceTerms(
            UNDECLARED,
            "no licence declared",
            commercial=None,
            derivatives=None,
            note="the source or TTS backend declared no licence",
        ),
    )
}

#: Licence ids as the Hugging Face hub spells them (card front matter ``license:``).
_HF_IDS = {
    "CC-BY-4.0": "cc-by-4.0",
    "CC-BY-SA-4.0": "cc-by-sa-4.0",
    "CC-BY-NC-4.0": "cc-by-nc-4.0",
    "CC-BY-NC-SA-4.0": "cc-by-nc-sa-4.0",
    "CC-BY-NC-ND-4.0": "cc-by-nc-nd-4.0",
    "CC-BY-ND-4.0": "cc-by-nd-4.0",
    "CC0-1.0": "cc0-1.0",
    "Apache-2.0": "apache-2.0",
    "MIT": "mit",
}


def check_licence(value: str, where: str = "licence") -> str:
    """``value`` if it is an SPDX id, a ``LicenseRef-`` name or an expression of them.

    Expressions join ids with ``AND`` / ``OR`` / ``WITH`` (no parentheses). Raises
    :class:`ConfigError` naming ``where`` otherwise.
    """
    tokens = value.split()
    ok = bool(tokens) and len(tokens) % 2 == 1
    for i, tok in enumerate(tokens):
        ok = ok and (tok in _OPERATORS if i % 2 else bool(_ID.match(tok)))
    if not ok:
        raise ConfigError(
            f"{where}: {value!r} is not a licence id: use an SPDX id (CC-BY-4.0, Apache-2.0), "
            "a named licence as LicenseRef-<name> (LicenseRef-IEMOCAP-EULA), or ids joined "
            "by AND"
        )
    return " ".join(tokens)


def parts(licence: str) -> list[str]:
    """The licences a dialogue's licence expression requires at once (split on ``AND``)."""
    if " OR " in licence or " WITH " in licence:
        return [licence]
    return [p.strip() for p in licence.split(" AND ") if p.strip()]


def combine(*licences: str | None) -> str:
    """One expression for material that is bound by all of ``licences`` (sorted, no repeats).

    ``None`` and empty entries are skipped; nothing at all gives :data:`UNDECLARED`.
    """
    found = sorted({p for lic in licences if lic for p in parts(lic)})
    return " AND ".join(found) if found else UNDECLARED


def terms(licence: str) -> LicenceTerms:
    """The terms of one licence id (unknown ids get unknown terms, never a guess)."""
    known = KNOWN.get(licence)
    if known is not None:
        return known
    return LicenceTerms(licence, licence, commercial=None, derivatives=None)


def hf_licence(licences: Iterable[str]) -> str:
    """The card's ``license:`` value: the hub id when one known licence covers everything."""
    ids = sorted({p for lic in licences for p in parts(lic)})
    if len(ids) == 1 and ids[0] in _HF_IDS:
        return _HF_IDS[ids[0]]
    return "other"


def release_terms(licences: Iterable[str]) -> list[str]:
    """Sentences saying what the licences a release holds imply for the dataset as a whole."""
    ids = sorted({p for lic in licences for p in parts(lic)})
    if not ids:
        return ["The release holds no dialogues, so no licence applies."]
    all_terms = [terms(i) for i in ids]
    out: list[str] = []
    nc = [t.id for t in all_terms if t.commercial is False]
    nd = [t.id for t in all_terms if t.derivatives is False]
    sa = [t.id for t in all_terms if t.share_alike]
    unknown = [t.id for t in all_terms if not t.known]
    if len(ids) == 1:
        out.append(f"Every dialogue is under {ids[0]}.")
    else:
        out.append(
            "Dialogues are under different licences (see the table); each dialogue's own "
            "licence is its `licence` column, and material combining several is bound by all."
        )
    if nc:
        out.append(f"Non-commercial use only for dialogues under {', '.join(nc)}.")
    if nd:
        out.append(
            f"{', '.join(nd)} forbid(s) sharing adapted material: these dialogues are windowed, "
            "re-timed and loudness-normalised, so check before redistributing them."
        )
    if sa:
        out.append(f"Share-alike: material derived from {', '.join(sa)} must keep that licence.")
    out += [f"{t.id}: {t.note}." for t in all_terms if t.note]
    if unknown:
        out.append(f"Terms not known to duetflow: {', '.join(unknown)}; check them before any use.")
    if not (nc or nd or unknown):
        out.append("All sources allow commercial use and derivatives, with attribution.")
    return out


__all__ = [
    "IEMOCAP_EULA",
    "KNOWN",
    "STUDIO_CONSENT",
    "UNDECLARED",
    "LicenceTerms",
    "check_licence",
    "combine",
    "hf_licence",
    "parts",
    "release_terms",
    "terms",
]
