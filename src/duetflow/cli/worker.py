"""``duetflow worker start [--pool POOL]``: a Prefect process worker on the kept server.

``prefect worker start --pool duetflow-process`` on its own starts Prefect's temporary API and
stops ("PREFECT_API_URL must be set"): a worker needs a server that outlives it. This command
finds the one ``duetflow server start`` keeps (or ``PREFECT_API_URL`` when set), says which, and
runs ``prefect worker start`` against it as its child, in a session of its own.

Stopping: Prefect's worker takes a first SIGINT or SIGTERM as "stop polling, then exit", but
an idle worker of Prefect 3.9 acknowledges it ("Sending SIGINT to the process worker") and
keeps running until a second signal kills it. So this command relays the first SIGTERM or
Ctrl-C as one SIGINT, waits ``--grace-s`` for the worker to exit, then kills the worker
process (a second signal kills it at once). Flow runs the worker started are processes of
their own and are left to finish (docs/scaling.md, *Workers*).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

import click

from duetflow.cli.deploy import POOL

#: Seconds a worker asked to stop may take before it is killed.
DEFAULT_GRACE_S = 10.0


def worker_argv(pool: str, *, run_once: bool = False, limit: int | None = None) -> list[str]:
    """The ``prefect worker start`` command line this command runs."""
    argv = [sys.executable, "-m", "prefect", "worker", "start", "--pool", pool, "--type", "process"]
    if run_once:
        argv.append("--run-once")
    if limit is not None:
        argv += ["--limit", str(limit)]
    return argv


def server_url(home: Path | None = None) -> str:
    """``PREFECT_API_URL`` when set, else the URL of the server ``duetflow server start`` keeps
    (in ``home``, default: the one ``duetflow run`` uses); UsageError when neither is there."""
    from duetflow.cli.run import prefect_home
    from duetflow.flows import local_server

    given = os.environ.get("PREFECT_API_URL")
    if given:
        return given
    where = home if home is not None else prefect_home()
    server = local_server.running(where)
    if server is None:
        raise click.UsageError(
            f"no Prefect server answers in {where}: start one with `duetflow server start` "
            "(or set PREFECT_API_URL to a server's API)"
        )
    return server.url


def supervise(argv: list[str], env: dict[str, str], grace_s: float) -> int:
    """Run the worker until it exits; relay the first SIGTERM/SIGINT as SIGINT, kill it after
    ``grace_s`` or on a second signal. Returns the worker's exit code (0 when stopped on
    request)."""
    proc = subprocess.Popen(argv, env=env, start_new_session=True)
    asked: list[float] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if asked:
            proc.kill()
            return
        asked.append(time.monotonic())
        click.echo(f"{signal.Signals(signum).name}: stopping the worker (pid {proc.pid})", err=True)
        proc.send_signal(signal.SIGINT)

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        while True:
            try:
                rc = proc.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                if asked and time.monotonic() - asked[0] > grace_s:
                    click.echo(f"the worker did not exit within {grace_s:g} s: killed", err=True)
                    proc.kill()
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    return 0 if asked else rc


@click.group("worker")
def command() -> None:
    """Prefect workers that run the deployments of `duetflow deploy`."""


@command.command("start")
@click.option("--pool", default=POOL, show_default=True, help="Work pool to poll.")
@click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Prefect home of `duetflow server start` (default: the one `duetflow run` uses).",
)
@click.option("--run-once", is_flag=True, help="Run the flow runs due now, then exit.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Flow runs at a time.")
@click.option(
    "--grace-s",
    type=click.FloatRange(min=0),
    default=DEFAULT_GRACE_S,
    show_default=True,
    help="After SIGTERM/Ctrl-C, seconds the worker may take to exit before it is killed.",
)
def start_command(
    pool: str, home: Path | None, run_once: bool, limit: int | None, grace_s: float
) -> None:
    """Start a process worker on POOL against the kept server (`duetflow server start`).

    SIGTERM or Ctrl-C stops it (killed after --grace-s); flow runs it started run on.
    """
    url = server_url(home)
    env = {**os.environ, "PREFECT_API_URL": url}
    env.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    if home is not None:
        env["PREFECT_HOME"] = str(home)
    click.echo(f"worker on pool {pool!r} against {url}", err=True)
    raise SystemExit(supervise(worker_argv(pool, run_once=run_once, limit=limit), env, grace_s))
