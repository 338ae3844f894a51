"""Lazy validation of a rendered work directory, reported as one readable table.

Every failure is collected (pandera ``lazy=True`` per row group plus the cross-table checks
below) and reported as ``row id | column | check | value``, so a data engineer fixes a whole
corpus in one round instead of one error at a time.

Cross-table checks: every turn's dialogue exists, turns lie inside the audio, each dialogue's
speaker B has turns, ``n_turns`` matches, speaker-change gaps lie inside the configured window,
and every dialogue's audio exists with the recorded sha256, duration, sample rate and channels.

Audio checks on a sample (``audio_sample`` dialogues, chosen by a hash of the seed and the id):
every speaker-change gap measured on the file (:func:`duetflow.audio.edges.change_gaps`, the
measure the renderer places gaps by, against the floor it recorded laying) lies in the
configured window within :data:`ACOUSTIC_GAP_TOL_MS`, and no pause holds a run of digital
zeros longer than :data:`ZERO_RUN_MS` where the renderer laid room tone.

Memory: tables are read one row group at a time; what is kept across row groups is a small
record per dialogue (ids, duration, speakers), never audio or turn lists.
"""

from __future__ import annotations

import heapq
import json
import logging
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

import pandas as pd

from duetflow.audio.edges import change_gaps
from duetflow.audio.gap_tolerance import (
    ACOUSTIC_GAP_TOL_MS,
    ROW_GAP_TOL_MS,
    ZERO_RUN_MS,
    floor_in_file_db,
)
from duetflow.audio.io import AudioInfo, audio_info, read_frames
from duetflow.config import RunConfig
from duetflow.errors import InputError
from duetflow.hashing import sha256_file
from duetflow.records.manifest import DIALOGUES, REJECTIONS, TURNS
from duetflow.release.failures import (
    Failure,
    format_value,
    iter_batches,
    raise_if_failures,
    row_ids,
    schema_failures,
)
from duetflow.release.table_schemas import (
    TIME_TOL_S,
    dialogue_schema,
    rejection_schema,
    turn_schema,
)
from duetflow.seeding import seed_for

log = logging.getLogger(__name__)

#: Dialogues whose audio is re-measured by default.
AUDIO_SAMPLE = 8


def _records(df: pd.DataFrame) -> Iterator[dict[str, Any]]:
    for rec in df.to_dict("records"):
        yield {str(k): v for k, v in rec.items()}


@dataclass(slots=True)
class _DialogueFacts:
    """What is kept per dialogue between the dialogue and turn tables (one slotted record):
    its row's facts and the tally of its turn rows."""

    duration_s: float
    speaker_a: str
    speaker_b: str
    n_turns: int
    turns: int = 0  # turn rows seen
    b_turns: int = 0  # of them, speaker B's


def _null(v: Any) -> bool:
    """None, or the NaN pandas reads a null string cell as."""
    return v is None or (isinstance(v, float) and math.isnan(v))


def _inside(rel: object) -> TypeGuard[str]:
    """``rel`` is a non-empty relative path that stays inside the work directory."""
    return (
        isinstance(rel, str)
        and bool(rel)
        and not rel.startswith("/")
        and ".." not in rel.split("/")
    )


def _read_file(
    workdir: Path, did: str, rel: str, columns: tuple[str, str], sha: object
) -> tuple[AudioInfo | None, list[Failure]]:
    """The header of a row's audio file and the failures of reading it and of its sha256
    (``columns``: the row's path and checksum columns); no header when it cannot be read."""
    path = workdir / rel
    try:
        info = audio_info(path)
    except InputError as e:
        return None, [Failure("audio", did, columns[0], e.reason, str(path))]
    if sha != (digest := sha256_file(path)):
        return info, [Failure("audio", did, columns[1], f"file sha256 is {digest}", str(sha))]
    return info, []


