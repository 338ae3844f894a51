"""Sample recordings with their annotations written as Praat, ELAN and diarisation tools do.

The ``duetflow corpora new --layout textgrid|eaf|rttm`` sample generators write their corpora
with these: :func:`stereo_take` (two speech-like voices, one per channel with a little
crosstalk, alternating turns) and one writer per format, following each tool's own output
(Praat's long text format with empty intervals filling every gap, UTF-16 with a BOM when the
text is not ASCII; ELAN's ``TIME_ORDER`` + ``ALIGNABLE_ANNOTATION``; RTTM ``SPEAKER`` lines with
``<NA>`` fields). The readers in :mod:`duetflow.corpora.formats` are tested on hand-written and
praatio-written files, not on these.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from xml.sax.saxutils import escape as xml_escape
from xml.sax.saxutils import quoteattr

import numpy as np

from duetflow.demo.voice import random_voice, room_tone, speech
from duetflow.seeding import rng_for

#: A turn as the writers take it: (speaker, start s, end s, text).
Span = tuple[str, float, float, str]


def stereo_take(
    seed: int, corpus: str, item: str, speakers: Sequence[str], n_turns: int = 8, sr: int = 16000
) -> tuple[np.ndarray, list[Span]]:
    """A two-channel recording (``speakers[i]`` on channel ``i``, the other 26 dB down) and its
    alternating turns, seeded by ``(seed, corpus, item)``."""
    rng = rng_for(seed, corpus, item)
    voices = {speakers[0]: random_voice(rng, "F"), speakers[1]: random_voice(rng, "M")}
    t, spans = 0.5, []
    for i in range(n_turns):
        who = speakers[i % 2]
        dur = round(float(rng.uniform(1.5, 3.0)), 3)
        spans.append((who, round(t, 3), round(t + dur, 3), f"turn {i} of {who}"))
        t += dur + float(rng.uniform(0.2, 0.6))
    n = int((t + 0.5) * sr)
    tracks = [room_tone(n / sr, sr, -58.0, rng) for _ in speakers]
    for who, a, b, _ in spans:
        sig = speech(b - a, sr, voices[who], rng)
        i = round(a * sr)
        tracks[speakers.index(who)][i : i + len(sig)] += sig[: n - i]
    left, right = tracks
    return 0.5 * np.stack([left + 0.05 * right, right + 0.05 * left], axis=1), spans


def _praat_string(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def write_textgrid(folder: Path, name: str, spans: Sequence[Span], duration_s: float) -> Path:
    """``folder/<name>.TextGrid`` in Praat's long text format, a tier per speaker (in the order
    they first speak); UTF-16 (big-endian, with BOM) when any text is not ASCII, as Praat saves
    it."""
    xmax = round(duration_s, 4)
    names = list(dict.fromkeys(s for s, *_ in spans))
    lines = [
        'File type = "ooTextFile"',
        'Object class = "TextGrid"',
        "",
        "xmin = 0 ",
        f"xmax = {xmax} ",
        "tiers? <exists> ",
        f"size = {len(names)} ",
        "item []: ",
    ]
    for k, tier in enumerate(names, 1):
        filled: list[tuple[float, float, str]] = []
        t = 0.0
        for _, a, b, text in (s for s in spans if s[0] == tier):
            if a > t:
                filled.append((t, a, ""))
            filled.append((a, b, text))
            t = b
        if t < xmax:
            filled.append((t, xmax, ""))
        lines += [
            f"    item [{k}]:",
            '        class = "IntervalTier" ',
            f"        name = {_praat_string(tier)} ",
            "        xmin = 0 ",
            f"        xmax = {xmax} ",
            f"        intervals: size = {len(filled)} ",
        ]
        for i, (a, b, text) in enumerate(filled, 1):
            lines += [
                f"        intervals [{i}]:",
                f"            xmin = {a} ",
                f"            xmax = {b} ",
                f"            text = {_praat_string(text)} ",
            ]
    text = "\n".join(lines) + "\n"
    data = text.encode("utf-8") if text.isascii() else b"\xfe\xff" + text.encode("utf-16-be")
    path = folder / f"{name}.TextGrid"
    path.write_bytes(data)
    return path


def write_rttm(folder: Path, name: str, spans: Sequence[Span], duration_s: float = 0.0) -> Path:
    """``folder/<name>.rttm``: ``SPEAKER`` lines (file id ``name``), ten fields each, as
    pyannote and dscore write them."""
    rows = [
        f"SPEAKER {name} 1 {a:.3f} {b - a:.3f} <NA> <NA> {who} <NA> <NA>"
        for who, a, b, _ in sorted(spans, key=lambda s: s[1])
    ]
    path = folder / f"{name}.rttm"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def write_eaf(
    folder: Path,
    name: str,
    spans: Sequence[Span],
    duration_s: float = 0.0,
    participants: Mapping[str, str] | None = None,
) -> Path:
    """``folder/<name>.eaf`` as ELAN 3.0 saves it, for the media ``<name>.wav``: a TIME_ORDER of
    millisecond slots and a top-level tier per speaker (``TIER_ID`` the speaker,
    ``PARTICIPANT`` from ``participants`` when given)."""
    media = f"{name}.wav"
    slots: list[str] = []
    tiers: dict[str, list[str]] = {}
    for k, (who, a, b, text) in enumerate(spans, 1):
        s1, s2 = f"ts{2 * k - 1}", f"ts{2 * k}"
        slots += [
            f'        <TIME_SLOT TIME_SLOT_ID="{s1}" TIME_VALUE="{round(a * 1000)}"/>',
            f'        <TIME_SLOT TIME_SLOT_ID="{s2}" TIME_VALUE="{round(b * 1000)}"/>',
        ]
        tiers.setdefault(who, []).append(
            f'        <ANNOTATION>\n            <ALIGNABLE_ANNOTATION ANNOTATION_ID="a{k}" '
            f'TIME_SLOT_REF1="{s1}" TIME_SLOT_REF2="{s2}">\n'
            f"                <ANNOTATION_VALUE>{xml_escape(text)}</ANNOTATION_VALUE>\n"
            "            </ALIGNABLE_ANNOTATION>\n        </ANNOTATION>"
        )
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<ANNOTATION_DOCUMENT AUTHOR="" DATE="2024-01-01T00:00:00+00:00" FORMAT="3.0" '
        'VERSION="3.0" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
        'xsi:noNamespaceSchemaLocation="http://www.mpi.nl/tools/elan/EAFv3.0.xsd">',
        '    <HEADER MEDIA_FILE="" TIME_UNITS="milliseconds">',
        f"        <MEDIA_DESCRIPTOR MEDIA_URL={quoteattr('file:///' + media)} "
        f'MIME_TYPE="audio/x-wav" RELATIVE_MEDIA_URL={quoteattr("./" + media)}/>',
        "    </HEADER>",
        "    <TIME_ORDER>",
        *slots,
        "    </TIME_ORDER>",
    ]
    for who, anns in tiers.items():
        part = (participants or {}).get(who, who)
        out += [
            f'    <TIER LINGUISTIC_TYPE_REF="default-lt" PARTICIPANT={quoteattr(part)} '
            f"TIER_ID={quoteattr(who)}>",
            *anns,
            "    </TIER>",
        ]
    out += [
        '    <LINGUISTIC_TYPE GRAPHIC_REFERENCES="false" LINGUISTIC_TYPE_ID="default-lt" '
        'TIME_ALIGNABLE="true"/>',
        "</ANNOTATION_DOCUMENT>",
    ]
    path = folder / f"{name}.eaf"
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path
