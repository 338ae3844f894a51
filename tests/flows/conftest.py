"""Fixtures of the flow tests: sample corpora generated once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from duetflow.demo import make_samples


@pytest.fixture(scope="session")
def flow_samples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """DailyTalk (with its broken items), the studio sessions and the scripts."""
    root = tmp_path_factory.mktemp("flow-samples")
    make_samples(root, seed=0, scale=1, include=["dailytalk", "studio", "scripts"])
    return root