def _check_stereo(workdir: Path, row: dict[str, Any], frames: int) -> list[Failure]:
    """The two-channel file of a row (issue 27), when it has one: there, with its sha256, two
    channels, the mix's rate and exactly the mix's ``frames`` (sample-aligned)."""
    did, rel, sha = str(row["dialogue_id"]), row.get("stereo_path"), row.get("stereo_sha256")
    if _null(rel) and _null(sha):
        return []
    if not _inside(rel):
        return [Failure("audio", did, "stereo_path", "relative_path_inside_root", str(rel))]
    info, out = _read_file(workdir, did, rel, ("stereo_path", "stereo_sha256"), sha)
    if info is None:
        return out
    if info.channels != 2:
        out.append(Failure("audio", did, "stereo_path", "two channels", str(info.channels)))
    if info.sample_rate != row["sample_rate"] or info.frames != frames:
        out.append(
            Failure("audio", did, "stereo_path", "sample-aligned with the mix (rate, frames)",
                    f"{info.sample_rate} Hz, {info.frames} frames")
        )  # fmt: skip
    return out


def _check_audio(workdir: Path, row: dict[str, Any]) -> list[Failure]:
    did, rel = str(row["dialogue_id"]), row["audio_path"]
    if not _inside(rel):
        return []  # reported by the schema check on audio_path
    info, out = _read_file(workdir, did, rel, ("audio_path", "sha256"), row["sha256"])
    if info is None:
        return out
    if row["sample_rate"] is not None and info.sample_rate != row["sample_rate"]:
        out.append(
            Failure(
                "audio",
                did,
                "sample_rate",
                f"file sample rate is {info.sample_rate}",
                format_value(row["sample_rate"]),
            )
        )
    if row["num_channels"] is not None and info.channels != row["num_channels"]:
        out.append(
            Failure(
                "audio",
                did,
                "num_channels",
                f"file has {info.channels}",
                format_value(row["num_channels"]),
            )
        )
    dur = row["duration_s"]
    if dur is not None and abs(info.duration_s - float(dur)) > max(
        TIME_TOL_S, 2 / info.sample_rate
    ):
        out.append(
            Failure(
                "audio",
                did,
                "duration_s",
                f"file lasts {info.duration_s:.4f} s",
                format_value(float(dur)),
            )
        )
    return out + _check_stereo(workdir, row, info.frames)


def _gap_failures(
    did: str, turns: list[tuple[int, float, float, str]], config: RunConfig
) -> list[Failure]:
    """Speaker-change gaps (floor end → other speaker's next turn) inside the configured window.

    Only ``kind == "turn"`` rows take part; overlapping turns (backchannels, non-floor-taking
    interruptions) are not gaps. The floor is the turn that ends last so far.
    """
    lo = config.render.gap_ms_min - ROW_GAP_TOL_MS
    hi = config.render.gap_ms_max + ROW_GAP_TOL_MS
    out = []
    floor_end: float | None = None
    floor_speaker = ""
    for idx, start, end, speaker in sorted(turns, key=lambda t: (t[1], t[0])):
        if floor_end is not None and speaker != floor_speaker and start >= floor_end:
            gap = (start - floor_end) * 1000.0
            if not lo <= gap <= hi:
                out.append(
                    Failure(
                        "turns",
                        f"{did}#{idx}",
                        "start_s",
                        f"speaker-change gap in [{config.render.gap_ms_min}, "
                        f"{config.render.gap_ms_max}] ms",
                        f"{gap:.1f} ms",
                    )
                )
        if floor_end is None or end > floor_end:
            floor_end, floor_speaker = end, speaker
    return out


TurnSpan = tuple[str, float, float]  # (speaker, start_s, end_s) of a floor-holding turn


