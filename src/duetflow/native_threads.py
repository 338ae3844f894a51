"""One compute thread per worker for the native libraries under numpy, scipy and torch.

duetflow parallelises across dialogues and shards (executor workers, Prefect task threads, Dask
workers); the numeric work inside one task is small (filters over seconds of audio, a speaker
encoder's LSTM on a 20–60 s clip). OpenMP, OpenBLAS and MKL default to one thread per core *per
process*, and on a busy or shared machine their idle threads spin: measured on this project's
2-core machine, a plain ``run_pipeline`` of the sample corpora (clone QA on) took 55–77 s of
user CPU with the libraries' default threads and 20–21 s with one (docs/performance.md,
*Native threads*). Dask's nanny sets the same three variables to 1 for its workers by default.

So the ``duetflow`` command and the deployments' work pool (prefect.yaml) start with each of
:data:`THREAD_VARS` set to ``1`` **unless the environment already sets it**: export
``OMP_NUM_THREADS=8`` (etc.) to give one big job more threads. The variables only take effect
when set before the libraries load, which is why the command sets them in its entry point
(:mod:`duetflow.console`) before anything imports numpy; importing :mod:`duetflow` as a library
changes nothing.
"""

from __future__ import annotations

from collections.abc import MutableMapping

#: The thread-count variables of OpenMP (torch, soxr), OpenBLAS (numpy/scipy wheels) and MKL.
THREAD_VARS: tuple[str, ...] = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
#: The default for each, as the environment holds it.
DEFAULT_THREADS = "1"


def default_threads(environ: MutableMapping[str, str]) -> dict[str, str]:
    """Set every unset :data:`THREAD_VARS` in ``environ`` to :data:`DEFAULT_THREADS`; returns
    what it set (a variable already set, even to an empty string, is left as it is)."""
    added = {k: DEFAULT_THREADS for k in THREAD_VARS if k not in environ}
    environ.update(added)
    return added
