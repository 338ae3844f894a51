"""Where ``duetflow run`` records its flows: a given server, else a Prefect home kept between
runs (its temporary API's database created once, not per run)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from duetflow.cli.run import PREFECT_HOME_ENV, prefect_env
from duetflow.user_cache import CACHE_DIR_ENV
from flow_helpers import write_config

DUETFLOW = str(Path(sys.executable).with_name("duetflow"))


@pytest.fixture
def bare_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No Prefect API, no Prefect home, a home folder without Prefect profiles."""
    for key in ("PREFECT_API_URL", "PREFECT_HOME", PREFECT_HOME_ENV, CACHE_DIR_ENV):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path


def test_a_given_server_is_used_and_no_home_is_chosen(
    bare_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:1/api")
    assert prefect_env() == "server"
    assert "PREFECT_HOME" not in os.environ


def test_the_home_outlives_the_run(bare_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = bare_env / "cache" / "duetflow" / "prefect"
    assert prefect_env() == str(home) and home.is_dir()
    monkeypatch.delenv("PREFECT_HOME")
    assert prefect_env() == str(home)  # the next run: the same folder


def test_the_home_can_be_configured_and_a_users_prefect_profiles_are_kept(
    bare_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PREFECT_HOME_ENV, str(bare_env / "mine"))
    assert prefect_env() == str(bare_env / "mine")
    monkeypatch.delenv("PREFECT_HOME")
    monkeypatch.delenv(PREFECT_HOME_ENV)
    profiles = bare_env / "home" / ".prefect" / "profiles.toml"
    profiles.parent.mkdir(parents=True)
    profiles.write_text('[profiles.default]\nPREFECT_API_URL = "http://x/api"\n')
    assert prefect_env() == str(profiles.parent)  # their API and runs stay where they were
    monkeypatch.setenv("PREFECT_HOME", str(bare_env / "set"))
    assert prefect_env() == str(bare_env / "set")  # anything set wins


@pytest.mark.prefect
@pytest.mark.slow
def test_run_with_an_api_url_starts_no_server_of_its_own(
    tmp_path: Path,
    flow_samples: Path,
    prefect_server: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from click.testing import CliRunner
    from prefect.client.orchestration import get_client
    from prefect.server.api import server

    from duetflow.cli import main

    started: list[str] = []
    monkeypatch.setattr(
        server.SubprocessASGIServer, "start", lambda self, *a, **k: started.append("temporary")
    )
    with get_client(sync_client=True) as client:
        before = len(client.read_flow_runs(limit=200))
    cfg = write_config(tmp_path / "run.yaml", flow_samples, scripts=False)
    res = CliRunner().invoke(main, ["run", "-c", str(cfg), "--no-publish", "--no-progress"])
    assert res.exit_code == 0, res.output
    assert started == []
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(limit=200)
    assert len(runs) > before  # the given server recorded the run
    assert any(r.flow_id and r.name for r in runs)


def _flow_runs(db: Path) -> int:
    with sqlite3.connect(db) as con:
        return int(con.execute("select count(*) from flow_run").fetchone()[0])


@pytest.mark.prefect
@pytest.mark.slow
def test_two_runs_record_into_one_persistent_home(tmp_path: Path, flow_samples: Path) -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PREFECT_API_URL", "PREFECT_HOME", PREFECT_HOME_ENV, CACHE_DIR_ENV)
    }
    env.update(HOME=str(tmp_path / "home"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    cfg = write_config(tmp_path / "run.yaml", flow_samples, scripts=False)
    cmd = [DUETFLOW, "run", "-c", str(cfg), "--no-publish", "--no-progress"]
    db = tmp_path / "cache" / "duetflow" / "prefect" / "prefect.db"
    subprocess.run(cmd, env=env, check=True, capture_output=True, timeout=600)
    first, inode = _flow_runs(db), db.stat().st_ino
    assert first >= 1
    subprocess.run(cmd, env=env, check=True, capture_output=True, timeout=600)
    assert db.stat().st_ino == inode  # the same database, not one made anew
    assert _flow_runs(db) == 2 * first  # both runs recorded in it
