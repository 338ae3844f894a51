from __future__ import annotations

from pathlib import Path

import pytest

from duetflow.config import RunConfig, load_config
from duetflow.errors import ConfigError


def test_defaults_are_the_documented_ones() -> None:
    cfg = load_config(None, environ={})
    assert (cfg.render.gap_ms_min, cfg.render.gap_ms_max) == (180.0, 230.0)
    assert (cfg.window.min_s, cfg.window.max_s) == (20.0, 60.0)
    assert (cfg.filters.balance_min, cfg.filters.balance_max) == (0.4, 0.6)
    assert cfg.render.loudness_target_lufs == -23.0
    assert cfg.sample_rate == 16000


def test_unknown_key_names_the_key(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text("render:\n  gap_ms_minn: 3\n")
    with pytest.raises(ConfigError, match=r"unknown key 'render.gap_ms_minn'"):
        load_config(p, environ={})


def test_env_overrides_and_relative_paths(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text("workdir: out\ncorpora:\n  - {name: dailytalk, root: data/dt}\n")
    cfg = load_config(p, environ={"DUETFLOW__RENDER__GAP_MS_MIN": "190", "DUETFLOW__SEED": "7"})
    assert cfg.render.gap_ms_min == 190.0
    assert cfg.seed == 7
    assert cfg.workdir == (tmp_path / "out").resolve()
    assert cfg.corpora[0].root == (tmp_path / "data/dt").resolve()


def test_bad_value_names_field(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="window"):
        load_config(None, environ={"DUETFLOW__WINDOW__MIN_S": "90"})


def test_section_hash_changes_only_with_its_section() -> None:
    a = RunConfig()
    b = RunConfig.model_validate({"filters": {"balance_min": 0.35}})
    assert a.section_hash("render") == b.section_hash("render")
    assert a.section_hash("filters") != b.section_hash("filters")
    assert a.config_hash() != b.config_hash()
