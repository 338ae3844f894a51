"""The typed records of a rendered dialogue: turn rows, the dialogue row and its provenance."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import duetflow
from duetflow.acoustics.source_bandwidth import BandwidthRecord
from duetflow.audio import loudness as ld
from duetflow.audio.io import Audio
from duetflow.config import RunConfig
from duetflow.licences import UNDECLARED
from duetflow.records.convert import dumps
from duetflow.records.dialogue import Dialogue, TurnKind
from duetflow.records.locations import dialogue_roots, public_provenance, relative_path
from duetflow.records.rows import RenderedDialogueRow, RenderedTurnRow
from duetflow.rendering.source_rate import source_rate


@dataclass(frozen=True)
class RenderedDialogue:
    """The typed records of one rendered dialogue (:mod:`duetflow.records.rows`)."""

    record: RenderedDialogueRow
    turn_records: tuple[RenderedTurnRow, ...]

    @property
    def row(self) -> dict[str, Any]:
        """The dialogue record as a table row (what a writer takes)."""
        return self.record.to_row()

    @property
    def turns(self) -> list[dict[str, Any]]:
        """The turn records as table rows, in output order."""
        return [t.to_row() for t in self.turn_records]


@dataclass
class Rendering:
    """What a layout (separable or mixed) produced, before the ceiling gain and the write."""

    out: Audio
    stems: Audio | None
    rows: list[RenderedTurnRow]
    gaps: list[float]
    measured: list[float | None]
    corrected: int
    loud: dict[str, ld.Loudness]
    gains: dict[str, float]
    tone: dict[str, Any]
    dropped: list[int]
    ceiling_db: float
    #: ``out`` at ``ceiling_db`` as 16-bit PCM holds it, when the mixdown made it
    #: (:attr:`duetflow.rendering.mixdown.Mix.written`)
    written: Audio | None = None
    #: the source's effective bandwidth and the low-pass applied (``sources.bandwidth_record``)
    bandwidth: BandwidthRecord | None = None


def turn_row(d: Dialogue, index: int, hosted: bool, start: float, end: float) -> RenderedTurnRow:
    """A rendered turn; ``hosted``: a backchannel inside another speaker's turn (a
    stand-alone backchannel is laid out, and reported, as an ordinary turn)."""
    o = d.turns[index]
    return RenderedTurnRow(
        dialogue_id=d.id,
        turn_index=0,  # renumbered in output order
        speaker=o.speaker,
        kind=str(TurnKind.BACKCHANNEL if hosted else TurnKind.TURN),
        start_s=round(start, 6),
        end_s=round(end, 6),
        orig_start_s=float(o.annotated_span[0]),
        orig_end_s=float(o.annotated_span[1]),
        text=o.text,
    )


def ordered_turn_rows(rows: Sequence[RenderedTurnRow]) -> list[RenderedTurnRow]:
    """The turn rows in output order (start, then annotated start), numbered from 0."""
    return [
        replace(r, turn_index=k)
        for k, r in enumerate(sorted(rows, key=lambda r: (r.start_s, r.orig_start_s)))
    ]


def dialogue_record(
    d: Dialogue,
    config: RunConfig,
    res: Rendering,
    files: Mapping[str, int],
    *,
    audio_path: str,
    audio_sha256: str,
    duration_s: float,
    stems_path: str | None,
    n_turns: int,
    stereo: tuple[str, str] | None = None,
) -> RenderedDialogueRow:
    """The dialogue row of a rendered window, its provenance (what was read, drawn, measured,
    gained) serialised in it. Levels and gains include the true-peak ceiling's gain."""
    sr = config.sample_rate
    a, b = d.speaker_a.id, d.speaker_b.id
    total = {s: res.gains.get(s, 0.0) + res.ceiling_db for s in (a, b)}
    rendered = {
        s: (res.loud[s].lufs + total[s] if res.loud[s].lufs > ld.SILENCE_LUFS else ld.SILENCE_LUFS)
        for s in (a, b)
    }
    # trainers (issue 16): source rate + resampling, from the headers the render read
    src_rate = source_rate(d.source, sr, files)
    provenance = {
        "source_kind": d.source.kind,
        "source_files": [relative_path(f, dialogue_roots(d)) for f in files],
        "window": list(d.window) if d.window else None,
        "orig_turns": [[t.speaker, str(t.kind), *t.annotated_span] for t in d.turns],
        "dropped_turns": res.dropped,
        "gaps_ms": [round(g * 1000, 3) for g in res.gaps],
        "gaps_measured_ms": res.measured,
        "gap_corrections": res.corrected,
        "loudness": {
            s: {"measured_lufs": round(res.loud[s].lufs, 3), "method": res.loud[s].method}
            for s in (a, b)
        },
        "ceiling_gain_db": round(res.ceiling_db, 4),
        "room_tone": res.tone,
        "bandwidth": None if res.bandwidth is None else res.bandwidth.as_provenance(),
        "stems_path": stems_path,
        "seed": config.seed,
        "config_hash": config.section_hash("render", "sample_rate", "seed"),
        "code_version": duetflow.__version__,
        "input": public_provenance(d.provenance),
        "resampling": src_rate.resampling,
    }
    gaps_ms = [g * 1000 for g in res.gaps]
    return RenderedDialogueRow.of_dialogue(
        d,
        audio_path=audio_path,
        sha256=audio_sha256,
        duration_s=duration_s,
        sample_rate=sr,
        num_channels=1,
        n_turns=n_turns,
        loudness_lufs_a=round(rendered[a], 4),
        loudness_lufs_b=round(rendered[b], 4),
        gain_db_a=round(total[a], 4),
        gain_db_b=round(total[b], 4),
        gap_ms_min=round(min(gaps_ms), 3) if gaps_ms else None,
        gap_ms_max=round(max(gaps_ms), 3) if gaps_ms else None,
        provenance=dumps(provenance),
        # -- trainers (issue 16): licence and source sample rate per dialogue --
        licence=d.licence or UNDECLARED,
        source_sample_rate=src_rate.sample_rate,
        # -- trainers (issue 27): the two-channel file (path, sha256), when rendered --
        stereo_path=stereo[0] if stereo else None,
        stereo_sha256=stereo[1] if stereo else None,
    )
