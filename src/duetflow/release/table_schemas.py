"""Pandera schemas of every manifest table a release is built from.

Column names and types of the rendered tables come from their records
(:mod:`duetflow.records.rows`, from which the Parquet schemas derive too); these add what a trainer
relies on: ranges, allowed values and cross-field checks inside one row. Checks that
span rows or tables (turns inside their dialogue's audio, speaker-change gaps, audio checksums,
disjoint split groups) live in :mod:`duetflow.release.workdir_checks`.

Semantics the checks pin down (the renderer must follow them):

* ``loudness_lufs_a`` / ``loudness_lufs_b`` are the *output* loudness of each speaker (after
  ``gain_db_*``), so both must lie within ``render.loudness_tolerance_lu`` of each other.
* ``gap_ms_min`` / ``gap_ms_max`` are the smallest / largest speaker-change gap of the rendered
  dialogue; null only when it has no speaker change without overlap.
* ``duration_s`` is the rendered audio's length and lies in ``window.min_s``–``window.max_s``
  (every category: HH, HM and PH).
"""

from __future__ import annotations

import pandas as pd
import pandera.pandas as pa
import pyarrow

from duetflow.audio.gap_tolerance import ROW_GAP_TOL_MS
from duetflow.config import RunConfig
from duetflow.config.turntaking import MOS_RANGE
from duetflow.records import rows as records
from duetflow.records.dialogue import Category, Stage, TurnKind
from duetflow.records.manifest import REJECTION_SCHEMA
from duetflow.records.rows import (
    DNSMOS_COLUMNS,
    ReleaseDialogueRow,
    RenderedDialogueRow,
    RenderedTurnRow,
)
from duetflow.storage.store import AUDIO_KEY_RE

SPLITS = ("train", "val", "test")
SHA256_RE = r"^[0-9a-f]{64}$"

#: Rounding slack for times (seconds). Gaps (milliseconds) have
#: :data:`~duetflow.audio.gap_tolerance.ROW_GAP_TOL_MS`, the renderer's own bound.
TIME_TOL_S = 0.002

#: For a check over several columns, the column a failure is reported against.
CHECK_COLUMN = {
    "speakers_differ": "speaker_b",
    "loudness_within_tolerance": "loudness_lufs_b",
    "gap_min_in_window": "gap_ms_min",
    "gap_max_in_window": "gap_ms_max",
    "gap_min_le_max": "gap_ms_max",
    "duration_in_window": "duration_s",
    "start_lt_end": "end_s",
    "orig_start_le_end": "orig_end_s",
    "audio_key_matches_sha256": "audio_key",
    "split_groups_disjoint": "split",
}

_NONEMPTY = pa.Check.str_length(min_value=1)


def _safe_relative(series: pd.Series) -> pd.Series:
    """Relative POSIX path that stays inside its root (no absolute path, no ``..``)."""
    return series.map(
        lambda p: (
            isinstance(p, str)
            and bool(p)
            and not p.startswith(("/", "\\"))
            and ":" not in p.split("/")[0]
            and ".." not in p.replace("\\", "/").split("/")
        )
    )


#: pandera dtype of each Arrow column type of the records
_DTYPES = {
    pyarrow.string(): str,
    pyarrow.int32(): "int32",
    pyarrow.float64(): "float64",
    pyarrow.bool_(): "bool",
}


def _record_columns(
    record: type[RenderedDialogueRow] | type[RenderedTurnRow] | pyarrow.Schema,
    checks: dict[str, tuple[bool, list[pa.Check]]],
) -> dict[str, pa.Column]:
    """pandera columns of a record's table: names and dtypes from the record (one declaration;
    or the Arrow schema of a table without a record), nullability and value checks from
    ``checks`` (a column without an entry: nullable, no checks). A check for a column the
    table does not have is a programming error."""
    if isinstance(record, pyarrow.Schema):
        schema, name = record, "table"
    else:
        schema, name = records.arrow_schema(record), record.__name__  # type: ignore[arg-type]
    unknown = set(checks) - set(schema.names)
    if unknown:
        raise ValueError(f"{name} has no column {sorted(unknown)}")
    out: dict[str, pa.Column] = {}
    for field in schema:
        nullable, cks = checks.get(field.name, (True, []))
        out[field.name] = pa.Column(_DTYPES[field.type], cks, nullable=nullable)
    return out


