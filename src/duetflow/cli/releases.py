"""``duetflow releases list --store URI``."""

from __future__ import annotations

from pathlib import Path

import click

from duetflow.cli.options import config_option, store_option
from duetflow.config import load_config


@click.group("releases")
def command() -> None:
    """Inspect the releases of a store."""


@command.command("list")
@store_option()
@config_option("Run config YAML (release section: endpoint, region).")
def list_command(store: str | None, config_path: Path | None) -> None:
    """List complete releases (those with RELEASE.json); the latest is marked with '*'."""
    from duetflow.release.layout import LATEST_KEY, list_releases, read_release_json
    from duetflow.storage import open_store

    cfg = load_config(config_path)
    st = open_store(store or cfg.release.store, cfg.release)
    ids = list_releases(st)
    latest = st.get_bytes(LATEST_KEY).decode().strip() if st.exists(LATEST_KEY) else None
    if not ids:
        click.echo(f"no releases in {st.uri}")
        return
    for rid in ids:
        counts = read_release_json(st, rid).get("counts", {})
        mark = "*" if rid == latest else " "
        click.echo(
            f"{mark} {rid}  dialogues {counts.get('dialogues', '?')}  "
            f"train {counts.get('train', '?')}  val {counts.get('val', '?')}  "
            f"test {counts.get('test', '?')}"
        )
