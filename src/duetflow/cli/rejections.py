"""``duetflow rejections WORKDIR [--reason R]``: each rejection, where it happened and why."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import click


@click.command("rejections")
@click.argument("workdir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--reason",
    "reasons",
    multiple=True,
    help="Only rejections with this reason code (repeatable), e.g. interruption.",
)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Show at most N.")
def command(workdir: Path, reasons: tuple[str, ...], limit: int | None) -> None:
    """List WORKDIR's rejections (intake or rendered): reason, where in the source (file and time
    range), and the config knob that decided it with the value the run used."""
    from duetflow.errors import ManifestError
    from duetflow.records.manifest import REJECTIONS
    from duetflow.rejections import iter_explained

    if not (workdir / REJECTIONS).is_file():
        raise click.UsageError(f"{workdir} has no {REJECTIONS}: not an ingest or process output")
    counts: Counter[str] = Counter()
    shown = 0
    try:
        for ex in iter_explained(workdir, reasons):
            r = ex.rejection
            counts[r.reason] += 1
            if limit is not None and shown >= limit:
                continue
            shown += 1
            click.echo(f"{r.item_id}  {r.stage}/{r.reason}")
            click.echo(f"  where: {ex.where}")
            click.echo(f"  why:   {ex.why}")
    except ManifestError as e:
        raise click.ClickException(str(e)) from None
    total = sum(counts.values())
    if not total:
        which = f" with reason {', '.join(reasons)}" if reasons else ""
        click.echo(f"no rejections{which} in {workdir}")
        return
    more = f" (showing {shown})" if shown < total else ""
    by = ", ".join(f"{k} {v}" for k, v in counts.most_common())
    click.echo(f"{total} rejection(s){more}: {by}")