def acoustic_failures(
    did: str, path: Path, turns: list[TurnSpan], floor_db: float | None, config: RunConfig
) -> list[Failure]:
    """Acoustic gaps and digital holes of one rendered dialogue, measured on its audio.

    ``floor_db``: the floor level the renderer recorded for the file's pauses
    (:func:`duetflow.audio.gap_tolerance.floor_in_file_db`): -inf measures them against the
    absolute floor (they are meant to be digital silence), a level also checks them for digital
    holes, None (not recorded) measures against each pause's own floor."""
    try:
        x, sr = read_frames(path, mono=True)
    except InputError as e:
        return [Failure("audio", did, "audio_path", e.reason, str(path))]
    r = config.render
    lo, hi = r.gap_ms_min - ACOUSTIC_GAP_TOL_MS, r.gap_ms_max + ACOUSTIC_GAP_TOL_MS
    digital = floor_db is not None and math.isinf(floor_db)
    gaps = change_gaps(x, sr, turns, digital=digital, floor_db=None if digital else floor_db)
    out = []
    for k, m in enumerate(gaps):
        if m is None:
            out.append(Failure("audio", f"{did}#change{k}", "audio_path", "acoustic_gap", "none"))
            continue
        gap = m.gap / sr * 1000.0
        if not lo <= gap <= hi:
            out.append(
                Failure(
                    "audio",
                    f"{did}#change{k}",
                    "audio_path",
                    f"acoustic gap in [{r.gap_ms_min}, {r.gap_ms_max}] ms "
                    f"(±{ACOUSTIC_GAP_TOL_MS:g})",
                    f"{gap:.1f} ms at {m.offset / sr:.3f} s",
                )
            )
        if floor_db is not None and not digital and m.zero_run > ZERO_RUN_MS / 1000.0 * sr:
            out.append(
                Failure(
                    "audio",
                    f"{did}#change{k}",
                    "audio_path",
                    "no digital zeros in a pause with room tone",
                    f"{m.zero_run} zero samples after {m.offset / sr:.3f} s",
                )
            )
    return out


class AudioSample:
    """A deterministic sample of dialogues (smallest hashes of seed and id), kept as they
    stream by: O(size) memory whatever the corpus size."""

    def __init__(self, size: int, seed: int) -> None:
        self.size, self.seed = size, seed
        self.heap: list[tuple[int, str, str, float | None]] = []  # (-hash, id, audio, floor)

    def offer(self, did: str, audio: str, provenance: Any) -> None:
        if self.size <= 0:
            return
        h = seed_for(self.seed, "validate-sample", did)
        item = (-h, did, audio, _floor_db(provenance))
        if len(self.heap) < self.size:
            heapq.heappush(self.heap, item)
        elif item[0] > self.heap[0][0]:
            heapq.heapreplace(self.heap, item)

    def chosen(self) -> dict[str, tuple[str, float | None]]:
        """Sampled dialogue id -> (audio reference, recorded floor level of its pauses)."""
        return {did: (audio, level) for _, did, audio, level in self.heap}


def _floor_db(provenance: Any) -> float | None:
    """The floor level a rendered file's pauses hold, from its provenance JSON."""
    try:
        prov = json.loads(provenance) if isinstance(provenance, str) else {}
    except json.JSONDecodeError:
        return None
    return floor_in_file_db(prov) if isinstance(prov, dict) else None


