"""Studio sessions: recorded HH/HM conversations, ingested incrementally (adapter ``studio``).

A studio root holds one folder per recorded session (at any depth) with a ``session.yaml``
sidecar (:class:`SessionSidecar`, documented with its JSON Schema in
docs/studio-sessions.md) and its audio in one of three layouts:

* ``tracks`` — one file per speaker (a mic track, the S2S system's line-out) →
  :class:`~duetflow.records.dialogue.PerSpeakerSource`;
* ``stereo`` — one file, one speaker per channel →
  :class:`~duetflow.records.dialogue.MultichannelSource`;
* ``mono`` — one mixed file → :class:`~duetflow.records.dialogue.MixedMonoSource`.

Turns come, in this order of preference, from a transcript with timings (JSON), an RTTM file,
VAD per track with crosstalk attribution (:mod:`~duetflow.corpora.studio.segment`,
tracks/stereo), or a diarisation backend (:mod:`~duetflow.corpora.studio.diarize`, mono). A
mono session with none of these is rejected ``mono_without_diarization``: turns are never
guessed.

Every session folder yields exactly one ``Dialogue`` or ``Rejection``. Unchanged sessions are
re-emitted from the incremental state (option ``state_dir``, by default
``<config.workdir>/studio_state/<root key>``) without reading audio
(:mod:`~duetflow.corpora.studio.state`); ``StudioAdapter.counters`` says what was done.

Modules: ``adapter`` (the adapter), ``discovery`` (the walk), ``sidecar`` (``session.yaml``),
``transcript`` (transcript JSON, RTTM), ``hm`` (HM design checks), ``turns`` (which source a
session's turns come from), ``segment`` (streamed VAD with crosstalk attribution), ``state``
(incremental state), ``diarize`` (backends, optional extra). The names below are the package's
public API.
"""

from duetflow.corpora.studio.adapter import StudioAdapter, StudioCounters
from duetflow.corpora.studio.hm import (
    find_disclosure,
    non_target_language,
    opening_line_similarity,
    script_units,
)
from duetflow.corpora.studio.sidecar import SessionSidecar, load_sidecar, sidecar_json_schema
from duetflow.corpora.studio.transcript import load_rttm, load_transcript

__all__ = [
    "SessionSidecar",
    "StudioAdapter",
    "StudioCounters",
    "find_disclosure",
    "load_rttm",
    "load_sidecar",
    "load_transcript",
    "non_target_language",
    "opening_line_similarity",
    "script_units",
    "sidecar_json_schema",
]
