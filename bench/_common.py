"""What the bench scripts share: the tables of a synthetic rendered work directory, as records.

A bench script runs as ``python bench/<name>.py``, so ``bench/`` is ``sys.path[0]`` and this
module imports as ``_common``. Rows are the typed records of :mod:`duetflow.records.rows`, so a
column added there shows up here as a missing argument, not as a silently null column.
"""

from __future__ import annotations

from pathlib import Path

from duetflow.records.dialogue import DesignFields
from duetflow.records.manifest import RENDERED_DIALOGUE_SCHEMA, RENDERED_TURN_SCHEMA, WorkdirWriter
from duetflow.records.rows import RenderedDialogueRow, RenderedTurnRow


def rendered_writer(root: Path, turn_rows_per_group: int) -> WorkdirWriter:
    """The writer of a rendered work directory's three tables (dialogue row groups of 512)."""
    return WorkdirWriter(
        root, RENDERED_DIALOGUE_SCHEMA, RENDERED_TURN_SCHEMA, (512, turn_rows_per_group, 4096)
    )


def kept_dialogue(
    dialogue_id: str,
    source_id: str,
    *,
    speakers: tuple[str, str],
    audio_path: str,
    sha256: str,
    duration_s: float,
    sample_rate: int,
    n_turns: int,
    corpus: str = "bench",
    language: str = "en",
    loudness_lufs: tuple[float, float] = (-23.0, -23.0),
    gap_ms: tuple[float, float] = (200.0, 200.0),
) -> RenderedDialogueRow:
    """A rendered HH dialogue as the benches write it: mono, no gain, CC-BY-4.0, no topic."""
    return RenderedDialogueRow(
        dialogue_id=dialogue_id,
        source_id=source_id,
        corpus=corpus,
        category="HH",
        language=language,
        topic="",
        speaker_a=speakers[0],
        speaker_b=speakers[1],
        design=DesignFields(),
        audio_path=audio_path,
        sha256=sha256,
        duration_s=duration_s,
        sample_rate=sample_rate,
        num_channels=1,
        n_turns=n_turns,
        loudness_lufs_a=loudness_lufs[0],
        loudness_lufs_b=loudness_lufs[1],
        gain_db_a=0.0,
        gain_db_b=0.0,
        gap_ms_min=gap_ms[0],
        gap_ms_max=gap_ms[1],
        provenance="{}",
        licence="CC-BY-4.0",
        source_sample_rate=sample_rate,
    )


def spoken_turn(
    dialogue_id: str, index: int, speaker: str, start_s: float, end_s: float, text: str
) -> RenderedTurnRow:
    """A rendered turn at its source times (nothing moved by rendering)."""
    return RenderedTurnRow(
        dialogue_id=dialogue_id,
        turn_index=index,
        speaker=speaker,
        kind="turn",
        start_s=start_s,
        end_s=end_s,
        orig_start_s=start_s,
        orig_end_s=end_s,
        text=text,
    )
