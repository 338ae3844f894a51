"""``duetflow pull --store URI --release ID|latest --split train --dest DIR``."""

from __future__ import annotations

from pathlib import Path

import click

from duetflow.cli.options import (
    config_option,
    progress_enabled,
    progress_option,
    release_option,
    store_option,
)
from duetflow.cli.progress import progress_bars
from duetflow.config import ReleaseConfig, load_config

#: the config's built-in store, relative to wherever the command runs: never used silently
DEMO_STORE = str(ReleaseConfig.model_fields["store"].default)


@click.command("pull")
@store_option()
@release_option("Release id or 'latest'.", default="latest")
@click.option(
    "--split",
    "splits",
    multiple=True,
    type=click.Choice(["train", "val", "test"]),
    default=("train",),
    show_default=True,
    help="Split to fetch; repeatable.",
)
@click.option(
    "--dest", required=True, type=click.Path(file_okay=False, path_type=Path), help="Target folder."
)
@click.option(
    "--export",
    "exports",
    multiple=True,
    type=click.Choice(["lhotse", "hf", "webdataset", "shar"]),
    help="Also write lhotse manifests (DEST/lhotse), a HF datasets layout (DEST/hf), "
    "WebDataset tar shards (DEST/shards/webdataset) or lhotse Shar (DEST/shards/shar); "
    "repeatable.",
)
@click.option(
    "--shard-size",
    default=1000,
    show_default=True,
    type=click.IntRange(min=1),
    help="Dialogues per WebDataset / Shar shard.",
)
@click.option(
    "--category",
    "categories",
    multiple=True,
    type=click.Choice(["HH", "HM", "PH"]),
    help="Only dialogues of this category; repeatable (any of them).",
)
@click.option("--language", "languages", multiple=True, help="Only this language; repeatable.")
@click.option("--corpus", "corpora", multiple=True, help="Only this corpus; repeatable.")
@click.option("--topic", "topics", multiple=True, help="Only this topic id; repeatable.")
@click.option("--workers", default=8, show_default=True, help="Parallel downloads.")
@config_option("Run config YAML (release section: endpoint, region, retries).")
@progress_option()
def command(
    store: str | None,
    release: str,
    splits: tuple[str, ...],
    dest: Path,
    exports: tuple[str, ...],
    shard_size: int,
    categories: tuple[str, ...],
    languages: tuple[str, ...],
    corpora: tuple[str, ...],
    topics: tuple[str, ...],
    workers: int,
    config_path: Path | None,
    progress: bool | None,
) -> None:
    """Fetch a release split: manifests, its turns, the dataset card and report, and audio
    (checksum-verified, resumable).

    --category/--language/--corpus/--topic pull a filtered view: values of one option are
    alternatives, options combine (--category PH --language zh: the Chinese PH dialogues).
    """
    from duetflow.release.pull import pull
    from duetflow.release.view import ReleaseFilter

    where = ReleaseFilter.of(category=categories, language=languages, corpus=corpora, topic=topics)
    cfg = load_config(config_path)
    if store is None and "store" not in cfg.release.model_fields_set:
        # the built-in default (./duetflow-demo/store) means another folder in every directory
        hint = f" (e.g. --store {DEMO_STORE})" if Path(DEMO_STORE).is_dir() else ""
        raise click.UsageError(
            "which store? pass --store (a path, file:// or s3:// URI) or -c CONFIG whose "
            f"release.store names it{hint}"
        )
    uri = store or cfg.release.store
    report = None
    with progress_bars(progress_enabled(progress)):
        for split in splits:
            res = pull(uri, release, split, dest, cfg, workers=workers, where=where)
            report = res.report or report
            view = f" ({where.describe()})" if where else ""
            click.echo(
                f"{res.release_id}/{split}{view}: {res.dialogues} dialogues in {res.manifest} "
                f"({res.downloaded} file(s) downloaded, {res.skipped} already present)"
            )
    if report is not None:
        click.echo(f"dataset card: {report / 'README.md'}  report: {report / 'index.html'}")
    if "lhotse" in exports:
        from duetflow.release.export_lhotse import export_lhotse

        export_lhotse(dest, dest / "lhotse", splits)
        click.echo(f"lhotse manifests in {dest / 'lhotse'}")
    if "hf" in exports:
        from duetflow.release.export_hf import export_hf

        export_hf(dest, dest / "hf", splits)
        click.echo(f"HF datasets layout in {dest / 'hf'}")
    if "webdataset" in exports:
        from duetflow.release.shards import export_webdataset

        wds = export_webdataset(dest, dest / "shards", splits, shard_size=shard_size)
        click.echo(f"{len(wds)} WebDataset shard(s) in {dest / 'shards' / 'webdataset'}")
    if "shar" in exports:
        from duetflow.release.shards import export_shar

        shar = export_shar(dest, dest / "shards", splits, shard_size=shard_size)
        click.echo(f"{len(shar)} lhotse Shar file(s) in {dest / 'shards' / 'shar'}")
    if {"webdataset", "shar"} & set(exports):
        click.echo(f"shard checksums: {dest / 'shards' / 'SHARDS.json'}")
