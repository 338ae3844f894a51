"""Where a studio session's turns come from, in the package's order of preference.

1. the transcript's own timings (JSON with ``start``/``end``);
2. an RTTM file;
3. VAD per track with crosstalk attribution (:mod:`~duetflow.corpora.studio.segment`; layouts
   ``tracks`` and ``stereo``), streamed block by block;
4. a diarisation backend (:mod:`~duetflow.corpora.studio.diarize`; a ``mono`` mix), or the
   session is rejected ``mono_without_diarization``: turns are never guessed.

Given timings (1, 2) are checked against the audio and one speaker's pasted-twice or slightly
overlapping lines are merged
(:func:`~duetflow.corpora.source_checks.merge_same_speaker_duplicates`); turns found in the audio
(3, 4) get the transcript's text when there is one
(:func:`~duetflow.corpora.studio.transcript.align_text`); a transcript whose text cannot all be
placed rejects the session ``transcript_unaligned``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duetflow.audio.io import read_frames, to_mono
from duetflow.config import RunConfig
from duetflow.corpora.source_checks import check_turn_timing, merge_same_speaker_duplicates
from duetflow.corpora.studio.diarize import DiarizationBackend, segments_to_turns
from duetflow.corpora.studio.segment import TrackSource, detect_turns_in_files, echo_pairs
from duetflow.corpora.studio.sidecar import SessionSidecar
from duetflow.corpora.studio.transcript import TranscriptTurn, align_text, load_rttm
from duetflow.errors import InputError
from duetflow.records.dialogue import Turn


@dataclass(frozen=True)
class SessionTurns:
    """A session's turns and what the provenance records of finding them."""

    turns: list[Turn]
    provenance: dict[str, Any]  # turn_source and what that source reports, in insertion order


def session_turns(
    meta: SessionSidecar,
    files: Mapping[str, Path],
    transcript: Sequence[TranscriptTurn] | None,
    transcript_path: Path | None,
    rttm_path: Path | None,
    duration_s: float,
    folder: Path,
    config: RunConfig,
    diarizer: Callable[[str], DiarizationBackend],
    count_reads: Callable[[int], None],
) -> SessionTurns:
    """The turns of one session (see the module docstring for the order of the sources).

    ``files`` maps speaker id to its checked audio file, ``duration_s`` is the longest track,
    ``diarizer`` returns the configured backend (built once per adapter); ``count_reads(n)`` is
    told before ``n`` tracks are decoded (none when the timings are given). Raises InputError
    (``bad_timing``, ``overlapping_turns``, ``mono_without_diarization``,
    ``diarization_speakers``, ``no_speech``) naming the file at fault.
    """
    ids = [sp.id for sp in meta.speakers]
    provenance: dict[str, Any] = {}
    given: list[Turn] | None = None
    turn_source = ""
    if transcript is not None and transcript and transcript[0].start is not None:
        given = [
            Turn(
                t.speaker,
                round(float(t.start or 0), 3),
                round(float(t.end or 0), 3),
                t.text,
                t.kind,
            )
            for t in transcript
        ]
        turn_source = "transcript"
    elif rttm_path is not None:
        given = load_rttm(rttm_path, ids)
        turn_source = "rttm"
    if given is not None:
        timing_file = rttm_path if turn_source == "rttm" else transcript_path
        assert timing_file is not None  # given timings come from one of the two files
        for t in given:
            if t.end <= t.start:
                raise InputError(
                    timing_file,
                    f"turn {t.speaker} {t.start}..{t.end} has no duration",
                    reason="bad_timing",
                )
        check_turn_timing(given, duration_s, timing_file, config.studio.timing_tolerance_s)
        given, fixes = merge_same_speaker_duplicates(given, timing_file)
        provenance.update(fixes.provenance())
        turns = sorted(given, key=lambda t: (t.start, ids.index(t.speaker)))
    elif meta.layout in ("tracks", "stereo"):
        # streamed block by block: memory does not grow with the session's length
        count_reads(len(meta.speakers))
        result = detect_turns_in_files(
            {sp.id: TrackSource(files[sp.id], sp.channel) for sp in meta.speakers},
            config.segment,
            echo=echo_pairs({sp.id: sp.role for sp in meta.speakers}, meta.layout, config.segment),
        )
        turns = list(result.turns)
        turn_source = "vad"
        provenance["segmentation"] = result.provenance()
    else:
        cfg = config.segment
        backend_name = cfg.diarization_backend
        if not backend_name:
            raise InputError(
                files[ids[0]],
                "mono mix without transcript timings or RTTM and no diarisation backend "
                "(set segment.diarization_backend, e.g. 'pyannote')",
                reason="mono_without_diarization",
            )
        backend = diarizer(backend_name)
        # the whole track: a diarisation backend needs the recording, not blocks of it
        channel = meta.speakers[0].channel
        count_reads(1)
        x, sr = read_frames(files[ids[0]], channel=channel, mono=channel is None)
        segs = backend.diarize(to_mono(x), sr, num_speakers=2)
        try:
            turns, dinfo = segments_to_turns(
                segs,
                ids,
                min_speech_s=cfg.min_speech_ms / 1000,
                min_silence_s=cfg.min_silence_ms / 1000,
            )
        except ValueError as e:
            raise InputError(files[ids[0]], str(e), reason="diarization_speakers") from None
        turn_source = f"diarization:{backend_name}"
        provenance["diarization"] = dinfo
    if not turns:
        raise InputError(folder, "no speech found in any track", reason="no_speech")
    provenance["turn_source"] = turn_source

    if transcript is not None and turn_source != "transcript":
        al = align_text(turns, list(transcript), ids)
        provenance["transcript_alignment"] = al.summary()
        if not al.complete:  # never publish a transcribed session with its text missing
            raise InputError(
                transcript_path or folder,
                f"transcript text cannot be placed on the turns found in the audio: {al.problem()}",
                reason="transcript_unaligned",
            )
        turns = al.turns
    return SessionTurns(turns, provenance)
