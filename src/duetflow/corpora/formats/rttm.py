"""NIST RTTM → turns: one ``SPEAKER`` line per turn, as diarisation tools and md-eval write it.

An RTTM line is ten space-separated fields (NIST RT-09 evaluation plan)::

    SPEAKER <file-id> <channel> <onset> <duration> <NA> <NA> <speaker> <NA> <NA>

``<NA>`` marks an unused field; pyannote, DiaPer, NeMo and dscore write exactly this. Older
files stop after the speaker name (8 or 9 fields), which is accepted. Lines of other types
(``SPKR-INFO``, ``LEXEME``, ``NON-SPEECH`` ...) are skipped and counted; a ``NON-LEX`` line with a
speaker name (laughter, breath) becomes that speaker's non-speech turn. ``;;`` starts a
comment. One RTTM file may hold several recordings: :func:`read_rttm` reads one
(``file_id=``), :func:`rttm_file_ids` lists them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from duetflow.corpora.formats.annotation import Annotation, finish, number
from duetflow.corpora.text import DEFAULT_ENCODINGS, MAX_TEXT_BYTES, read_text_as
from duetflow.errors import InputError
from duetflow.records.dialogue import Turn, TurnKind

#: Line types that become turns (``NON-LEX``: a speaker's laughter, breath, cough).
TURN_TYPES = {"SPEAKER": TurnKind.TURN, "NON-LEX": TurnKind.NONSPEECH}


def _lines(text: str) -> list[tuple[int, list[str]]]:
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if fields and not fields[0].startswith((";;", "#")):
            out.append((lineno, fields))
    return out


def rttm_file_ids(path: Path, encodings: Sequence[str] = DEFAULT_ENCODINGS) -> list[str]:
    """The recordings an RTTM file holds (its ``<file-id>`` column), in order of appearance."""
    text = read_text_as(path, encodings).text
    return list(dict.fromkeys(f[1] for _, f in _lines(text) if len(f) > 1))


def read_rttm(
    path: Path,
    *,
    file_id: str | None = None,
    speakers: Mapping[str, str] | None = None,
    encodings: Sequence[str] = DEFAULT_ENCODINGS,
    max_bytes: int = MAX_TEXT_BYTES,
) -> Annotation:
    """The turns of one recording of an RTTM file.

    ``file_id`` picks the recording (required when the file holds more than one).
    ``speakers`` maps RTTM speaker names to speaker ids; a name outside it is
    ``speaker_mismatch``. Raises InputError (``malformed_line`` with the line, ``bad_timing``,
    ``overlapping_turns``, ``no_turns``, and the file checks of
    :func:`~duetflow.corpora.text.read_bounded`).
    """
    decoded = read_text_as(path, encodings, max_bytes=max_bytes)
    lines = _lines(decoded.text)
    ids = list(dict.fromkeys(f[1] for _, f in lines if len(f) > 1))
    if file_id is None:
        if len(ids) > 1:
            raise InputError(path, f"holds {len(ids)} recordings ({ids[:4]}); name one",
                             reason="malformed_line")  # fmt: skip
        file_id = ids[0] if ids else ""
    turns: list[Turn] = []
    where: dict[int, str] = {}
    names: dict[str, str] = {}
    skipped: dict[str, int] = {}
    for lineno, f in lines:
        if len(f) < 8:
            raise InputError(path, f"expected 10 fields, got {len(f)}", reason="malformed_line",
                             line=lineno)  # fmt: skip
        kind = TURN_TYPES.get(f[0])
        if f[1] != file_id:
            continue
        if kind is None or f[7] == "<NA>":
            skipped[f[0]] = skipped.get(f[0], 0) + 1
            continue
        onset = number(path, f[3], "onset", lineno)
        duration = number(path, f[4], "duration", lineno)
        if duration <= 0:
            raise InputError(path, f"duration {f[4]} is not positive", reason="bad_timing",
                             line=lineno)  # fmt: skip
        if speakers is not None and f[7] not in speakers:
            raise InputError(path, f"speaker {f[7]!r} is not one of {sorted(speakers)}",
                             reason="speaker_mismatch", line=lineno)  # fmt: skip
        spk = speakers[f[7]] if speakers is not None else f[7]
        names[f[7]] = spk
        where[len(turns)] = f"line {lineno}"
        turns.append(Turn(spk, round(onset, 6), round(onset + duration, 6), "", kind))
    if not turns:
        raise InputError(path, f"no SPEAKER lines for recording {file_id!r}", reason="no_turns")
    ignored = tuple(f"{k} x{n}" for k, n in sorted(skipped.items()))
    extent = max(t.end for t in turns)
    return finish(path, turns, extent_s=extent, encoding=decoded.encoding, tiers=names,
                  ignored=ignored, where=where)  # fmt: skip
