"""Prefect tasks: a stage's step function as a task, from its spec (:func:`task_of`).

One function for every stage: the task's name, run name, tags and retries are the stage's
:class:`~duetflow.pipeline.stage.StepHints` (declared as data in its module of
:mod:`duetflow.pipeline.stages`); the Prefect executor (:mod:`duetflow.flows.executor`) submits
through it, leaving off a task run the tags the server holds no concurrency limit for (each
tag on a task run is a slot request to the server).

A task takes a shard (a list of dialogues or script ids) or a whole corpus, never a single
utterance: at ~15 ms of orchestration per task run, per-utterance tasks would cost more than the
work. Caching is the pipeline's own content-addressed cache directories (``cache_policy=NO_CACHE``
here), so a resumed run finds finished shards whether they were computed by threads, by a Dask
worker or by the plain :func:`duetflow.pipeline.driver.run_pipeline`, and a wiped Prefect home
never returns a result whose files are gone.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import State
from prefect.tasks import exponential_backoff

from duetflow.errors import (
    BackendError,
    ConfigError,
    DiskFullError,
    InputError,
    ManifestError,
    WorkdirInUseError,
)
from duetflow.pipeline.stage import IO_TAG, TTS_TAG, StageSpec, StepHints

__all__ = ["DETERMINISTIC", "IO_TAG", "TTS_TAG", "task_of", "transient_only"]

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


@cache
def task_of(spec: StageSpec) -> Any:
    """The Prefect task of ``spec``'s step function, built from its hints (once per spec)."""
    if spec.step is None:
        raise KeyError(f"stage {spec.name!r} has no step function to run as a task")
    hints = spec.hints or StepHints(f"{spec.name}-step")
    delay: Any = hints.delay_s
    if hints.backoff:
        delay = exponential_backoff(backoff_factor=hints.delay_s)
    return task(
        name=hints.task,
        task_run_name=hints.run_name,
        tags=list(hints.tags),
        retries=hints.retries,
        retry_delay_seconds=delay,
        retry_jitter_factor=hints.jitter,
        retry_condition_fn=transient_only,
        cache_policy=NO_CACHE,
    )(spec.step)
