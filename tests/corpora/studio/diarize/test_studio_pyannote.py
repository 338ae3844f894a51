"""The pyannote backend for real: a tiny random-weight pipeline loaded from a local directory.

Needs the ``diarize`` extra (pyannote.audio, which pulls multi-GB torch/torchaudio builds), so
the shared development environment skips this module; run it as documented in
docs/studio-sessions.md ("Testing the pyannote backend for real"). Output quality is not
asserted (the weights are random); the loading path, the in-memory call and the conversion of
the real output object into labelled segments and turns are.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from studio_helpers import SR, tracks, write_session

pa = pytest.importorskip("pyannote.audio")

import torch  # noqa: E402  (only importable with the extra)
from pyannote.audio.core.task import Problem, Resolution, Specifications  # noqa: E402
from pyannote.audio.models.embedding import XVectorSincNet  # noqa: E402
from pyannote.audio.models.segmentation import PyanNet  # noqa: E402

from duetflow.config import build_config  # noqa: E402
from duetflow.corpora.studio import StudioAdapter  # noqa: E402
from duetflow.corpora.studio.diarize import LabelledSegment, get_backend  # noqa: E402
from duetflow.records.dialogue import Dialogue, Rejection  # noqa: E402

EMBED_DIM, LDA_DIM = 16, 8


def _save(model: torch.nn.Module, path: Path) -> None:
    """A checkpoint in the format ``pyannote.audio.Model.from_pretrained`` loads."""
    ckpt = {
        "state_dict": model.state_dict(),
        "hyper_parameters": dict(model.hparams),
        "pytorch-lightning_version": "2.5.0",
    }
    model.on_save_checkpoint(ckpt)
    torch.save(ckpt, path)


def build_tiny_pipeline(out: Path) -> Path:
    """Segmentation (PyanNet) + embedding (x-vector) + PLDA, from configs, random weights."""
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    seg = PyanNet(
        sincnet={"stride": 10},
        lstm={"hidden_size": 8, "num_layers": 1, "bidirectional": True, "monolithic": True},
        linear={"hidden_size": 8, "num_layers": 1},
    )
    seg.specifications = Specifications(
        problem=Problem.MONO_LABEL_CLASSIFICATION,
        resolution=Resolution.FRAME,
        duration=5.0,
        classes=["speaker#1", "speaker#2", "speaker#3"],
        powerset_max_classes=2,
        permutation_invariant=True,
    )
    seg.build()
    _save(seg, out / "segmentation.ckpt")
    emb = XVectorSincNet(sincnet={"stride": 10}, dimension=EMBED_DIM)
    emb.specifications = Specifications(
        problem=Problem.REPRESENTATION, resolution=Resolution.CHUNK, duration=3.0
    )
    emb.build()
    _save(emb, out / "embedding.ckpt")
    rng = np.random.default_rng(0)
    np.savez(
        out / "xvec_transform.npz",
        mean1=np.zeros(EMBED_DIM),
        mean2=np.zeros(LDA_DIM),
        lda=rng.standard_normal((EMBED_DIM, LDA_DIM)),
    )
    np.savez(
        out / "plda.npz", mu=np.zeros(LDA_DIM), tr=np.eye(LDA_DIM), psi=np.linspace(2, 1, LDA_DIM)
    )
    config = {
        "version": pa.__version__,
        "pipeline": {
            "name": "pyannote.audio.pipelines.SpeakerDiarization",
            "params": {
                "segmentation": str(out / "segmentation.ckpt"),
                "embedding": str(out / "embedding.ckpt"),
                "plda": str(out),
                "clustering": "AgglomerativeClustering",
                "embedding_batch_size": 8,
                "segmentation_batch_size": 8,
                "embedding_exclude_overlap": True,
            },
        },
        "params": {
            "segmentation": {"min_duration_off": 0.0},
            "clustering": {"method": "centroid", "min_cluster_size": 1, "threshold": 0.7},
        },
    }
    (out / "config.yaml").write_text(yaml.safe_dump(config), "utf-8")
    return out


@pytest.fixture(scope="module")
def pipeline_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_pipeline(tmp_path_factory.mktemp("tiny-pyannote"))


def test_backend_loads_the_local_pipeline_and_runs(pipeline_dir: Path) -> None:
    backend = get_backend("pyannote", str(pipeline_dir))  # a directory: its config.yaml
    a, b = tracks(0)
    segs = backend.diarize(0.5 * (a + b), SR, num_speakers=2)
    assert type(backend._pipeline).__name__ == "SpeakerDiarization"  # type: ignore[attr-defined]
    assert all(isinstance(s, LabelledSegment) and s.end > s.start for s in segs)
    assert all(s.label.startswith("SPEAKER_") for s in segs)
    assert segs == sorted(segs, key=lambda s: (s.start, s.end, s.label))


def test_mono_session_through_the_adapter(tmp_path: Path, pipeline_dir: Path) -> None:
    write_session(tmp_path / "s1", "mono")
    cfg = build_config(
        {
            "segment": {
                "diarization_backend": "pyannote",
                "diarization_model": str(pipeline_dir / "config.yaml"),
            }
        }
    )
    [item] = StudioAdapter(tmp_path, {"state_dir": None}, config=cfg).scan()
    # random weights may find one speaker or two; both are handled, nothing else is acceptable
    if isinstance(item, Rejection):
        assert item.reason == "diarization_speakers", item
    else:
        assert isinstance(item, Dialogue)
        assert item.provenance["turn_source"] == "diarization:pyannote"
        assert set(item.provenance["diarization"]["label_map"].values()) == {"user", "system"}
