"""``duetflow demo``: sample data + the default config + build_dataset, in one folder.

Works on Prefect's temporary local API (no server to start): the demo's Prefect database lives
in ``<dest>/.prefect`` unless PREFECT_API_URL or PREFECT_HOME is set.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from duetflow.cli.options import renamed_option
from duetflow.cli.progress import progress_bars
from duetflow.cli.run import echo_summary, prefect_api


@click.command("demo")
@renamed_option(
    "--dest",
    param="dest",
    old=("--out",),
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for samples, config, work directory, store and report [default: ./duetflow-demo].",
)
@click.option("--scale", default=1, show_default=True, help="Sample corpus size multiplier.")
@click.option("--seed", default=0, show_default=True, help="Sample data seed.")
@click.option("--progress/--no-progress", default=None, help="Progress bars (default: on a tty).")
def command(dest: Path | None, scale: int, seed: int, progress: bool | None) -> None:
    """Generate sample corpora, studio sessions and scripts, then build and validate a release.

    Re-running reuses the samples, the config (edit DEST/config.yaml and re-run) and every
    finished shard.
    """
    out = (dest or Path("duetflow-demo")).resolve()
    from duetflow.demo.prepare import prepare_demo

    with prefect_api(home=out / ".prefect"):
        cfg_path = prepare_demo(out, seed=seed, scale=scale)
        click.echo(f"samples and config in {out}")
        from duetflow.flows import build_dataset

        with progress_bars(sys.stderr.isatty() if progress is None else progress):
            summary = build_dataset(config=str(cfg_path))
    echo_summary(summary)
    if summary.release_id:
        from duetflow.release.validate import validate_release

        problems = validate_release(summary.store, summary.release_id)
        if problems:
            for problem in problems:
                click.echo(f"validation problem: {problem}", err=True)
            raise click.ClickException(f"release {summary.release_id} failed validation")
        click.echo(f"validated release {summary.release_id}")
    click.echo(f"next: duetflow run -c {cfg_path}")
