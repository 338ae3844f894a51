"""Prefect tasks: thin wrappers that run one :mod:`duetflow.pipeline` step on one shard.

:func:`task_for` maps a step function to its task; the Prefect executor
(:mod:`duetflow.flows.executor`) submits through it.

A task takes a shard (a list of dialogues or script ids) or a whole corpus, never a single
utterance: at ~15 ms of orchestration per task run, per-utterance tasks would cost more than the
work. Caching is the pipeline's own content-addressed cache directories (``cache_policy=NO_CACHE``
here), so a resumed run finds finished shards whether they were computed by threads, by a Dask
worker or by the plain :func:`duetflow.pipeline.run.run_pipeline`, and a wiped Prefect home never
returns a result whose files are gone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import State
from prefect.tasks import exponential_backoff

from duetflow.config import RunConfig
from duetflow.errors import (
    BackendError,
    ConfigError,
    DiskFullError,
    InputError,
    ManifestError,
    WorkdirInUseError,
)
from duetflow.pipeline import publishing, steps
from duetflow.pipeline.cache import StepOutcome
from duetflow.pipeline.publishing import ReleaseSummary
from duetflow.pipeline.steps import CorpusJob, ProcessShard, SynthShard

if TYPE_CHECKING:  # the voice pool pulls in the audio stack; a cached run never needs it
    from duetflow.tts.voices import VoicePool

#: tag of synthesis tasks; ``duetflow deploy`` creates a tag concurrency limit (1 per GPU)
TTS_TAG = "duetflow-tts"
#: tag of tasks that read or write storage (retried with backoff)
IO_TAG = "duetflow-io"

#: failures a retry cannot fix: the same input and config fail the same way again (a full disk
#: stays full, another run keeps its work directory, until a person acts)
DETERMINISTIC = (
    ManifestError, ConfigError, InputError, BackendError, DiskFullError, WorkdirInUseError
)  # fmt: skip


def transient_only(task: Any, task_run: Any, state: State[Any]) -> bool:
    """Retry storage and file-system hiccups, never a failed validation or a bad config."""
    exc: Any = state.data
    if not isinstance(exc, BaseException):
        try:
            exc = state.result(raise_on_failure=False)
        except Exception:  # an unreadable result: let the retry decide
            return True
    return not isinstance(exc, DETERMINISTIC)


@task(
    name="ingest-corpus",
    task_run_name="ingest-{job.label}",
    tags=[IO_TAG],
    retries=2,
    retry_delay_seconds=exponential_backoff(backoff_factor=2),
    retry_jitter_factor=0.5,
    retry_condition_fn=transient_only,
    cache_policy=NO_CACHE,
)
def ingest_corpus(job: CorpusJob, config: RunConfig) -> StepOutcome:
    """Ingest one corpus root into intake tables (reused when its files did not change)."""
    return steps.run_ingest(job, config)


@task(
    name="process-shard",
    task_run_name="process-{shard.label}-{shard.index}",
    retries=1,
    retry_delay_seconds=1,
    retry_condition_fn=transient_only,
    cache_policy=NO_CACHE,
)
def process_shard(shard: ProcessShard, config: RunConfig) -> StepOutcome:
    """Window, filter and render one shard of dialogues (reused when already rendered)."""
    return steps.run_process_shard(shard, config)


@task(
    name="synthesize-shard",
    task_run_name="synthesize-{shard.index}",
    tags=[TTS_TAG],
    retries=1,
    retry_delay_seconds=exponential_backoff(backoff_factor=5),
    retry_condition_fn=transient_only,
    cache_policy=NO_CACHE,
)
def synthesize_shard(shard: SynthShard, pool: VoicePool, config: RunConfig) -> StepOutcome:
    """Synthesize one shard of scripts (reused when already synthesized)."""
    return steps.run_synth_shard(shard, pool, config)


@task(
    name="publish-release",
    tags=[IO_TAG],
    retries=3,
    retry_delay_seconds=exponential_backoff(backoff_factor=5),
    retry_jitter_factor=0.5,
    retry_condition_fn=transient_only,
    cache_policy=NO_CACHE,
)
def publish_release(
    workdirs: Sequence[str], config: RunConfig, release_id: str | None = None
) -> ReleaseSummary:
    """Validate, split, draw the report and upload; idempotent, so a retry is safe.

    Timeouts live in the store clients (a thread cannot be interrupted by ``timeout_seconds``).
    """
    return publishing.run_publish(workdirs, config, release_id)


@task(name="match-hh-hm", retries=0, cache_policy=NO_CACHE)
def match_dialogues(merged: Sequence[StepOutcome], config: RunConfig) -> list[StepOutcome]:
    """HH ↔ HM matching: the work directories later steps read (``turntaking.matching``)."""
    return steps.run_match(merged, config)


@task(
    name="write-scripts",
    tags=[IO_TAG],
    retries=1,
    retry_delay_seconds=exponential_backoff(backoff_factor=5),
    retry_condition_fn=transient_only,
    cache_policy=NO_CACHE,
)
def write_scripts(config: RunConfig, hh_dirs: Sequence[str]) -> tuple[list[Path], list[Any]]:
    """LLM scripts: generated per topic, rewritten from kept HH (only missing ones are asked)."""
    return steps.run_scripts(config, hh_dirs)


#: the task that runs each step function of :mod:`duetflow.pipeline`
TASKS: Mapping[Callable[..., Any], Any] = {
    steps.run_ingest: ingest_corpus,
    steps.run_process_shard: process_shard,
    steps.run_synth_shard: synthesize_shard,
    steps.run_match: match_dialogues,
    steps.run_scripts: write_scripts,
    publishing.run_publish: publish_release,
}


def task_for(fn: Callable[..., Any]) -> Any:
    """The Prefect task of step function ``fn`` (KeyError naming it when it has none)."""
    try:
        return TASKS[fn]
    except KeyError:
        raise KeyError(f"no Prefect task for step {fn.__module__}.{fn.__qualname__}") from None