def _dialogue_columns(
    record: type[RenderedDialogueRow] = RenderedDialogueRow,
    extra: dict[str, tuple[bool, list[pa.Check]]] | None = None,
) -> dict[str, pa.Column]:
    return _record_columns(
        record,
        {
            **(extra or {}),
            "dialogue_id": (False, [_NONEMPTY]),
            "source_id": (False, [_NONEMPTY]),
            "corpus": (False, [_NONEMPTY]),
            "category": (False, [pa.Check.isin([c.value for c in Category])]),
            "language": (False, [_NONEMPTY]),
            # topic, provenance and the design columns: nullable, no check
            "speaker_a": (False, [_NONEMPTY]),
            "speaker_b": (False, [_NONEMPTY]),
            "audio_path": (False, [pa.Check(_safe_relative, name="relative_path_inside_root")]),
            "sha256": (False, [pa.Check.str_matches(SHA256_RE)]),
            "duration_s": (False, [pa.Check.gt(0)]),
            "sample_rate": (False, [pa.Check.in_range(1000, 384000)]),
            "num_channels": (False, [pa.Check.in_range(1, 8)]),
            "n_turns": (False, [pa.Check.ge(1)]),
            "loudness_lufs_a": (False, [pa.Check.in_range(-120.0, 0.0)]),
            "loudness_lufs_b": (False, [pa.Check.in_range(-120.0, 0.0)]),
            "gain_db_a": (False, [pa.Check.in_range(-120.0, 120.0)]),
            "gain_db_b": (False, [pa.Check.in_range(-120.0, 120.0)]),
            "gap_ms_min": (True, [pa.Check.ge(0)]),
            "gap_ms_max": (True, [pa.Check.ge(0)]),
            # -- trainers (issue 16): licence and source sample rate per dialogue --
            "licence": (False, [_NONEMPTY]),
            "source_sample_rate": (False, [pa.Check.in_range(1000, 384000)]),
            # -- issue 29: DNSMOS on the MOS scale, null when quality.dnsmos is off --
            **{c: (True, [pa.Check.in_range(*MOS_RANGE)]) for c in DNSMOS_COLUMNS},
        },
    )


def _dialogue_checks(config: RunConfig) -> list[pa.Check]:
    r, w = config.render, config.window
    lo, hi = r.gap_ms_min - ROW_GAP_TOL_MS, r.gap_ms_max + ROW_GAP_TOL_MS
    tol = r.loudness_tolerance_lu
    return [
        pa.Check(lambda df: df["speaker_a"] != df["speaker_b"], name="speakers_differ"),
        pa.Check(
            lambda df: df["duration_s"].between(w.min_s - TIME_TOL_S, w.max_s + TIME_TOL_S),
            name="duration_in_window",
            error=f"{w.min_s} s <= duration_s <= {w.max_s} s (window.min_s, window.max_s)",
        ),
        pa.Check(
            lambda df: (df["loudness_lufs_a"] - df["loudness_lufs_b"]).abs() <= tol + 1e-9,
            name="loudness_within_tolerance",
            error=f"|loudness_lufs_a - loudness_lufs_b| <= {tol} LU",
        ),
        pa.Check(
            lambda df: df["gap_ms_min"].isna() | (df["gap_ms_min"] >= lo),
            name="gap_min_in_window",
            error=f"gap_ms_min >= {r.gap_ms_min} ms",
        ),
        pa.Check(
            lambda df: df["gap_ms_max"].isna() | (df["gap_ms_max"] <= hi),
            name="gap_max_in_window",
            error=f"gap_ms_max <= {r.gap_ms_max} ms",
        ),
        pa.Check(
            lambda df: (
                df["gap_ms_min"].isna()
                | df["gap_ms_max"].isna()
                | (df["gap_ms_min"] <= df["gap_ms_max"])
            ),
            name="gap_min_le_max",
        ),
    ]


