"""Pandera schemas for every manifest table and the lazy validation of a work directory.

``validate_workdir(workdir, config)`` raises :class:`~duetflow.errors.ManifestError` whose
``table`` lists every failure as ``row id | column | check | value``.
"""

from __future__ import annotations

from duetflow.schemas.checks import (
    Failure,
    collect_workdir_failures,
    format_failures,
    raise_if_failures,
    schema_failures,
    validate_workdir,
)
from duetflow.schemas.tables import (
    SPLITS,
    dialogue_schema,
    rejection_schema,
    release_index_schema,
    turn_schema,
)

__all__ = [
    "SPLITS",
    "Failure",
    "collect_workdir_failures",
    "dialogue_schema",
    "format_failures",
    "raise_if_failures",
    "rejection_schema",
    "release_index_schema",
    "schema_failures",
    "turn_schema",
    "validate_workdir",
]
