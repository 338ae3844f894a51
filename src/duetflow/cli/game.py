"""``duetflow game export|score``: a blinded Turing-test game of a release, and its score."""

from __future__ import annotations

from pathlib import Path

import click

from duetflow.cli.options import config_option, release_option, seed_option, store_option
from duetflow.config import load_config


@click.group("game")
def command() -> None:
    """Turing-test games: blinded packets of a release, the score of the judges, AI-judge pairs."""


def _edges(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise click.BadParameter(f"{text!r}: give seconds separated by commas") from None


@command.command("export")
@release_option("Release id or 'latest'.", default="latest")
@store_option()
@click.option("--language", required=True, help="Language of the dialogues played (e.g. en).")
@click.option("--rounds", required=True, type=click.IntRange(1, 10_000), help="Rounds to write.")
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder: packet/ for the judges, answer_key.csv and game.json beside it.",
)
@click.option(
    "--split",
    type=click.Choice(["train", "val", "test", "all"]),
    default="test",
    show_default=True,
    help="Which split's dialogues are played.",
)
@click.option("--per-round", default=5, show_default=True, type=click.IntRange(1, 100))
@click.option(
    "--sample-rate", default=16000, show_default=True, type=int, help="One rate for every file."
)
@click.option(
    "--length-step",
    default=1.0,
    show_default=True,
    type=float,
    help="Files are padded with silence to a multiple of this many seconds.",
)
@click.option(
    "--bins",
    default="30,40,50",
    show_default=True,
    help="Duration bin edges in seconds (the rounds are balanced over the bins).",
)
@seed_option("Secret of the opaque file names (default: the config's seed); keep it with the key.")
@config_option("Run config YAML (release section: store settings; seed).")
def export_command(
    release: str,
    store: str | None,
    language: str,
    rounds: int,
    out: Path,
    split: str,
    per_round: int,
    sample_rate: int,
    length_step: float,
    bins: str,
    seed: int | None,
    config_path: Path | None,
) -> None:
    """Write blinded rounds of dialogues (balanced by category and duration bin) and the key."""
    from duetflow.game.packets import export_game

    cfg = load_config(config_path)
    res = export_game(
        store or cfg.release.store,
        release,
        language,
        rounds,
        out,
        seed=cfg.seed if seed is None else seed,
        split=split,
        sample_rate=sample_rate,
        length_step=length_step,
        edges=_edges(bins),
        per_round=per_round,
        config=cfg,
    )
    click.echo(
        f"{res.release_id}: {res.rounds} round(s), {res.items} dialogue(s) of {res.candidates} "
        f"candidate(s) in {res.packet}; answer key (keep it from the judges): {res.answer_key}"
    )


@command.command("score")
@click.option(
    "--answers",
    required=True,
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="answer_key.csv of the game.",
)
@click.option(
    "--judgments",
    required=True,
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="CSV: round, item, judged_human (yes/no) [, judge, confidence].",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Also write score.md, score.json, index.html and plots/ here.",
)
def score_command(answers: Path, judgments: Path, out: Path | None) -> None:
    """Rate judged human per category, system, language and duration bin (Wilson 95 % CI),
    and judge accuracy."""
    from duetflow.game.score import score_game
    from duetflow.game.scoresheet import score_markdown, write_scoresheet

    score = score_game(answers, judgments)
    click.echo(score_markdown(score), nl=False)
    if out is not None:
        write_scoresheet(score, out)
        click.echo(f"report: {out / 'index.html'}")


@command.command("judge-data")
@release_option("Release id or 'latest'.", default="latest")
@store_option()
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder: judge.jsonl, pairs.csv, audio/, summary.json.",
)
@click.option(
    "--split",
    type=click.Choice(["train", "val", "test", "all"]),
    default="train",
    show_default=True,
    help="Which split's HH and HM dialogues are paired.",
)
@click.option("--language", default=None, help="Only this language (default: every language).")
@seed_option("Seed of the pairing order (default: the config's seed).")
@config_option("Run config YAML (release section: store settings; seed).")
def judge_data_command(
    release: str,
    store: str | None,
    out: Path,
    split: str,
    language: str | None,
    seed: int | None,
    config_path: Path | None,
) -> None:
    """Write HH/HM pairs 1:1 with speaker B's (the responder's) turns marked, to train or test
    an AI judge."""
    from duetflow.game.judge_data import export_judge_pairs

    cfg = load_config(config_path)
    res = export_judge_pairs(
        store or cfg.release.store,
        release,
        out,
        split=split,
        seed=cfg.seed if seed is None else seed,
        language=language,
        config=cfg,
    )
    click.echo(
        f"{res.release_id}/{split}: {res.pairs} HH/HM pair(s) in {res.out / 'judge.jsonl'} "
        f"(unpaired: {res.unpaired_hh} HH, {res.unpaired_hm} HM)"
    )
