"""``duetflow audit SOURCE... [--mode off|warn|fail] [--out DIR]``: cue parity of a release.

Measures every dialogue's pipeline-controlled cues from its audio and turns, compares them per
language and category pair and prints the table (docs/fairness.md). A source is what
``duetflow report`` reads: a pulled or published release folder, a store root (its latest
release), a store URI, or rendered work directories.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from pathlib import Path

import click

from duetflow.cli.options import config_option, seed_option
from duetflow.config import ReleaseConfig, RunConfig, load_config

log = logging.getLogger(__name__)


def _release_config(meta: object) -> ReleaseConfig | None:
    """The release section a release was published with (RELEASE.json), if readable."""
    if not isinstance(meta, dict) or not isinstance(meta.get("release_config"), dict):
        return None
    try:
        return ReleaseConfig.model_validate(meta["release_config"])
    except ValueError as e:  # another code version's section: the defaults apply
        log.warning("audit: release config not loadable (%s); using the defaults", e)
        return None


@click.command("audit")
@click.argument("sources", nargs=-1, required=True)
@click.option(
    "--mode",
    type=click.Choice(["warn", "fail"]),
    default=None,
    help="fail: exit with an error when a check fails (default: the release's "
    "release.cue_parity, warn when off or unknown).",
)
@click.option(
    "--out",
    "out_dir",
    default=None,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for cues.parquet, summary.json and summary.md.",
)
@config_option("Run config (release.cue_thresholds, seed); default: the release's own.")
@seed_option("Seed of the bootstrap and permutation draws (default: the config's).")
def command(
    sources: tuple[str, ...],
    mode: str | None,
    out_dir: Path | None,
    config_path: Path | None,
    seed: int | None,
) -> None:
    """Audit the cues the pipeline controls per language and category pair (docs/fairness.md).

    Prints per pair the leave-one-out classifier's accuracy and AUC (95 % intervals), its
    permutation p-value, the cues with the largest standardised difference, and the gate's
    verdict under release.cue_thresholds.
    """
    from duetflow.fairness.audit import audit_items, write_audit
    from duetflow.fairness.gate import enforce
    from duetflow.report.rows import dialogues_with_turns
    from duetflow.report.sources import ReportInput, open_inputs

    cfg = load_config(config_path) if config_path else None
    with open_inputs(list(sources), cfg) as inputs:
        rel = next((i.release for i in inputs if i.release), None)
        section = cfg.release if cfg else (_release_config(rel) or RunConfig().release)
        run_seed = seed if seed is not None else (cfg or RunConfig()).seed
        chosen = mode or (section.cue_parity if section.cue_parity != "off" else "warn")

        def items(ins: Sequence[ReportInput]) -> Iterator[tuple]:  # type: ignore[type-arg]
            for inp in ins:
                for row, turns in dialogues_with_turns(inp):
                    yield row, turns, inp.audio(row)

        result = audit_items(items(inputs), section.cue_thresholds, seed=run_seed, mode=chosen)
    click.echo(f"{len(result.rows)} dialogues measured; {len(result.errors)} not measured")
    for e in result.errors:
        click.echo(f"  not measured: {e}")
    click.echo(result.markdown(), nl=False)
    if out_dir is not None:
        for path in write_audit(result, out_dir):
            click.echo(f"wrote {path}")
    enforce(result.verdict)
