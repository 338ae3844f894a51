"""Diarisation backend plumbing: output → turns on a constructed pyannote Annotation."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from pyannote.core import Annotation, Segment

from duetflow.corpora.studio.diarize import LabelledSegment, get_backend, segments_to_turns
from duetflow.corpora.studio.diarize.pyannote import PyannoteBackend, annotation_to_segments
from duetflow.errors import BackendError
from duetflow.records.dialogue import Turn


def _annotation() -> Annotation:
    ann = Annotation(uri="s1")
    # SPEAKER_01 talks first; SPEAKER_00 answers; a breath splits one turn; a blip; a stray label
    ann[Segment(0.50, 1.80), "a"] = "SPEAKER_01"
    ann[Segment(1.95, 3.10), "b"] = "SPEAKER_00"
    ann[Segment(3.20, 4.00), "c"] = "SPEAKER_00"  # 100 ms pause: same turn
    ann[Segment(4.30, 6.00), "d"] = "SPEAKER_01"
    ann[Segment(4.80, 5.20), "e"] = "SPEAKER_00"  # overlap (backchannel)
    ann[Segment(6.50, 6.55), "f"] = "SPEAKER_00"  # 50 ms blip
    ann[Segment(7.00, 7.30), "g"] = "SPEAKER_02"  # a third voice (e.g. a door)
    return ann


def test_annotation_to_turns() -> None:
    segs = annotation_to_segments(_annotation())
    assert segs[0] == LabelledSegment(0.5, 1.8, "SPEAKER_01")
    assert len(segs) == 7
    turns, info = segments_to_turns(segs, ["user", "system"])
    # labels map by first appearance: the sidecar's first speaker says the opening line
    assert info["label_map"] == {"SPEAKER_01": "user", "SPEAKER_00": "system"}
    assert info["dropped_labels"] == {"SPEAKER_02": 0.3}
    assert turns == [
        Turn("user", 0.5, 1.8),
        Turn("system", 1.95, 4.0),
        Turn("user", 4.3, 6.0),
        Turn("system", 4.8, 5.2),
    ]


def test_diarize_output_wrapper_and_bad_output() -> None:
    class Output:  # pyannote.audio 4 wraps the annotation in a DiarizeOutput
        speaker_diarization = _annotation()

    assert annotation_to_segments(Output()) == annotation_to_segments(_annotation())
    with pytest.raises(BackendError, match="expected an Annotation"):
        annotation_to_segments(object())


def test_one_label_is_not_enough() -> None:
    ann = Annotation()
    ann[Segment(0, 2)] = "SPEAKER_00"
    with pytest.raises(ValueError, match="found 1 speaker"):
        segments_to_turns(annotation_to_segments(ann), ["a", "b"])


def test_backend_registry_and_lazy_loading(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match="unknown diarisation backend"):
        get_backend("nemo")
    with pytest.raises(BackendError, match="diarization_model"):
        get_backend("pyannote", None)
    loaded_before = "pyannote.audio" in sys.modules
    backend = get_backend("pyannote", str(tmp_path / "pipeline"))
    assert isinstance(backend, PyannoteBackend)
    assert ("pyannote.audio" in sys.modules) == loaded_before  # nothing heavy at construction
    with pytest.raises(BackendError, match="pyannote"):
        backend.diarize(np.zeros(16000, np.float32), 16000)


def test_hub_id_without_token_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("PYANNOTE_TOKEN", "HF_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    backend = PyannoteBackend("pyannote/speaker-diarization-3.1")
    if "pyannote.audio" in sys.modules or _has_pyannote_audio():
        with pytest.raises(BackendError, match="token"):
            backend.diarize(np.zeros(16000, np.float32), 16000)
    else:
        with pytest.raises(BackendError, match="diarize"):
            backend.diarize(np.zeros(16000, np.float32), 16000)


def _has_pyannote_audio() -> bool:
    import importlib.util

    return importlib.util.find_spec("pyannote.audio") is not None
