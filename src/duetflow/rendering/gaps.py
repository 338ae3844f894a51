"""The speaker-change gaps as the written file shows them.

:func:`duetflow.rendering.mixdown.mixdown` measures every drawn gap on the 16-bit samples it
returns and closes the ones off their draw; here those measurements become the rows' edges at
each change and the provenance's ``gaps_measured_ms``.
"""

from __future__ import annotations

from collections.abc import Sequence

from duetflow.rendering.mixdown import Change, Mix


def rows_at_changes(
    spans: Sequence[tuple[int, int]], changes: Sequence[Change], mix: Mix
) -> list[tuple[float, float]]:
    """Each main item's output span as its rows report it: the acoustic extent, and at every
    measured speaker change the edges the confirming measurement found on the file."""
    out = [(float(a + s), float(b + s)) for (a, b), s in zip(spans, mix.shifts, strict=True)]
    for ch, m in zip(changes, mix.measures, strict=True):
        if m is None:
            continue
        k = ch.after
        if out[k][0] < m.offset and m.onset < out[k + 1][1]:
            out[k] = (out[k][0], m.offset)
            out[k + 1] = (m.onset, out[k + 1][1])
    return out


def measured_gaps_ms(mix: Mix, sr: int) -> list[float | None]:
    """Each change's gap as confirmed on the file (ms), None where it was not measured."""
    return [None if m is None else round(m.gap / sr * 1000.0, 3) for m in mix.measures]
