"""Hostile configuration through the command line (issue 15, item 8).

Every bound is checked when the config is loaded, from a file or from ``DUETFLOW__...``
variables: the command exits 2 with one ``error:`` line naming the key, never a traceback and
never a run that fails (or allocates 196 GiB) later.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from chaos_helpers import Cli

pytestmark = pytest.mark.timeout(120)

CASES = {
    "sample_rate_zero": ("sample_rate: 0\n", "sample_rate"),
    "negative_seed": ("seed: -1\n", "seed"),
    "bad_header_regex": (
        "filters:\n  collection_header_patterns: ['(unclosed']\n",
        "filters.collection_header_patterns",
    ),
    "huge_gap": ("render:\n  gap_ms_max: 1.0e9\n", "render.gap_ms_max"),
    "balance_min_over_max": (
        "filters:\n  balance_min: 0.7\n  balance_max: 0.6\n",
        "balance_min",
    ),
    "loud_target": ("render:\n  loudness_target_lufs: 10\n", "render.loudness_target_lufs"),
    "negative_ratio": ("release:\n  ratios: {HH: [-1, 1, 1]}\n", "release.ratios"),
    "zero_ratios": ("release:\n  ratios: {HM: [0, 0, 0]}\n", "release.ratios"),
    "unknown_category": ("release:\n  ratios: {XX: [1, 0, 0]}\n", "release.ratios"),
    "window_days": ("window:\n  max_s: 1.0e7\n", "window.max_s"),
    "synth_refs_reversed": (
        "synth:\n  reference_min_s: 9\n  reference_max_s: 3\n",
        "reference_min_s",
    ),
    # issue 24 item 4: infinities and NaN are config errors naming the key (an .inf timeout
    # used to load and end in an OverflowError inside the HTTP client)
    "llm_timeout_inf": ("llm:\n  timeout_s: .inf\n", "llm.timeout_s"),
    "llm_backoff_inf": ("llm:\n  backoff_s: .inf\n", "llm.backoff_s"),
    "llm_max_backoff_huge": ("llm:\n  max_backoff_s: 1.0e300\n", "llm.max_backoff_s"),
    "loudness_nan": ("render:\n  loudness_target_lufs: .nan\n", "render.loudness_target_lufs"),
    "yaml_alias_bomb": (
        "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
        + "".join(
            f"a{i}: &a{i} [{', '.join(['*a' if i == 0 else f'*a{i - 1}'] * 10)}]\n"
            for i in range(8)
        ),
        "expands",
    ),
}


def _one_error_line(res_err: str) -> str:
    lines = [x for x in res_err.strip().splitlines() if x.strip()]
    assert len(lines) == 1, res_err
    assert lines[0].startswith("error: ")
    return lines[0]


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_config_file_is_one_line_naming_the_key(cli: Cli, tmp_path: Path, case: str) -> None:
    text, key = CASES[case]
    cfg = tmp_path / "run.yaml"
    cfg.write_text(text, "utf-8")
    (tmp_path / "in").mkdir()
    for args in (
        ["process", "--intake", tmp_path / "in", "--workdir", tmp_path / "o", "-c", cfg],
        [
            "ingest",
            "--corpus",
            "studio",
            "--root",
            tmp_path,
            "--workdir",
            tmp_path / "w",
            "-c",
            cfg,
        ],
    ):
        res = cli(*args)
        assert res.rc == 2, res.text
        assert "Traceback" not in res.text
        line = _one_error_line(res.err)
        assert key in line and str(cfg) in line


@pytest.mark.parametrize(
    ("name", "value", "key"),
    [
        ("DUETFLOW__RENDER__GAP_MS_MAX", "[1, 2", "DUETFLOW__RENDER__GAP_MS_MAX"),
        ("DUETFLOW__RENDER__GAP_MS_MAX", "1e9", "render.gap_ms_max"),
        ("DUETFLOW__SAMPLE_RATE", "0", "sample_rate"),
        ("DUETFLOW__FILTERS__BALANCE_MIN", "0.9", "balance_min"),
        ("DUETFLOW__RELEASE__RATIOS", "{HH: [1, 2]}", "release.ratios"),
        ("DUETFLOW__NO_SUCH_SECTION__X", "1", "no_such_section"),
    ],
)
def test_bad_environment_override_names_the_variable(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, value: str, key: str
) -> None:
    monkeypatch.setenv(name, value)
    (tmp_path / "in").mkdir()
    res = cli("process", "--intake", tmp_path / "in", "--workdir", tmp_path / "o")
    assert res.rc == 2, res.text
    assert "Traceback" not in res.text
    line = _one_error_line(res.err)
    assert name in line and key in line
