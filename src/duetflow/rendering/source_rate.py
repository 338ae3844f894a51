"""The sample rate a dialogue's audio had at its source, and the resampling rendering applied.

A trainer mixing corpora needs to know which dialogues were recorded at 8 kHz and upsampled, and
which were downsampled from 44.1 kHz: the rendered file's own rate cannot say. Rendering records
``source_sample_rate`` (a column) and ``resampling`` (in the provenance) per dialogue from the
source files' headers (no samples are read).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from duetflow.audio.io import audio_info
from duetflow.records.dialogue import AudioSource, PerSpeakerSource, PerTurnSource

#: How rendering resamples (duetflow.audio.io.resample): soxr, band-limited, "HQ" quality.
RESAMPLER = "soxr HQ"


def source_paths(source: AudioSource) -> list[str]:
    """Every file an audio source reads, in a stable order."""
    if isinstance(source, PerTurnSource):
        return list(source.paths)
    if isinstance(source, PerSpeakerSource):
        return [source.paths[k] for k in sorted(source.paths)]
    return [source.path]


@dataclass(frozen=True)
class SourceRate:
    """``sample_rate``: the source's rate (the highest when its files differ); ``rates``: each
    distinct rate found; ``resampling``: what to record in the provenance (None: none done)."""

    sample_rate: int
    rates: tuple[int, ...]
    resampling: Mapping[str, Any] | None


def resampling_record(rates: tuple[int, ...], out_rate: int) -> dict[str, Any] | None:
    """``{"from_hz": [...], "to_hz": out, "method": ...}`` or None when every rate is ``out``."""
    if all(r == out_rate for r in rates):
        return None
    return {"from_hz": list(rates), "to_hz": out_rate, "method": RESAMPLER}


def source_rate(
    source: AudioSource, out_rate: int, known: Mapping[str, int] | None = None
) -> SourceRate:
    """Rates of the source files and the resampling to ``out_rate``: each file's rate from
    ``known`` (file -> rate, e.g. the render's, which read the headers), else its header."""
    known = known or {}
    rates = tuple(
        sorted(
            {
                known[p] if p in known else audio_info(p).sample_rate
                for p in dict.fromkeys(source_paths(source))
            }
        )
    )
    return SourceRate(max(rates), rates, resampling_record(rates, out_rate))


__all__ = ["RESAMPLER", "SourceRate", "resampling_record", "source_paths", "source_rate"]
