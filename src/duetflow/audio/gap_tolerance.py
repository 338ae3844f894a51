"""What a rendered file's speaker-change gaps are held to, and the floor they are measured on.

The renderer (:mod:`duetflow.rendering.mixdown`) confirms every gap on the samples it writes,
and the release's checks (:mod:`duetflow.release.table_schemas`,
:mod:`duetflow.release.workdir_checks`) and the report measure them again on the file: both
sides must allow the same slack and measure against the same floor, so these are declared
once, here, below both (the release never imports the renderer). Plain values and a reading of
a rendered row's provenance; no config, no records.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

#: How far outside the configured gap band a confirmed gap may lie (ms): what the schema checks
#: allow for the encoder and the reader. A dialogue with a gap further out is rejected
#: (:data:`duetflow.rendering.mixdown.GAP_UNCONFIRMED`), never published.
ACOUSTIC_GAP_TOL_MS = 10.0
#: How far outside the band a gap the rows carry may lie (ms): the rows take these measured
#: gaps, and the schema checks hold them to the band within rounding
#: (:mod:`duetflow.release.table_schemas` reads this value), so a dialogue whose corrections end
#: further out is rejected by the renderer rather than refused, with its whole release, by
#: ``publish``.
ROW_GAP_TOL_MS = 1.0
#: A run of exact digital zeros longer than this in a pause is a hole in the room tone (ms):
#: what the release's checks and the report look for where the renderer laid a floor.
ZERO_RUN_MS = 1.0


def floor_in_file_db(provenance: Mapping[str, Any]) -> float | None:
    """The floor level (dBFS) a rendered file's pauses hold, from its provenance: the room tone
    (HH/HM) or the ambience (PH) laid, after the true-peak ceiling; -inf when none was laid
    (digital silence); None when the provenance does not say."""
    tone = provenance.get("room_tone")
    if isinstance(tone, Mapping) and isinstance(tone.get("used"), bool):
        if not tone["used"]:
            return -math.inf
        level = tone.get("floor_dbfs")
        ceiling = provenance.get("ceiling_gain_db", 0.0)
    elif "ambience" in provenance:
        amb = provenance.get("ambience")
        if not isinstance(amb, Mapping):
            return -math.inf
        level = amb.get("floor_dbfs")
        ceiling = provenance.get("peak_ceiling_gain_db", 0.0)
    else:
        return None
    if not isinstance(level, int | float) or not isinstance(ceiling, int | float):
        return None
    return float(level) + min(0.0, float(ceiling))
