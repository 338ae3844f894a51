"""Prefect flows: the stages, the main job and the scheduled deployments.

The work is done by :mod:`duetflow.pipeline` (plain Python); these flows decide where and when
it runs. Entry points referenced by ``prefect.yaml`` live in :mod:`duetflow.flows.deployments`
and :mod:`duetflow.flows.build`.

The names below are imported on first use (PEP 562), so importing one submodule (the CLI needs
only :func:`build_dataset`) does not build every flow object: each costs a parameter schema.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from duetflow.flows.build import BuildSummary as BuildSummary
    from duetflow.flows.build import build_dataset as build_dataset
    from duetflow.flows.deployments import (
        nightly_studio_ingest as nightly_studio_ingest,
    )
    from duetflow.flows.deployments import (
        weekly_release as weekly_release,
    )
    from duetflow.flows.runner import (
        build_task_runner as build_task_runner,
    )
    from duetflow.flows.runner import (
        dask_cluster as dask_cluster,
    )
    from duetflow.flows.runner import (
        resolve_config as resolve_config,
    )
    from duetflow.flows.stages import (
        ingest as ingest,
    )
    from duetflow.flows.stages import (
        process as process,
    )
    from duetflow.flows.stages import (
        publish as publish,
    )
    from duetflow.flows.stages import (
        synthesize as synthesize,
    )

#: public name -> the submodule that defines it
_EXPORTS = {
    "BuildSummary": "build",
    "build_dataset": "build",
    "nightly_studio_ingest": "deployments",
    "weekly_release": "deployments",
    "build_task_runner": "runner",
    "dask_cluster": "runner",
    "resolve_config": "runner",
    "ingest": "stages",
    "process": "stages",
    "publish": "stages",
    "synthesize": "stages",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
