"""Speaker diarisation backends for mono studio mixes.

A mono mix has no track per speaker, so turns must come from a diarisation model. Backends are
optional (the ``diarize`` extra) and loaded lazily: importing this package never imports torch
or pyannote, and asking for a backend that cannot load raises :class:`BackendError`, which the
studio adapter turns into a ``diarization_unavailable`` rejection instead of guessing.

The conversion of a backend's labelled segments into dialogue turns is the pure function
:func:`segments_to_turns`, so it is tested without any model.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from duetflow.audio.io import Audio
from duetflow.errors import BackendError
from duetflow.records.dialogue import Turn

log = logging.getLogger(__name__)

#: built-in backends: name -> "module:Class"
BACKENDS: Mapping[str, str] = {
    "pyannote": "duetflow.corpora.studio.diarize.pyannote:PyannoteBackend"
}


@dataclass(frozen=True)
class LabelledSegment:
    """One diarisation output segment: ``label`` is the backend's anonymous speaker label."""

    start: float
    end: float
    label: str


@runtime_checkable
class DiarizationBackend(Protocol):
    """Labels who speaks when in a mono signal."""

    name: str

    def diarize(
        self, samples: Audio, sample_rate: int, num_speakers: int = 2
    ) -> list[LabelledSegment]:
        """Labelled segments (seconds) of ``samples``; labels are anonymous (``SPEAKER_00``)."""
        ...


def get_backend(
    name: str, model: str | None = None, *, options: Mapping[str, Any] | None = None
) -> DiarizationBackend:
    """Instantiate backend ``name`` (nothing heavy is loaded until the first ``diarize``).

    Raises BackendError for an unknown name or a backend whose module cannot be imported.
    """
    target = BACKENDS.get(name)
    if target is None:
        raise BackendError(
            f"unknown diarisation backend {name!r}; available: {', '.join(sorted(BACKENDS))}"
        )
    module_name, _, cls_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:  # pragma: no cover - our own modules import lazily
        raise BackendError(f"diarisation backend {name!r} failed to import: {e}") from None
    cls = getattr(module, cls_name)
    backend = cls(model, **dict(options or {}))
    if not isinstance(backend, DiarizationBackend):  # pragma: no cover - guard for plugins
        raise BackendError(f"{target} does not implement DiarizationBackend")
    return backend


def segments_to_turns(
    segments: Iterable[LabelledSegment],
    speakers: Sequence[str],
    *,
    min_speech_s: float = 0.12,
    min_silence_s: float = 0.3,
) -> tuple[list[Turn], dict[str, Any]]:
    """Map anonymous diarisation labels onto the session's speakers and build turns.

    * Segments of one label separated by less than ``min_silence_s`` are merged (diarisers
      split a turn at breaths); segments shorter than ``min_speech_s`` after merging are dropped.
    * When the backend found more labels than ``speakers``, only the labels with the most
      speech are kept; the others are reported in the returned info, not silently merged.
    * Kept labels are assigned to ``speakers`` in order of first appearance: the speaker listed
      first in the sidecar is the one who says the opening line.

    Returns the turns (sorted by start, then speaker) and an info mapping for provenance
    (``label_map``, ``dropped_labels`` with their seconds). Raises ValueError when fewer labels
    than speakers were found, so the caller can reject the session with that reason.
    """
    segs = sorted((s for s in segments if s.end > s.start), key=lambda s: (s.start, s.end, s.label))
    total: dict[str, float] = {}
    first: dict[str, float] = {}
    for s in segs:
        total[s.label] = total.get(s.label, 0.0) + (s.end - s.start)
        first.setdefault(s.label, s.start)
    by_speech = sorted(total, key=lambda lab: (-total[lab], lab))
    kept = by_speech[: len(speakers)]
    dropped = {lab: round(total[lab], 3) for lab in by_speech[len(speakers) :]}
    if len(kept) < len(speakers):
        raise ValueError(
            f"diarisation found {len(kept)} speaker(s) ({', '.join(kept) or 'none'}), "
            f"the session has {len(speakers)}"
        )
    order = sorted(kept, key=lambda lab: (first[lab], lab))
    label_map = {lab: speakers[i] for i, lab in enumerate(order)}
    merged: dict[str, list[list[float]]] = {lab: [] for lab in kept}
    for s in segs:
        if s.label not in label_map:
            continue
        runs = merged[s.label]
        if runs and s.start - runs[-1][1] < min_silence_s:
            runs[-1][1] = max(runs[-1][1], s.end)
        else:
            runs.append([s.start, s.end])
    turns: list[tuple[float, int, Turn]] = []
    for lab, runs in merged.items():
        spk = label_map[lab]
        idx = list(speakers).index(spk)
        for a, b in runs:
            if b - a >= min_speech_s:
                turns.append((a, idx, Turn(speaker=spk, start=round(a, 3), end=round(b, 3))))
    turns.sort(key=lambda t: (t[0], t[1]))
    info: dict[str, Any] = {"label_map": label_map, "dropped_labels": dropped}
    return [t for _, _, t in turns], info


__all__ = [
    "BACKENDS",
    "DiarizationBackend",
    "LabelledSegment",
    "get_backend",
    "segments_to_turns",
]
