"""pyannote.audio diarisation backend (optional extra ``diarize``).

The pipeline is loaded on the first :meth:`PyannoteBackend.diarize` call, never at import time:
from a local directory holding a pipeline ``config.yaml`` (what production uses, since the
workers have no hub access), from a path to such a ``config.yaml``, or from a hub id plus a
token (``HF_TOKEN`` / ``PYANNOTE_TOKEN`` or the ``token`` option). Audio is handed over in
memory (``{"waveform", "sample_rate"}``), so pyannote never decodes files itself.

:func:`annotation_to_segments` converts pyannote's output (an ``Annotation``, or the
``DiarizeOutput`` of pyannote.audio 4 that wraps one) into :class:`LabelledSegment` records; it
only walks ``itertracks`` and is tested on a constructed annotation.
"""

from __future__ import annotations

import inspect
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np

from duetflow.audio.io import Audio, to_mono
from duetflow.corpora.studio.diarize import LabelledSegment
from duetflow.errors import BackendError

log = logging.getLogger(__name__)

TOKEN_ENV = ("PYANNOTE_TOKEN", "HF_TOKEN")


def annotation_to_segments(output: Any) -> list[LabelledSegment]:
    """Labelled segments of a pyannote ``Annotation`` (or an output object wrapping one)."""
    annotation = getattr(output, "speaker_diarization", output)
    if not hasattr(annotation, "itertracks"):
        raise BackendError(
            f"pyannote returned {type(output).__name__}, expected an Annotation "
            "(or an object with .speaker_diarization)"
        )
    out = [
        LabelledSegment(float(seg.start), float(seg.end), str(label))
        for seg, _track, label in annotation.itertracks(yield_label=True)
    ]
    out.sort(key=lambda s: (s.start, s.end, s.label))
    return out


class PyannoteBackend:
    """Diarisation with a pyannote.audio ``Pipeline`` (see the module docstring for loading)."""

    name = "pyannote"

    def __init__(
        self,
        model: str | None,
        *,
        token: str | None = None,
        device: str = "cpu",
    ) -> None:
        if not model:
            raise BackendError(
                "pyannote backend needs segment.diarization_model: a local pipeline directory "
                "(with config.yaml), a config.yaml path, or a hub id with a token"
            )
        self.model = model
        self.token = token or next((os.environ[k] for k in TOKEN_ENV if os.environ.get(k)), None)
        self.device = device
        self._pipeline: Any = None

    def _load(self) -> Any:
        if self._pipeline is not None:
            return self._pipeline
        try:
            from pyannote.audio import Pipeline
        except ImportError as e:
            raise BackendError(
                f"pyannote.audio is not installed ({e}); install the 'diarize' extra: "
                "pip install 'duetflow[diarize]'"
            ) from None
        path = Path(self.model).expanduser()
        local = path.exists()
        if not local and self.token is None:
            raise BackendError(
                f"pyannote model {self.model!r} is neither a local directory/config.yaml nor "
                f"usable without a token (set one of {', '.join(TOKEN_ENV)})"
            )
        source = str(path / "config.yaml" if path.is_dir() else path) if local else self.model
        kwargs: dict[str, Any] = {}
        if not local:
            params = inspect.signature(Pipeline.from_pretrained).parameters
            kwargs["token" if "token" in params else "use_auth_token"] = self.token
        try:
            pipeline = Pipeline.from_pretrained(source, **kwargs)
        except Exception as e:  # pyannote raises many kinds; all mean "cannot load"
            raise BackendError(f"cannot load pyannote pipeline from {source}: {e}") from e
        if pipeline is None:  # pyannote 3 returns None on a gated/unknown hub id
            raise BackendError(f"pyannote could not load {source} (gated model or bad id?)")
        if self.device != "cpu":
            import torch

            pipeline.to(torch.device(self.device))
        log.info("loaded pyannote pipeline from %s", source)
        self._pipeline = pipeline
        return pipeline

    def diarize(
        self, samples: Audio, sample_rate: int, num_speakers: int = 2
    ) -> list[LabelledSegment]:
        """Run the pipeline on in-memory samples; labels are pyannote's (``SPEAKER_00`` ...)."""
        pipeline = self._load()
        import torch

        x = np.ascontiguousarray(to_mono(samples), dtype=np.float32)
        waveform = torch.from_numpy(x).unsqueeze(0)
        try:
            output = pipeline(
                {"waveform": waveform, "sample_rate": sample_rate}, num_speakers=num_speakers
            )
        except Exception as e:
            raise BackendError(f"pyannote diarisation failed: {e}") from e
        return annotation_to_segments(output)
