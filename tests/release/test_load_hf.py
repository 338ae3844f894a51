"""Decode without traps (issue 27 item 5): ``load_hf`` gives a DatasetDict whose ``filter``,
``map`` and indexing work with or without torchcodec; the export's README and
docs/releases.md say the same about decoding.

Ground truth for the audio: ``fixture_samples`` (what the fixture wrote), not the export.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import datasets
import numpy as np
import pytest

from duetflow.release import export_hf as hf_module
from duetflow.release.export_hf import export_hf, hf_decode, load_hf
from duetflow.release.publish import publish
from duetflow.release.pull import pull
from release_fixtures import SR, fixture_samples, make_workdir, specs

DOCS = Path(__file__).resolve().parents[2] / "docs" / "releases.md"


@pytest.fixture(scope="module")
def hf_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("loadhf")
    wd = make_workdir(tmp / "work", specs(6, per_source=1))
    publish([wd], str(tmp / "store"), None)
    for split in ("train", "val", "test"):
        pull(str(tmp / "store"), split=split, dest=tmp / "pulled")
    return export_hf(tmp / "pulled", tmp / "hf")


def test_torchcodec_is_only_used_where_it_decodes() -> None:
    if importlib.util.find_spec("torchcodec") is None:
        assert hf_module.torchcodec_decodes() is False
    # where it is installed the answer comes from a real decode, either way a bool
    assert isinstance(hf_module.torchcodec_decodes(), bool)


def test_load_hf_without_torchcodec_filters_maps_and_decodes(
    hf_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hf_module, "torchcodec_decodes", lambda: False)
    ds = load_hf(hf_dir)
    assert isinstance(ds, datasets.DatasetDict) and set(ds) <= {"train", "val", "test"}
    n = 0
    for split in ds:
        part = ds[split]
        assert part.features["audio"].decode is False
        kept = part.filter(lambda ex: ex["n_turns"] == 3)  # no ImportError on the way
        assert kept.num_rows == part.num_rows
        lengths = kept.map(lambda ex: {"n": len(hf_decode(ex["audio"])[0])}, remove_columns="audio")
        for ex, m in zip(kept, lengths, strict=True):
            samples, sr = hf_decode(ex["audio"])
            want = fixture_samples(ex["dialogue_id"])
            assert sr == SR and m["n"] == len(want)
            assert np.max(np.abs(samples - want)) < 1e-3  # 16-bit FLAC of what was written
            n += 1
    assert n == 6


def test_load_hf_keeps_decoding_where_torchcodec_works(
    hf_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hf_module, "torchcodec_decodes", lambda: True)
    ds = load_hf(hf_dir)
    assert all(ds[s].features["audio"].decode for s in ds)
    forced = load_hf(hf_dir, decode=False)
    assert not any(forced[s].features["audio"].decode for s in forced)


@pytest.mark.skipif(
    importlib.util.find_spec("torchcodec") is not None, reason="the trap needs torchcodec absent"
)
def test_the_trap_load_hf_avoids_is_real(hf_dir: Path) -> None:
    """Plain decoding without torchcodec fails on first access: what load_hf steps around."""
    ds = datasets.load_dataset(str(hf_dir))
    split = next(iter(ds))
    with pytest.raises(ImportError):
        ds[split][0]["audio"]


def test_the_export_readme_and_the_docs_agree_on_decoding(hf_dir: Path) -> None:
    readme = (hf_dir / "README.md").read_text(encoding="utf-8")
    docs = DOCS.read_text(encoding="utf-8")
    for text in (readme, docs):
        assert "load_hf" in text and "Audio(decode=False)" in text and "hf_decode" in text
        assert "torchcodec" in text and "CPU torch" in text
        # the old contradiction: the README promised torchcodec with the export extra
        assert "needs `torchcodec` (`pip install duetflow[export]`)" not in text
    assert "download.pytorch.org/whl/cpu" in docs  # how to install the extra without CUDA
