"""The scripts stage: two-speaker scripts from an OpenAI-compatible LLM, for synthesis.

The work is :mod:`duetflow.scriptgen` (the stage's entry module): ``scripts.per_topic`` scripts
generated per topic and language, the kept HH transcripts rewritten. Resumable by construction
(each script is a file; only missing ones are requested), so it has no cache key of its own.
Runs only when an LLM is configured and synthesis runs.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from duetflow.config import RunConfig
from duetflow.pipeline.executors import Batch
from duetflow.pipeline.stage import IO_TAG, RunState, StageSpec, StepHints, Work
from duetflow.pipeline.stages.match import after_match

log = logging.getLogger(__name__)


def scripts_wanted(config: RunConfig) -> bool:
    """An LLM is configured and something is to be written with it."""
    sc = config.scripts
    return config.llm.configured and (sc.per_topic > 0 or sc.rewrite_hh)


def script_dirs(config: RunConfig) -> list[Path]:
    """Folders the LLM script step writes (``<workdir>/scripts/generated``, ``.../rewritten``)."""
    root = Path(config.workdir) / "scripts"
    return [root / "generated", root / "rewritten"]


def run_scripts(hh_dirs: Sequence[str | Path], config: RunConfig) -> tuple[list[Path], list[Any]]:
    """Generate (``scripts.per_topic`` per topic and language) and rewrite (kept HH) scripts.

    Resumable by construction: each script is a file, and only missing ones are requested.
    Returns the folders to synthesize from and the rejections to carry into the PH tables.
    """
    from duetflow.scriptgen import generate_scripts, rewrite_scripts

    config = STAGE.scoped(config)
    generated, rewritten = script_dirs(config)
    rejections: list[Any] = []
    sc = config.scripts
    if sc.per_topic > 0:
        for lang in sc.languages:
            rep = generate_scripts(sc.topics, sc.per_topic, lang, generated / lang, config)
            rejections.extend(rep.rejections)
    if sc.rewrite_hh:
        for d in hh_dirs:
            rep = rewrite_scripts(d, rewritten / Path(d).name, config)
            rejections.extend(rep.rejections)
    return [generated, rewritten], rejections


def voice_dirs(state: RunState) -> list[str]:
    """The (matched) rendered work directories whose kept dialogues lend voices and HH text."""
    return [m.path for m in state.workdirs if m.stage != "synth"]


def wanted(state: RunState) -> bool:
    from duetflow.pipeline.stages.synth import synth_wanted

    return synth_wanted(state.config) and scripts_wanted(state.config)


def plan(state: RunState) -> Iterable[Work]:
    yield Work([voice_dirs(state)], (state.config,), Batch("scripts"))


def merge(state: RunState, work: Work, done: list[Any]) -> list[Any]:
    llm_dirs, rejected = done[0]
    log.info("LLM scripts in %s (%d rejected)", [str(d) for d in llm_dirs], len(rejected))
    return [done[0]]


STAGE = StageSpec(
    "scripts",
    ("seed", "llm", "scripts", "filters", "topics"),
    ("duetflow.scriptgen",),
    inputs="topics, kept HH transcripts, an LLM endpoint",
    outputs="scripts/{generated,rewritten} (one file per script) + rejections",
    step=run_scripts,
    plan=plan,
    merge=merge,
    wanted=wanted,
    resume=after_match,
    hints=StepHints(
        "write-scripts", tags=(IO_TAG,), retries=1, delay_s=5, backoff=True, in_caller=True
    ),
)
