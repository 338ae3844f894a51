"""``duetflow server start|stop|status``: a local Prefect server kept between runs.

``duetflow run`` without ``PREFECT_API_URL`` uses it when it answers, instead of starting
Prefect's temporary API for each run (docs/performance.md, *Prefect start-up*).
"""

from __future__ import annotations

from pathlib import Path

import click

from duetflow.cli.run import prefect_home
from duetflow.errors import ServerError


def _home(home: Path | None) -> Path:
    return home if home is not None else prefect_home()


_home_option = click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Prefect home of the server (default: the one `duetflow run` uses).",
)


def _ui_answers(url: str) -> bool:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=2.0) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError, ValueError):
        return False


def _print_urls(api_url: str) -> None:
    """The UI's address and the one line that points Prefect's own commands at the server."""
    ui = api_url.removesuffix("/api")
    click.echo(f"UI: {ui}" if _ui_answers(ui) else "UI: off (PREFECT_SERVER_UI_ENABLED=false)")
    click.echo("for `prefect` commands in this shell (`duetflow worker start` finds it itself):")
    click.echo(f"export PREFECT_API_URL={api_url}")


@click.group("server")
def command() -> None:
    """A local Prefect server that outlives runs, so each run skips the temporary API."""


@command.command("start")
@_home_option
@click.option("--port", type=int, default=None, help="Port on 127.0.0.1 (default: a free one).")
@click.option(
    "--run-host/--no-run-host",
    default=True,
    show_default=True,
    help="Also start a run host: a process with Prefect and the pipeline imported that each "
    "`duetflow run` is forked from (a run then skips their import).",
)
def start_command(home: Path | None, port: int | None, run_host: bool) -> None:
    """Start the server in the background (or report the one already running)."""
    from duetflow.flows import local_server
    from duetflow.flows import run_host as host

    server = local_server.start(_home(home), port=port)
    click.echo(f"prefect server at {server.url} (pid {server.pid}), home {_home(home)}")
    if run_host:
        try:
            pid = host.start(_home(home))
            click.echo(f"run host (pid {pid}) at {host.socket_path(_home(home))}")
        except ServerError as e:  # runs work without it: they import Prefect themselves
            click.echo(f"warning: no run host: {e}", err=True)
    click.echo("`duetflow run` uses it while it runs; `duetflow server stop` stops it.")
    _print_urls(server.url)


@command.command("stop")
@_home_option
def stop_command(home: Path | None) -> None:
    """Stop the server started by ``duetflow server start`` (and its run host)."""
    from duetflow.flows import local_server
    from duetflow.flows import run_host as host

    if host.stop(_home(home)):
        click.echo("run host stopped")
    if local_server.stop(_home(home)):
        click.echo("stopped")
    else:
        click.echo(f"no server recorded in {_home(home)}")


@command.command("status")
@_home_option
def status_command(home: Path | None) -> None:
    """Print the server's URL, or exit 1 when none answers."""
    from duetflow.flows import local_server

    server = local_server.running(_home(home))
    if server is None:
        click.echo(f"no server answering in {_home(home)}")
        raise SystemExit(1)
    click.echo(f"prefect server at {server.url} (pid {server.pid})")
    from duetflow.flows import run_host as host

    answer = host.ping(_home(home))
    click.echo(f"run host: pid {answer['pid']}" if answer else "run host: none")
    _print_urls(server.url)
