"""Session fixtures for the PH synthesis tests (helpers live in ``tts_helpers``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tts_helpers import build_rendered_workdir


@pytest.fixture(scope="session")
def voices_workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_rendered_workdir(tmp_path_factory.mktemp("voices"))


@pytest.fixture(scope="session")
def sample_scripts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from duetflow.demo.scripts import generate

    root = tmp_path_factory.mktemp("samples")
    generate(root, seed=0, scale=1)
    return root / "scripts"


@pytest.fixture(scope="module")
def torch_one_thread() -> Iterator[None]:
    """One intra-op thread for the tiny models: on a shared 2-core box, spinning OpenMP threads
    make each tiny op ~6x slower. Restored afterwards (torch's thread count is process-wide)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
