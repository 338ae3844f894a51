"""``duetflow deploy``: register the deployments of prefect.yaml with a Prefect server.

Equivalent to, from the checkout::

    prefect work-pool create POOL --type process
    prefect concurrency-limit create duetflow-tts 1
    prefect --no-prompt deploy --all

with every deployment put on ``POOL`` (``prefect deploy --all`` ignores ``--pool``, so the
deployments are registered from a copy of prefect.yaml with the pool and, with ``--paused``,
inactive schedules filled in). The worker's working directory is the checkout, recorded at
deploy time by the ``duetflow.deploy_steps.project_directory`` build step.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import click
import yaml

from duetflow.cli.run import prefect_api
from duetflow.errors import ConfigError

POOL = "duetflow-process"


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


def deploy_spec(spec: dict[str, Any], *, pool: str, paused: bool = False) -> dict[str, Any]:
    """prefect.yaml's content with every deployment on ``pool`` (schedules off if ``paused``)."""
    out = dict(spec)
    deployments = []
    for d in spec.get("deployments") or []:
        d = dict(d)
        d["work_pool"] = {**(d.get("work_pool") or {}), "name": pool}
        if paused and d.get("schedules"):
            d["schedules"] = [{**s, "active": False} for s in d["schedules"]]
        deployments.append(d)
    out["deployments"] = deployments
    out.pop("definitions", None)  # anchors are resolved by the YAML load
    return out


def deploy(
    project_dir: Path,
    *,
    pool: str = POOL,
    tts_limit: int = 1,
    prefect_file: str = "prefect.yaml",
    paused: bool = False,
) -> str:
    """Create the work pool and the TTS tag limit (if missing), then deploy everything on
    ``pool``; returns Prefect's output."""
    project = project_dir.resolve()
    source = project / prefect_file
    if not source.is_file():
        raise ConfigError(f"{source}: not found (run from the checkout)")
    env = dict(os.environ)
    if not env.get("PREFECT_API_URL"):
        raise ConfigError(
            "deployments need a Prefect server: `duetflow server start` (or set "
            "PREFECT_API_URL to a server's API)"
        )
    spec = yaml.safe_load(source.read_text(encoding="utf-8")) or {}
    rendered = yaml.safe_dump(deploy_spec(spec, pool=pool, paused=paused), sort_keys=False)
    out = _prefect(["work-pool", "inspect", pool], env, project, check=False)
    if "not found" in out.lower() or "no work pool" in out.lower():
        _prefect(["work-pool", "create", pool, "--type", "process"], env, project)
    from duetflow.pipeline.stage import TTS_TAG  # the synth stage's tag, declared with its hints

    _prefect(["concurrency-limit", "create", TTS_TAG, str(tts_limit)], env, project)
    with tempfile.TemporaryDirectory(prefix="duetflow-deploy-") as tmp:
        path = Path(tmp) / "prefect.yaml"
        path.write_text(rendered, encoding="utf-8")
        return _prefect(
            ["--no-prompt", "deploy", "--all", "--prefect-file", str(path)], env, project
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
@click.option(
    "--paused", is_flag=True, help="Register the schedules inactive (deploying activates them)."
)
def command(project_dir: Path, pool: str, tts_limit: int, paused: bool) -> None:
    """Register nightly-studio-ingest, weekly-release and build-dataset on the Prefect server.

    Deploying activates the nightly and weekly schedules unless --paused; resume or pause one
    later with `prefect deployment schedule resume|pause <flow>/<deployment> <schedule id>`.
    Then start a worker: duetflow worker start --pool POOL
    """
    with prefect_api() as where:  # a temporary API ends with this command: no URL to export
        api = os.environ.get("PREFECT_API_URL", "") if where == "server" else ""
        click.echo(deploy(project_dir, pool=pool, tts_limit=tts_limit, paused=paused))
    state = "inactive (--paused)" if paused else "active"
    click.echo(f"schedules registered {state}; start a worker: duetflow worker start --pool {pool}")
    click.echo(f"for `prefect` commands in this shell: export PREFECT_API_URL={api}")
