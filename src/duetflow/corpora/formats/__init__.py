"""Readers of the annotation formats data engineers already have, as the project's turns.

One module per format: :mod:`~duetflow.corpora.formats.textgrid` (Praat TextGrid, long and
short text formats, UTF-8 or UTF-16 as Praat saves them), :mod:`~duetflow.corpora.formats.rttm`
(NIST RTTM ``SPEAKER`` lines, as diarisation tools write them) and
:mod:`~duetflow.corpora.formats.eaf` (ELAN ``.eaf``, one tier per speaker). Each reads through
:mod:`duetflow.corpora.text` (regular files only, size-bounded, BOM-aware decoding) and returns
an :class:`~duetflow.corpora.formats.annotation.Annotation`: turns checked by the same rules as
every adapter's (finite, ``0 <= start < end``, one speaker never says two things at once). A
broken file raises :class:`~duetflow.errors.InputError` naming the file, the line or element and
the cause, so ``CorpusAdapter.guarded`` quarantines that item.

The package ``__init__`` imports nothing: an adapter imports the reader it uses.
"""
