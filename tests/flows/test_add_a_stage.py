"""Adding a stage is one module: a stage declared in this file alone runs in a plain run, as
Prefect tasks in a flow run, and on its own as a stage flow (with its retry hints honoured),
with nothing registered in ``duetflow.tasks``, ``duetflow.flows`` or the driver.

The stage ("catcount") counts each work directory's kept dialogues by category after matching and
writes ``catcount.json`` into its cache directory, keyed like any stage (its sections, its code:
this module, the tables it reads). Its counts are checked against pyarrow reading the tables.
The same module runs from the command line (``duetflow stage module:ATTR``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from prefect import flow

from duetflow.cli import main
from duetflow.config import RunConfig, load_config
from duetflow.flows.executor import PrefectExecutor
from duetflow.flows.stages import stage_flow
from duetflow.hashing import files_fingerprint
from duetflow.pipeline import driver
from duetflow.pipeline.cache import StepOutcome, build_cached, cache_dir
from duetflow.pipeline.executors import Batch
from duetflow.pipeline.stage import RunState, StageSpec, StepHints, Work
from duetflow.pipeline.stages import BY_NAME, with_stage
from duetflow.pipeline.stages.match import after_match
from duetflow.records import manifest
from duetflow.tasks import task_of
from flow_helpers import write_config

pytestmark = [pytest.mark.prefect, pytest.mark.slow]

#: labels whose next step call fails once with a transient error (the retry hint's instrument)
FLAKY: set[str] = set()
CALLS: Counter[str] = Counter()


# --- the whole stage: what a new stage module holds ------------------------------------------


def run_catcount(workdir: StepOutcome, config: RunConfig) -> StepOutcome:
    """Count one work directory's kept dialogues by category into ``catcount.json`` (cached)."""
    CALLS[workdir.label] += 1
    if workdir.label in FLAKY:
        FLAKY.discard(workdir.label)
        raise OSError(f"transient hiccup reading {workdir.path}")
    table = Path(workdir.path) / manifest.DIALOGUES
    key = STAGE.key(config, files_fingerprint([table]))

    def build(out: Path) -> StepOutcome:
        counts = Counter(manifest.iter_column(table, "category"))
        doc = json.dumps(dict(sorted(counts.items())), sort_keys=True)
        (out / "catcount.json").write_text(doc, encoding="utf-8")
        return StepOutcome("catcount", workdir.label, key, str(out), kept=sum(counts.values()))

    return build_cached(cache_dir(config, "catcount", key), build)


def plan(state: RunState) -> Iterable[Work]:
    yield Work(list(state.workdirs), (state.config,), Batch("catcount"))


def merge(state: RunState, work: Work, done: list[Any]) -> list[StepOutcome]:
    state.steps.extend(done)
    return done


STAGE = StageSpec(
    "catcount",
    ("seed",),
    (__name__,),
    inputs="the (matched) rendered work directories",
    outputs="cache/catcount/<key>/catcount.json per work directory",
    step=run_catcount,
    plan=plan,
    merge=merge,
    resume=after_match,
    hints=StepHints("catcount-workdir", "catcount-{workdir.label}", retries=1),
    flow="catcount",
)

# --- the tests ---------------------------------------------------------------------------------


def _tallies(outcomes: Iterable[StepOutcome]) -> dict[str, bytes]:
    return {o.label: (Path(o.path) / "catcount.json").read_bytes() for o in outcomes}


def _truth(workdirs: Iterable[StepOutcome]) -> dict[str, dict[str, int]]:
    """A second instrument: pyarrow counts the categories of each dialogues table."""
    out = {}
    for w in workdirs:
        col = pq.read_table(Path(w.path) / manifest.DIALOGUES, columns=["category"]).column(0)
        out[w.label] = dict(sorted(Counter(col.to_pylist()).items()))
    return out


def test_a_stage_from_one_module_runs_plain_as_tasks_and_as_its_own_flow(
    tmp_path: Path, flow_samples: Path, prefect_server: dict[str, str]
) -> None:
    # everything the stage is lives in this module; nothing in duetflow names it
    assert {f.__module__ for f in (STAGE.step, STAGE.plan, STAGE.merge)} == {__name__}
    assert "catcount" not in BY_NAME
    src = Path(driver.__file__).resolve().parents[1]
    assert not [p for p in src.rglob("*.py") if "catcount" in p.read_text(encoding="utf-8")]
    stages = with_stage(STAGE, after="match")
    assert [s.name for s in stages][:4] == ["ingest", "process", "match", "catcount"]

    cfg_path = write_config(
        tmp_path / "run.yaml", flow_samples, corpora=("dailytalk", "studio"), scripts=False
    )
    cfg = load_config(cfg_path)

    # 1. the plain executor: the loop runs it after matching, over what matching left
    plain = driver.run_pipeline(cfg, publish=False, stages=stages)
    assert plain.outputs is not None
    tallied = plain.outputs["catcount"]
    assert [t.label for t in tallied] == [w.label for w in plain.merged]
    assert plain.computed("catcount") == len(plain.merged) >= 2
    truth = _truth(plain.merged)
    assert {k: json.loads(v) for k, v in _tallies(tallied).items()} == truth
    assert any(c.get("HM") for c in truth.values()) and any(c.get("HH") for c in truth.values())

    # the generic command: `duetflow stage module:ATTR` runs it on its own, from the work directory
    out = CliRunner().invoke(main, ["stage", f"{__name__}:STAGE", "-c", str(cfg_path)])
    assert out.exit_code == 0, out.output
    n = len(tallied)
    assert f"catcount: {n} steps (0 computed, {n} reused)" in out.output
    assert all(f"  {t.label}: found 0, kept {t.kept}, rejected 0 -> {t.path}" in out.output
               for t in tallied)  # fmt: skip

    # 2. the generic task wrapper: the stage's hints, as data, became the task's options
    task = task_of(STAGE)
    assert (task.name, task.retries, task.task_run_name) == (
        "catcount-workdir", 1, "catcount-{workdir.label}",
    )  # fmt: skip

    # 3. the generic stage flow: on its own, it finds the rendered corpora in the work directory,
    # runs each step as a task and retries a transient failure as its hints say
    first = tallied[0].label
    FLAKY.add(first)
    CALLS.clear()
    alone = stage_flow(STAGE)(config=str(cfg_path))
    assert CALLS[first] == 2 and not FLAKY  # failed once, retried once by Prefect
    assert [s.reused for s in alone.steps] == [True] * len(tallied)
    assert _tallies(alone.output) == _tallies(tallied)

    # 4. the whole loop on the Prefect executor, in a flow, plug-in stage included
    @flow(name="catcount-run")
    def catcount_run() -> driver.PipelineResult:
        return driver.run_pipeline(cfg, executor=PrefectExecutor(), publish=False, stages=stages)

    flowed = catcount_run()
    assert flowed.outputs is not None
    assert _tallies(flowed.outputs["catcount"]) == _tallies(tallied)
    assert flowed.reused("catcount") == len(tallied) and flowed.computed("process") == 0

    # a plain executor does not retry: the same hiccup fails the plain run, naming the file
    FLAKY.add(first)
    with pytest.raises(OSError, match="transient hiccup"):
        driver.run_pipeline(cfg, publish=False, stages=stages)
