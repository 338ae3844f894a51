"""Studio fixtures: the sample studio sessions, generated once per test session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from duetflow.demo.studio import generate

SEED = 20240611


@pytest.fixture(scope="session")
def studio_samples(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """(studio root, truth by session id) of ``generate(scale=1)``; treat as read-only.

    Kept sessions carry ``expected == "kept"``; rejected ones ``expected == "rejected"`` and
    the ``reason`` code.
    """
    base = tmp_path_factory.mktemp("studio-samples")
    truth = generate(base, SEED, scale=1)
    sessions: dict[str, Any] = {e["source_id"]: e for e in truth["dialogues"].values()}
    for b in truth["broken"]:
        sid = b["item_id"].split("__", 1)[1]
        sessions[sid] = {"layout": None, "turn_source": None, **b}
    return base / "studio", sessions
