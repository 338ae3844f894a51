"""Shared pytest fixtures."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

#: fixtures kept in their own modules (tests/ is on sys.path: this conftest has no package)
pytest_plugins = ["s3_fixtures"]

# --- Prefect (tests/flows) ----------------------------------------------------------------------
# Before anything imports prefect: never write runs into the developer's ~/.prefect, never send
# telemetry from a sandbox.
#: the folders this file made, so that a pytest-xdist worker (which inherits the controller's
#: environment) makes its own instead of sharing the controller's
_MADE = "DUETFLOW_TEST_MADE_DIRS"


def _session_dir(var: str, prefix: str) -> None:
    made = [d for d in os.environ.get(_MADE, "").split(os.pathsep) if d]
    inherited = os.environ.get(var) in made and "PYTEST_XDIST_WORKER" in os.environ
    if var not in os.environ or inherited:
        os.environ[var] = path = tempfile.mkdtemp(prefix=prefix)
        atexit.register(shutil.rmtree, path, True)
        os.environ[_MADE] = os.pathsep.join([*made, path])


_session_dir("PREFECT_HOME", "duetflow-test-prefect-")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
# duetflow's per-user cache (duetflow.user_cache) in a folder of this session, never the user's
_session_dir("DUETFLOW_CACHE", "duetflow-test-cache-")

# no test asserts wall-clock time (bench/ measures it): property tests have no deadline either,
# so a loaded machine (two pytest-xdist workers on two cores) cannot fail them
settings.register_profile("duetflow", deadline=None)
settings.load_profile("duetflow")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests of the one Prefect API server per run (``prefect_server``) and those that start
    Prefect servers and workers of their own (``prefect``) run on one pytest-xdist worker, one
    after another (``--dist loadgroup``): one server per run, and never two heavy end-to-end
    runs competing for the same cores."""
    for item in items:
        if item.get_closest_marker("prefect") or "prefect_server" in getattr(
            item, "fixturenames", ()
        ):
            item.add_marker(pytest.mark.xdist_group("prefect"))


@pytest.fixture(scope="session")
def prefect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """One real Prefect API server on 127.0.0.1 (SQLite, temporary PREFECT_HOME) per session.

    Yields the environment for subprocesses (CLI, workers); this process and the Dask workers it
    starts talk to the same server through PREFECT_API_URL. Prefect's temporary in-process API
    is not used: it drops task-run records and cannot serve Dask workers.
    """
    from duetflow.flows import local_server

    home = tmp_path_factory.mktemp("prefect-server")
    quiet = {"PREFECT_SERVER_UI_ENABLED": "false", "PREFECT_LOGGING_LEVEL": "WARNING"}
    url = local_server.start(home, settings=quiet).url
    env = {**os.environ, "PREFECT_HOME": str(home), **quiet}
    env.pop("PREFECT_API_URL", None)
    env["PREFECT_API_URL"] = url
    saved = {k: os.environ.get(k) for k in ("PREFECT_API_URL",)}
    os.environ["PREFECT_API_URL"] = url  # for Dask worker processes started by the tests

    from prefect.settings import PREFECT_API_URL, temporary_settings

    try:
        with temporary_settings({PREFECT_API_URL: url}):
            yield env
            from prefect.logging.handlers import APILogWorker

            APILogWorker.drain_all(timeout=5)  # ship queued run logs while the server is up
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        local_server.stop(home)


# --- sample corpora (tests/corpora and anyone needing real-layout data) -------------------------


@pytest.fixture(scope="session")
def flow_samples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """DailyTalk (with its broken items), the studio sessions, the scripts (pipeline/flows/cli)."""
    from duetflow.demo import make_samples

    root = tmp_path_factory.mktemp("flow-samples")
    make_samples(root, seed=0, scale=1, include=["dailytalk", "studio", "scripts"])
    return root


@pytest.fixture(scope="session")
def sample_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Sample corpora written once per session by ``make_samples(seed=0)``; read-only for tests.

    Holds ``dailytalk/``, ``IEMOCAP_full_release/``, ``MagicData-RAMC/`` (and ``studio/``,
    ``scripts/`` when those generators are installed) plus ``truth.json``.
    """
    from duetflow.demo import make_samples

    root = tmp_path_factory.mktemp("samples")
    make_samples(root, seed=0)
    return root