def collect_workdir_failures(
    workdir: str | Path,
    config: RunConfig | None = None,
    *,
    check_audio: bool = True,
    audio_sample: int = AUDIO_SAMPLE,
) -> list[Failure]:
    """Every failure of a rendered work directory (tables, cross-table, audio; the acoustic
    checks on ``audio_sample`` dialogues when ``check_audio``)."""
    wd = Path(workdir)
    cfg = config or RunConfig()
    failures: list[Failure] = []
    for name in (DIALOGUES, TURNS, REJECTIONS):
        if not (wd / name).is_file():
            failures.append(Failure("file", name, "*", "file_exists", str(wd / name)))
    if failures:
        return failures

    facts: dict[str, _DialogueFacts] = {}
    sample = AudioSample(audio_sample if check_audio else 0, cfg.seed)
    dschema = dialogue_schema(cfg)
    for df in iter_batches(wd / DIALOGUES):
        failures += schema_failures(dschema, df, "dialogues", row_ids(df, "dialogue_id"))
        if not {"dialogue_id", "duration_s", "speaker_a", "speaker_b", "n_turns"} <= set(df):
            continue
        for row in _records(df):
            did = str(row["dialogue_id"])
            if did in facts:
                failures.append(Failure("dialogues", did, "dialogue_id", "unique", did))
                continue
            facts[did] = _DialogueFacts(
                float(row["duration_s"]) if pd.notna(row["duration_s"]) else 0.0,
                str(row["speaker_a"]),
                str(row["speaker_b"]),
                int(row["n_turns"]) if pd.notna(row["n_turns"]) else -1,
            )
            if check_audio and {"audio_path", "sha256", "sample_rate", "num_channels"} <= set(df):
                failures += _check_audio(wd, row)
                if isinstance(row["audio_path"], str):
                    sample.offer(did, row["audio_path"], row.get("provenance"))

    chosen = sample.chosen()
    sampled: dict[str, list[TurnSpan]] = {did: [] for did in chosen}
    tschema = turn_schema()
    done: set[str] = set()
    current: str | None = None
    group: list[tuple[int, float, float, str]] = []

    def close_group() -> None:
        if current is not None:
            failures.extend(_gap_failures(current, group, cfg))
            done.add(current)

    for df in iter_batches(wd / TURNS):
        failures += schema_failures(tschema, df, "turns", row_ids(df, "dialogue_id", "turn_index"))
        needed = {"dialogue_id", "turn_index", "speaker", "kind", "start_s", "end_s"}
        if not needed <= set(df):
            continue
        for row in _records(df):
            did = str(row["dialogue_id"])
            rid = f"{did}#{row['turn_index']}"
            if did != current:
                close_group()
                if did in done:
                    failures.append(
                        Failure("turns", rid, "dialogue_id", "turns_grouped_by_dialogue", did)
                    )
                current, group = did, []
            fact = facts.get(did)
            if fact is None:
                failures.append(Failure("turns", rid, "dialogue_id", "dialogue_exists", did))
                continue
            fact.turns += 1
            speaker = str(row["speaker"])
            if speaker == fact.speaker_b:
                fact.b_turns += 1
            if speaker not in (fact.speaker_a, fact.speaker_b):
                failures.append(Failure("turns", rid, "speaker", "speaker_is_a_or_b", speaker))
            end = row["end_s"]
            if pd.notna(end) and float(end) > fact.duration_s + TIME_TOL_S:
                failures.append(
                    Failure(
                        "turns",
                        rid,
                        "end_s",
                        f"end_s <= duration_s ({fact.duration_s:.4f})",
                        format_value(float(end)),
                    )
                )
            if row["kind"] == "turn" and pd.notna(row["start_s"]) and pd.notna(end):
                group.append((int(row["turn_index"]), float(row["start_s"]), float(end), speaker))
                if did in sampled:
                    sampled[did].append((speaker, float(row["start_s"]), float(end)))
    close_group()
    for did, (rel, level) in sorted(chosen.items()):
        if (wd / rel).is_file():
            failures += acoustic_failures(did, wd / rel, sampled[did], level, cfg)

    for did, fact in facts.items():
        if fact.b_turns == 0:
            failures.append(
                Failure("dialogues", did, "speaker_b", "speaker_b_has_turns", fact.speaker_b)
            )
        if fact.n_turns != fact.turns:
            failures.append(
                Failure(
                    "dialogues",
                    did,
                    "n_turns",
                    f"equals turn rows ({fact.turns})",
                    str(fact.n_turns),
                )
            )

    rschema = rejection_schema()
    for df in iter_batches(wd / REJECTIONS):
        failures += schema_failures(rschema, df, "rejections", row_ids(df, "item_id"))
    return failures


def validate_workdir(
    workdir: str | Path, config: RunConfig | None = None, *, check_audio: bool = True
) -> None:
    """Raise :class:`ManifestError` with the failure table if the work directory is invalid."""
    failures = collect_workdir_failures(workdir, config, check_audio=check_audio)
    raise_if_failures(str(workdir), failures)
    log.info("%s: valid", workdir)
