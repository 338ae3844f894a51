"""Config validation reports every problem of a file at once, one line each, including the
cross-field checks a bad field would otherwise hide."""

from __future__ import annotations

from pathlib import Path

import pytest

from duetflow.config import load_config
from duetflow.errors import ConfigError


def test_every_problem_at_once_one_line_each(tmp_path: Path) -> None:
    p = tmp_path / "run.yaml"
    p.write_text(
        "window: {min_s: 50, max_s: 30}\n"
        "filters: {balance_min: 0.7, balance_max: 0.6, min_turns_per_speaker: -1}\n"
        "runner: {kind: nope}\n"
        "bad: {}\n"
        "nonsense: true\n"
    )
    with pytest.raises(ConfigError) as e:
        load_config(p)
    lines = str(e.value).splitlines()
    assert all(line.startswith(f"{p}: ") for line in lines)
    keys = ["window.min_s (50.0) must be <= window.max_s", "filters.min_turns_per_speaker",
            "runner.kind", "unknown key 'nonsense'", "unknown key 'bad'",
            "filters.balance_min (0.7) must be <= filters.balance_max (0.6)"]  # fmt: skip
    for key in keys:
        assert sum(key in line for line in lines) == 1, (key, lines)
    assert len(lines) == len(keys)


def test_a_check_against_a_stand_in_default_is_not_reported(tmp_path: Path) -> None:
    # max_s is unreadable: comparing min_s with the default max_s would be a false problem
    p = tmp_path / "run.yaml"
    p.write_text("window: {min_s: 70, max_s: abc}\n")
    with pytest.raises(ConfigError) as e:
        load_config(p)
    assert str(e.value).splitlines() == [
        f"{p}: window.max_s: Input should be a valid number, unable to parse string as a "
        "number (got 'abc')"
    ]