def dialogue_schema(config: RunConfig | None = None) -> pa.DataFrameSchema:
    """Rendered dialogue rows (``RENDERED_DIALOGUE_SCHEMA``) of a work directory."""
    cfg = config or RunConfig()
    return pa.DataFrameSchema(
        _dialogue_columns(),
        checks=_dialogue_checks(cfg),
        unique=["dialogue_id"],
        strict=False,
        name="dialogues",
    )


def turn_schema() -> pa.DataFrameSchema:
    """Rendered turn rows (``RENDERED_TURN_SCHEMA``); times on the rendered timeline."""
    return pa.DataFrameSchema(
        _record_columns(
            RenderedTurnRow,
            {
                "dialogue_id": (False, [_NONEMPTY]),
                "turn_index": (False, [pa.Check.ge(0)]),
                "speaker": (False, [_NONEMPTY]),
                "kind": (False, [pa.Check.isin([k.value for k in TurnKind])]),
                "start_s": (False, [pa.Check.ge(0)]),
                "end_s": (False, [pa.Check.gt(0)]),
                "orig_start_s": (True, [pa.Check.ge(0)]),
                "orig_end_s": (True, [pa.Check.ge(0)]),
                # text: nullable, no check
            },
        ),
        checks=[
            pa.Check(lambda df: df["start_s"] < df["end_s"], name="start_lt_end"),
            pa.Check(
                lambda df: (
                    df["orig_start_s"].isna()
                    | df["orig_end_s"].isna()
                    | (df["orig_start_s"] <= df["orig_end_s"])
                ),
                name="orig_start_le_end",
            ),
        ],
        unique=["dialogue_id", "turn_index"],
        name="turns",
    )


def rejection_schema() -> pa.DataFrameSchema:
    """Rejection rows: every dropped item with the stage and a reason code."""
    return pa.DataFrameSchema(
        _record_columns(
            REJECTION_SCHEMA,
            {
                "item_id": (False, [_NONEMPTY]),
                "stage": (False, [pa.Check.isin([s.value for s in Stage])]),
                "reason": (False, [_NONEMPTY]),
                # corpus, source_path, detail: nullable, no check
            },
        ),
        name="rejections",
    )


def _key_matches(df: pd.DataFrame) -> pd.Series:
    def ok(key: object, sha: object) -> bool:
        m = AUDIO_KEY_RE.match(key) if isinstance(key, str) else None
        return bool(m) and m is not None and m.group(2) == sha and m.group(1) == str(sha)[:2]

    return pd.Series(
        [ok(k, s) for k, s in zip(df["audio_key"], df["sha256"], strict=True)], index=df.index
    )


def release_index_schema(config: RunConfig | None = None) -> pa.DataFrameSchema:
    """Dialogue rows of a release: rendered columns + ``split`` and ``audio_key``.

    ``audio_key`` must be the content address of ``sha256``; with ``release.group_by ==
    "source"`` a source recording's windows must all share one split.
    """
    cfg = config or RunConfig()
    cols = _dialogue_columns(
        ReleaseDialogueRow,
        {
            "split": (False, [pa.Check.isin(list(SPLITS))]),
            "audio_key": (False, [pa.Check.str_matches(AUDIO_KEY_RE.pattern)]),
            "voice_cloned": (False, []),
        },
    )
    checks = [
        *_dialogue_checks(cfg),
        pa.Check(_key_matches, name="audio_key_matches_sha256"),
    ]
    if cfg.release.group_by == "source":
        checks.append(
            pa.Check(
                lambda df: df.groupby("source_id")["split"].transform("nunique") == 1,
                name="split_groups_disjoint",
                error="all windows of one source recording share one split",
            )
        )
    return pa.DataFrameSchema(
        cols, checks=checks, unique=["dialogue_id"], strict=False, name="release_dialogues"
    )
