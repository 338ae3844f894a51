"""ELAN ``.eaf`` → turns: one top-level tier per speaker.

An EAF file (ELAN Annotation Format, XML; schema ``EAFv3.0.xsd``) holds a ``TIME_ORDER`` of
``TIME_SLOT`` elements (``TIME_SLOT_ID``, ``TIME_VALUE`` in milliseconds; a slot without a
value is *unaligned*) and ``TIER`` elements (``TIER_ID``, optional ``PARTICIPANT``,
``PARENT_REF`` for a dependent tier). A top-level tier's annotations are
``ALIGNABLE_ANNOTATION`` elements (``TIME_SLOT_REF1``/``TIME_SLOT_REF2`` and an
``ANNOTATION_VALUE``); dependent tiers (translations, glosses: ``REF_ANNOTATION`` or
sub-divisions) carry no turns of their own and are listed as ignored.

Each top-level tier is a speaker: its ``PARTICIPANT`` when set, else its ``TIER_ID`` (or the
ids ``speakers=`` maps tier ids to, reading only those). Two tiers of one participant are one
speaker. An alignable annotation on an unaligned slot has no time: ``bad_timing`` naming it.

The XML is parsed with expat straight into an ElementTree builder, with a document type
declaration (and so any entity, internal or external) refused: nothing is fetched, and no
entity can expand (the care defusedxml takes, without the dependency). The bytes come from
:func:`duetflow.corpora.text.read_bounded` (regular files only, size-bounded).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from xml.parsers import expat

from duetflow.corpora.formats.annotation import (
    NONSPEECH_LABEL,
    Annotation,
    finish,
    kind_of,
    number,
)
from duetflow.corpora.text import MAX_TEXT_BYTES, read_bounded
from duetflow.errors import InputError
from duetflow.records.dialogue import Turn


def parse_xml(data: bytes, path: Path) -> ET.Element:
    """An XML document's root element; a DOCTYPE, entity or malformed XML is ``malformed_line``."""
    builder = ET.TreeBuilder()
    parser = expat.ParserCreate()

    def refuse(*_: object) -> int:
        raise InputError(path, "a document type declaration (DTD/entities) is not allowed in "
                         "an annotation file", reason="malformed_line",
                         line=parser.CurrentLineNumber)  # fmt: skip

    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    parser.ExternalEntityRefHandler = refuse
    parser.StartElementHandler = builder.start
    parser.EndElementHandler = lambda tag: builder.end(tag)
    parser.CharacterDataHandler = builder.data
    parser.buffer_text = True
    try:
        parser.Parse(data, True)
    except expat.ExpatError as e:
        raise InputError(path, f"not well-formed XML: {expat.errors.messages[e.code]}",
                         reason="malformed_line", line=e.lineno) from None  # fmt: skip
    return builder.close()


def read_eaf(
    path: Path,
    *,
    speakers: Mapping[str, str] | None = None,
    nonspeech: re.Pattern[str] | None = NONSPEECH_LABEL,
    max_bytes: int = MAX_TEXT_BYTES,
) -> Annotation:
    """The turns of an ELAN ``.eaf`` file, one top-level tier per speaker.

    ``speakers`` maps tier ids to speaker ids and reads only those tiers (a missing one is
    ``speaker_mismatch``). Raises InputError (``malformed_line``, ``bad_timing``,
    ``overlapping_turns``, ``no_turns``, and the file checks of
    :func:`~duetflow.corpora.text.read_bounded`).
    """
    root = parse_xml(read_bounded(path, max_bytes), path)
    if root.tag != "ANNOTATION_DOCUMENT":
        raise InputError(path, f"root element <{root.tag}>, not <ANNOTATION_DOCUMENT>",
                         reason="malformed_line")  # fmt: skip
    header = root.find("HEADER")
    units = header.get("TIME_UNITS", "milliseconds") if header is not None else "milliseconds"
    if units != "milliseconds":
        raise InputError(path, f"TIME_UNITS {units!r}; ELAN writes milliseconds",
                         reason="malformed_line")  # fmt: skip
    slots: dict[str, float | None] = {}
    for ts in root.iterfind("TIME_ORDER/TIME_SLOT"):
        value = ts.get("TIME_VALUE")
        slot = ts.get("TIME_SLOT_ID", "")
        slots[slot] = None if value is None else number(path, value, f"TIME_SLOT {slot}") / 1000
    tiers = root.findall("TIER")
    ids = [t.get("TIER_ID", "") for t in tiers]
    if speakers is not None:
        missing = [n for n in speakers if n not in ids]
        if missing:
            raise InputError(path, f"no tier {missing[0]!r}; the file has {ids}",
                             reason="speaker_mismatch")  # fmt: skip
    used: dict[str, str] = {}
    ignored: list[str] = []
    turns: list[Turn] = []
    where: dict[int, str] = {}
    for tier, tier_id in zip(tiers, ids, strict=True):
        if tier.get("PARENT_REF") or (speakers is not None and tier_id not in speakers):
            ignored.append(tier_id)
            continue
        if tier_id in used:
            raise InputError(path, f"two tiers with TIER_ID {tier_id!r}", reason="duplicate_id")
        if speakers is not None:
            spk = speakers[tier_id]
        else:
            spk = (tier.get("PARTICIPANT") or "").strip() or tier_id
        used[tier_id] = spk
        for ann in tier.iterfind("ANNOTATION/ALIGNABLE_ANNOTATION"):
            label = (ann.findtext("ANNOTATION_VALUE") or "").strip()
            if not label:
                continue
            aid = ann.get("ANNOTATION_ID", "?")
            refs = (ann.get("TIME_SLOT_REF1", ""), ann.get("TIME_SLOT_REF2", ""))
            times = [slots.get(r) for r in refs]
            for ref, t in zip(refs, times, strict=True):
                if ref not in slots:
                    raise InputError(path, f"annotation {aid} refers to time slot {ref!r}, "
                                     "which TIME_ORDER lacks", reason="malformed_line")  # fmt: skip
                if t is None:
                    raise InputError(path, f"annotation {aid} (tier {tier_id!r}) sits on the "
                                     f"unaligned time slot {ref!r}",
                                     reason="bad_timing")  # fmt: skip
            start, end = times
            assert start is not None and end is not None
            where[len(turns)] = f"annotation {aid} (tier {tier_id!r})"
            turns.append(Turn(spk, start, end, label, kind_of(label, nonspeech)))
    extent = max((v for v in slots.values() if v is not None), default=0.0)
    return finish(path, turns, extent_s=extent, encoding="xml", tiers=used, ignored=ignored,
                  where=where)  # fmt: skip
