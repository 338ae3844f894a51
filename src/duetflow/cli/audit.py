"""``duetflow audit SOURCE... [--mode off|warn|fail] [--out DIR]``: cue parity of a release.

Measures every dialogue's pipeline-controlled cues from its audio and turns, compares them per
language and category pair and prints the table (docs/fairness.md). A source is what
``duetflow report`` reads (a published release folder, a store root: its latest release, a
store URI, rendered work directories) or a folder made by ``duetflow pull`` (its splits).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from duetflow.cli.options import config_option, seed_option
from duetflow.config import ReleaseConfig, RunConfig, load_config
from duetflow.errors import DuetflowError

if TYPE_CHECKING:
    from duetflow.records.rows import RenderedDialogueRow
    from duetflow.report.sources import ReportInput

log = logging.getLogger(__name__)


def pulled_inputs(dest: Path) -> list[ReportInput]:
    """The splits of a folder made by ``duetflow pull`` (``<split>.parquet``, ``turns.parquet``,
    ``RELEASE.json``, ``audio/``); empty when ``dest`` is not one."""
    from duetflow.records.rows import ReleaseDialogueRow
    from duetflow.release.table_schemas import SPLITS
    from duetflow.report.sources import ReportInput
    from duetflow.storage.store import checked_audio_key

    meta_path = dest / "RELEASE.json"
    splits = [dest / f"{s}.parquet" for s in SPLITS if (dest / f"{s}.parquet").is_file()]
    if not meta_path.is_file() or not splits:
        return []
    meta = json.loads(meta_path.read_text(encoding="utf-8"))

    def audio(row: RenderedDialogueRow) -> Path:
        key = row.audio_key if isinstance(row, ReleaseDialogueRow) else None
        # only the verified content address, never a path from the row (StorageError)
        return dest.joinpath(*checked_audio_key(key, row.sha256).split("/"))

    turns = dest / "turns.parquet"
    return [
        ReportInput(
            kind="release",
            label=str(path),
            dialogues=path,
            turns=turns if turns.is_file() else None,
            rejections=None,
            audio=audio,
            release=meta if isinstance(meta, dict) else None,
            release_id=str(meta.get("release_id")) if isinstance(meta, dict) else None,
        )
        for path in splits
    ]


@contextmanager
def _none() -> Iterator[list[ReportInput]]:
    yield []


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
    verdict under release.cue_thresholds. A SOURCE is a store, a release folder, a folder
    made by `duetflow pull` (the splits pulled into it) or rendered work directories.
    """
    from duetflow.fairness.audit import audit_items, write_audit
    from duetflow.fairness.cues import Levels
    from duetflow.fairness.gate import enforce
    from duetflow.report.rows import dialogues_with_turns
    from duetflow.report.sources import open_inputs

    cfg = load_config(config_path) if config_path else None
    pulled = [p for s in sources for p in pulled_inputs(Path(s))]
    rest = [s for s in sources if not pulled_inputs(Path(s))]
    with open_inputs(rest, cfg) if rest else _none() as opened:
        inputs = [*pulled, *opened]
        rel = next((i.release for i in inputs if i.release), None)
        section = cfg.release if cfg else (_release_config(rel) or RunConfig().release)
        run_seed = seed if seed is not None else (cfg or RunConfig()).seed
        chosen = mode or (section.cue_parity if section.cue_parity != "off" else "warn")

        unread: list[str] = []

        def items(ins: Sequence[ReportInput]) -> Iterator[tuple]:  # type: ignore[type-arg]
            for inp in ins:
                for row, turns in dialogues_with_turns(inp):
                    try:
                        path = inp.audio(row)
                    except DuetflowError as e:  # one bad row never stops the rest
                        unread.append(f"{row.dialogue_id}: {e}")
                        continue
                    yield row, turns, path

        levels = Levels.of(cfg.render) if cfg else Levels()
        result = audit_items(
            items(inputs), section.cue_thresholds, seed=run_seed, mode=chosen, levels=levels
        )
    errors = [*unread, *result.errors]
    click.echo(f"{len(result.rows)} dialogues measured; {len(errors)} not measured")
    for e in errors:
        click.echo(f"  not measured: {e}")
    click.echo(result.markdown(), nl=False)
    if out_dir is not None:
        for path in write_audit(result, out_dir):
            click.echo(f"wrote {path}")
    enforce(result.verdict)
