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

The same entry point chooses **Arrow's allocator** (:data:`ARROW_POOL_VAR`, unless set): the C
library's ``malloc`` (``system``) instead of the mimalloc that pyarrow's wheels default to.
Every stage reads and writes Parquet through Arrow, a few MB at a time, and mimalloc keeps the
pages it freed: measured on the whole job (``bench/job_hour.py``, ingest → process → publish,
one worker), the pool's own accounting never passed 1.4 MB while mimalloc's reserved arena held
13 MB after ingest, 21 MB after process and 34–49 MB at the end at sample scale 16 against
13 MB at scale 1, most of the job's peak-RSS growth with the corpus (docs/performance.md,
*Whole-pipeline memory*). With the system pool that growth is gone. Export
``ARROW_DEFAULT_MEMORY_POOL=mimalloc`` (or ``jemalloc``) to choose otherwise.

And it keeps **glibc malloc's freed buffers for reuse** (:data:`MALLOC_VARS`, unless set): a
rendered window allocates and frees a handful of whole-length float32 buffers (2.9 MB each for
45 s at 16 kHz). Under glibc's own thresholds each was mapped afresh or the heap's top trimmed
back after it, so the next window's buffers page-faulted in again: ~770 faults per window at
~2.9 µs each on this project's machine. With allocations up to 32 MB served from the heap and
up to 64 MB of free heap kept (a 16 kHz window's buffers need ~32), those faults are gone: the
render ~1.1x faster, the same bits; a process's peak RSS up to that much higher
(docs/performance.md, *Round fourteen*). glibc reads these variables once, as a process starts,
so the command applies them to its own process with ``mallopt`` (:func:`tune_malloc`) and its
children inherit them. Export either variable (e.g. ``MALLOC_TRIM_THRESHOLD_=131072``, glibc's
default) to choose otherwise; other C libraries ignore them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping

#: The thread-count variables of OpenMP (torch, soxr), OpenBLAS (numpy/scipy wheels) and MKL.
THREAD_VARS: tuple[str, ...] = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
#: The default for each, as the environment holds it.
DEFAULT_THREADS = "1"


#: Arrow's default-pool variable (read once, as pyarrow loads) and duetflow's choice for it.
ARROW_POOL_VAR = "ARROW_DEFAULT_MEMORY_POOL"
ARROW_POOL = "system"


#: glibc malloc's tunables, as the environment holds them, and duetflow's values: requests up to
#: 32 MB (the ceiling of glibc's own sliding threshold on 64-bit) served from the heap, up to
#: 64 MB of free heap kept before trimming
MALLOC_VARS: dict[str, str] = {
    "MALLOC_MMAP_THRESHOLD_": str(32 << 20),
    "MALLOC_TRIM_THRESHOLD_": str(64 << 20),
}
#: ``mallopt`` parameter numbers (glibc's ``malloc.h``)
_MALLOPT = {"MALLOC_TRIM_THRESHOLD_": -1, "MALLOC_MMAP_THRESHOLD_": -3}


def default_threads(environ: MutableMapping[str, str]) -> dict[str, str]:
    """Set every unset :data:`THREAD_VARS` in ``environ`` to :data:`DEFAULT_THREADS`; returns
    what it set (a variable already set, even to an empty string, is left as it is)."""
    added = {k: DEFAULT_THREADS for k in THREAD_VARS if k not in environ}
    environ.update(added)
    return added


def process_defaults(environ: MutableMapping[str, str]) -> dict[str, str]:
    """The ``duetflow`` command's native defaults in ``environ``: :func:`default_threads`,
    Arrow's allocator (:data:`ARROW_POOL_VAR` = :data:`ARROW_POOL`) and glibc malloc's
    thresholds (:data:`MALLOC_VARS`), each only where unset; returns what it set. Takes effect
    in a process whose environment holds it before the libraries load (the command's entry
    point, a child started with it, the deployments' work pool); the malloc thresholds, in a
    process already running, only through :func:`tune_malloc`."""
    added = default_threads(environ)
    if ARROW_POOL_VAR not in environ:
        environ[ARROW_POOL_VAR] = added[ARROW_POOL_VAR] = ARROW_POOL
    for var, value in MALLOC_VARS.items():
        if var not in environ:
            environ[var] = added[var] = value
    return added


def tune_malloc(environ: Mapping[str, str]) -> dict[str, int]:
    """Apply the :data:`MALLOC_VARS` that ``environ`` holds to this process with glibc's
    ``mallopt`` (glibc reads them only as a process starts, so a process that set them itself
    must); returns what was applied. Nothing is done off glibc, nor for a value that is not a
    whole number in a C ``int``'s range or that glibc refuses."""
    try:
        libc_name = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):
        return {}
    if not libc_name.startswith("glibc"):
        return {}
    import ctypes

    libc = ctypes.CDLL(None)
    applied: dict[str, int] = {}
    for var, param in _MALLOPT.items():
        try:
            value = int(environ.get(var, ""))
        except ValueError:
            continue
        if not 0 <= value < 1 << 31:  # mallopt takes a C int
            continue
        if libc.mallopt(ctypes.c_int(param), ctypes.c_int(value)) == 1:
            applied[var] = value
    return applied
