"""Small pieces of the Prefect shell that need no server: retry policy, progress bars, config."""

from __future__ import annotations

from pathlib import Path

import pytest
from prefect.states import Failed

from duetflow.errors import ConfigError, ManifestError, StorageError
from duetflow.flows.runner import build_task_runner, resolve_config
from duetflow.tasks import transient_only
from flow_helpers import write_config


def test_retries_only_for_failures_a_retry_can_fix() -> None:
    assert transient_only(None, None, Failed(data=StorageError("s3: connection reset")))
    assert transient_only(None, None, Failed(data=OSError("NFS stale handle")))
    assert not transient_only(None, None, Failed(data=ManifestError("2 validation failures")))
    assert not transient_only(None, None, Failed(data=ConfigError("unknown key")))


def test_flow_parameters_override_the_config_file(tmp_path: Path) -> None:
    cfg_path = write_config(tmp_path / "run.yaml", tmp_path)
    cfg = resolve_config(
        str(cfg_path), workdir=str(tmp_path / "w2"), store="s3://bucket/x", runner="dask",
        overrides={"render": {"gap_ms_max": 240.0}},
    )  # fmt: skip
    assert cfg.workdir == tmp_path / "w2" and cfg.release.store == "s3://bucket/x"
    assert cfg.runner.kind == "dask" and cfg.render.gap_ms_max == 240.0
    assert cfg.runner.shard_size == 2  # from the file
    again = resolve_config(cfg, overrides={"runner": {"max_workers": 3}})
    assert again.runner.max_workers == 3 and again.render.gap_ms_max == 240.0
    assert resolve_config(cfg) is cfg
    with pytest.raises(ConfigError, match="unknown key"):
        resolve_config(str(cfg_path), overrides={"render": {"gap_max": 1}})


def test_thread_runner_is_bounded_and_dask_needs_an_address(tmp_path: Path) -> None:
    cfg = resolve_config(str(write_config(tmp_path / "run.yaml", tmp_path)))
    runner = build_task_runner(cfg.runner)
    assert getattr(runner, "_max_workers", None) == 2
    dask_cfg = resolve_config(cfg, runner="dask")
    with pytest.raises(ConfigError, match="scheduler address"):
        build_task_runner(dask_cfg.runner)


def test_dask_runner_refuses_the_temporary_api(tmp_path: Path) -> None:
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from duetflow.flows.runner import dask_cluster

    cfg = resolve_config(str(write_config(tmp_path / "run.yaml", tmp_path)), runner="dask")
    with (
        temporary_settings(restore_defaults={PREFECT_API_URL}),
        pytest.raises(ConfigError, match="Prefect API server"),
        dask_cluster(cfg.runner),
    ):
        pass
    with dask_cluster(resolve_config(cfg, runner="threads").runner) as address:
        assert address is None


def test_run_checks_the_config_before_prefect_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from click.testing import CliRunner

    from duetflow.cli import main

    # reaching the flows at all would fail loudly: the checks must answer first
    monkeypatch.setitem(sys.modules, "duetflow.flows", None)
    typo = write_config(tmp_path / "typo.yaml", tmp_path, render={"gap_ms_mx": 200})
    res = CliRunner().invoke(main, ["run", "-c", str(typo)])
    assert res.exit_code == 2 and "unknown key 'render.gap_ms_mx'" in res.output
    assert "Traceback" not in res.output
    missing = write_config(tmp_path / "missing.yaml", tmp_path / "nowhere", scripts=False)
    res = CliRunner().invoke(main, ["run", "-c", str(missing), "--seed", "3"])
    assert res.exit_code == 2 and "is not a directory" in res.output
    res = CliRunner().invoke(main, ["run", "-c", str(tmp_path / "absent.yaml")])
    assert res.exit_code == 2
