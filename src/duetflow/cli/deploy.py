"""``duetflow deploy``: register the deployments of prefect.yaml with a Prefect server.

Equivalent to::

    prefect work-pool create duetflow-process --type process
    prefect concurrency-limit create duetflow-tts 1
    DUETFLOW_PROJECT_DIR=$PWD prefect --no-prompt deploy --all

``DUETFLOW_PROJECT_DIR`` is the checkout the worker runs from (the ``pull`` step); Prefect
resolves it when deploying, not on the worker.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click

from duetflow.cli.run import prefect_env
from duetflow.errors import ConfigError

POOL = "duetflow-process"
TTS_TAG = "duetflow-tts"


def _prefect(args: list[str], env: dict[str, str], cwd: Path, check: bool = True) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "prefect", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    if check and proc.returncode != 0:
        raise ConfigError(
            f"prefect {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}"
        )
    return proc.stdout + proc.stderr


def deploy(
    project_dir: Path, *, pool: str = POOL, tts_limit: int = 1, prefect_file: str = "prefect.yaml"
) -> str:
    """Create the work pool and the TTS tag limit (if missing), then deploy everything."""
    project = project_dir.resolve()
    if not (project / prefect_file).is_file():
        raise ConfigError(f"{project / prefect_file}: not found (run from the checkout)")
    env = {**os.environ, "DUETFLOW_PROJECT_DIR": str(project)}
    if not env.get("PREFECT_API_URL"):
        raise ConfigError(
            "deployments need a Prefect server: `prefect server start`, then set PREFECT_API_URL"
        )
    out = _prefect(["work-pool", "inspect", pool], env, project, check=False)
    if "not found" in out.lower() or "no work pool" in out.lower():
        _prefect(["work-pool", "create", pool, "--type", "process"], env, project)
    _prefect(["concurrency-limit", "create", TTS_TAG, str(tts_limit)], env, project)
    return _prefect(
        ["--no-prompt", "deploy", "--all", "--prefect-file", prefect_file], env, project
    )


@click.command("deploy")
@click.option(
    "--project-dir",
    default=".",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="The checkout holding prefect.yaml (the worker's working directory).",
)
@click.option("--pool", default=POOL, show_default=True, help="Process work pool name.")
@click.option("--tts-limit", default=1, show_default=True, help="Concurrent TTS tasks (per GPU).")
def command(project_dir: Path, pool: str, tts_limit: int) -> None:
    """Register nightly-studio-ingest, weekly-release and build-dataset on the Prefect server.

    Then start a worker: prefect worker start --pool duetflow-process
    """
    prefect_env()
    click.echo(deploy(project_dir, pool=pool, tts_limit=tts_limit))
    click.echo(f"start a worker: prefect worker start --pool {pool}")
