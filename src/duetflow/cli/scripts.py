"""``duetflow scripts generate|rewrite``: two-speaker scripts from an OpenAI-compatible LLM."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from duetflow.cli.options import config_option
from duetflow.config import RunConfig, load_config

F = TypeVar("F", bound=Callable[..., Any])


def _llm_options(fn: F) -> F:
    fn = click.option(
        "--llm-model", default=None, help="Model name the endpoint serves; default: llm.model."
    )(fn)
    fn = click.option(
        "--llm-base-url",
        default=None,
        help="OpenAI-compatible base URL (hosted, vLLM, Ollama, llama.cpp server), e.g. "
        "http://127.0.0.1:8000/v1; default: llm.base_url. The key is read from llm.api_key_env.",
    )(fn)
    return fn


def _out_option(fn: F) -> F:
    return click.option(
        "--out",
        "out_dir",
        required=True,
        type=click.Path(file_okay=False, path_type=Path),
        help="Folder of script files (resumable: finished scripts are not asked for again).",
    )(fn)


def _config(config_path: Path | None, base_url: str | None, model: str | None) -> RunConfig:
    llm = {k: v for k, v in (("base_url", base_url), ("model", model)) if v}
    cfg = load_config(config_path, overrides={"llm": llm} if llm else None)
    if not cfg.llm.configured:
        raise click.UsageError("no LLM: pass --llm-base-url and --llm-model (or set llm.*)")
    return cfg


def _print(report: Any) -> None:
    click.echo(
        f"{report.requested} scripts: {report.written} written, {report.reused} already there, "
        f"{report.rejected} rejected ({report.requests} request(s) sent)"
    )
    for reason, n in report.reasons.items():
        click.echo(f"  rejected {n}: {reason}")
    click.echo(f"out: {report.out_dir}")


@click.group("scripts")
def command() -> None:
    """Write two-speaker scripts with an LLM (the PH dialogues' text)."""


@command.command("generate")
@click.option("--topic", "topics", multiple=True, help="Taxonomy topic (repeatable).")
@click.option(
    "--topics-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="File with one topic per line ('#' comments allowed).",
)
@click.option("--per-topic", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--language", default="en", show_default=True, help="en, zh, ...")
@_out_option
@_llm_options
@config_option("Run config YAML (llm, scripts, topics, filters sections).")
def generate(
    topics: tuple[str, ...],
    topics_file: Path | None,
    per_topic: int,
    language: str,
    out_dir: Path,
    llm_base_url: str | None,
    llm_model: str | None,
    config_path: Path | None,
) -> None:
    """Topic-conditioned scripts: 40–50 s of casual speech between A and B per script.

    Without --topic/--topics-file every taxonomy topic (or scripts.topics) is used.
    """
    from duetflow.scriptgen import generate_scripts, read_topics_file

    cfg = _config(config_path, llm_base_url, llm_model)
    wanted = list(topics) + (read_topics_file(topics_file) if topics_file else [])
    _print(generate_scripts(wanted or None, per_topic, language, out_dir, cfg))


@command.command("rewrite")
@click.option(
    "--from",
    "workdir",
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Rendered work directory whose kept HH transcripts are rewritten.",
)
@_out_option
@_llm_options
@config_option("Run config YAML (llm, filters sections).")
def rewrite(
    workdir: Path,
    out_dir: Path,
    llm_base_url: str | None,
    llm_model: str | None,
    config_path: Path | None,
) -> None:
    """Rewrite each kept HH transcript as clean speech: same meaning, turns and speakers."""
    from duetflow.scriptgen import rewrite_scripts

    cfg = _config(config_path, llm_base_url, llm_model)
    _print(rewrite_scripts(workdir, out_dir, cfg))
