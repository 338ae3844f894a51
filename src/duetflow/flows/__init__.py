"""Prefect flows: the stages, the main job and the scheduled deployments.

The work is done by :mod:`duetflow.pipeline` (plain Python); these flows decide where and when
it runs. Entry points referenced by ``prefect.yaml`` live in :mod:`duetflow.flows.deployments`
and :mod:`duetflow.flows.build`.
"""

from __future__ import annotations

from duetflow.flows.build import BuildSummary, build_dataset
from duetflow.flows.deployments import nightly_studio_ingest, weekly_release
from duetflow.flows.runner import build_task_runner, dask_cluster, resolve_config
from duetflow.flows.stages import ingest, process, publish, synthesize

__all__ = [
    "BuildSummary",
    "build_dataset",
    "build_task_runner",
    "dask_cluster",
    "ingest",
    "nightly_studio_ingest",
    "process",
    "publish",
    "resolve_config",
    "synthesize",
    "weekly_release",
]
