"""``duetflow stage NAME -c CONFIG``: any one stage of the pipeline on its own, in this process.

One command for every stage, generic over its spec like the stage flows
(:func:`duetflow.flows.stages.stage_flow`): what the stage needs from earlier stages is found in
the work directory (the spec's ``resume``) or taken from ``--input``, and the stage runs through
:func:`duetflow.pipeline.driver.run_stage` on the plain executor, with the same cache as a run.
``NAME`` is a stage of the pipeline (``duetflow stage --list``) or ``module:ATTR`` naming a
plug-in stage's spec.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from duetflow.cli.options import (
    config_option,
    progress_enabled,
    progress_option,
    release_option,
    seed_option,
    seed_override,
    store_option,
    workdir_option,
)
from duetflow.cli.progress import progress_bars

if TYPE_CHECKING:
    from duetflow.pipeline.stage import StageSpec


def find_stage(name: str) -> StageSpec:
    """The stage named ``name`` in the pipeline, or the spec at ``module:ATTR``."""
    from duetflow.pipeline.stage import StageSpec
    from duetflow.pipeline.stages import BY_NAME

    if ":" not in name:
        if name not in BY_NAME:
            raise click.BadParameter(
                f"no stage {name!r}; have {', '.join(BY_NAME)} (or module:ATTR)",
                param_hint="NAME",
            )
        return BY_NAME[name]
    module, _, attr = name.partition(":")
    try:
        spec = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise click.BadParameter(f"{name}: {e}", param_hint="NAME") from None
    if not isinstance(spec, StageSpec):
        raise click.BadParameter(f"{name} is a {type(spec).__name__}, not a StageSpec")
    return spec


def _line(item: Any) -> str:
    from duetflow.pipeline.cache import StepOutcome
    from duetflow.pipeline.stages.publish import ReleaseSummary

    if isinstance(item, StepOutcome):
        reasons = ", ".join(f"{k}={v}" for k, v in sorted(item.by_reason.items()))
        return (
            f"{item.label}: found {item.found}, kept {item.kept}, rejected {item.rejected}"
            + (f" ({reasons})" if reasons else "")
            + f" -> {item.path}"
        )
    if isinstance(item, ReleaseSummary):
        return f"release {item.release_id} in {item.store}"
    return repr(item)


@click.command("stage")
@click.argument("name", required=False)
@config_option("Run config YAML (the stage reads its own sections of it).")
@workdir_option("Work directory (default: the config's).", required=False)
@click.option(
    "--corpus", "corpora", multiple=True, help="Only this corpus (ingest, process); repeatable."
)
@click.option(
    "--input",
    "inputs",
    multiple=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="A work directory the stage reads (default: found in the work directory); repeatable.",
)
@store_option()
@release_option()
@seed_option()
@progress_option()
@click.option("--list", "list_stages", is_flag=True, help="List the pipeline's stages and exit.")
def command(
    name: str | None,
    config_path: Path | None,
    workdir: Path | None,
    corpora: tuple[str, ...],
    inputs: tuple[Path, ...],
    store: str | None,
    release: str | None,
    seed: int | None,
    progress: bool | None,
    list_stages: bool,
) -> None:
    """Run one stage NAME on its own (ingest, process, match, scripts, synth, publish, ...)."""
    from duetflow.config import load_config
    from duetflow.pipeline.driver import run_alone
    from duetflow.pipeline.executors import PlainExecutor
    from duetflow.pipeline.stages import STAGES

    if list_stages:
        for s in STAGES:
            click.echo(f"{s.name:8} {s.inputs} -> {s.outputs}")
        return
    if not name:
        raise click.UsageError("missing NAME (see `duetflow stage --list`)")
    spec = find_stage(name)
    overrides: dict[str, Any] = seed_override(seed)
    if workdir is not None:
        overrides["workdir"] = str(workdir.resolve())
    if store is not None:
        overrides["release"] = {"store": store}
    config = load_config(config_path, overrides=overrides or None)
    with progress_bars(progress_enabled(progress)):
        state = run_alone(
            spec, config, PlainExecutor(), corpora=corpora or None, workdirs=inputs or None,
            release_id=release,
        )  # fmt: skip
    output = state.output(spec.name, [])
    computed = sum(not s.reused for s in state.steps)
    click.echo(
        f"{spec.name}: {len(state.steps)} steps ({computed} computed, "
        f"{len(state.steps) - computed} reused)"
    )
    for item in output:
        click.echo(f"  {_line(item)}")
