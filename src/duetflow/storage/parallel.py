"""Object transfers on a thread pool with a bounded number of calls in flight.

``ThreadPoolExecutor.map`` and a list of ``submit`` futures both create one future per item up
front: for a release of n objects that is n futures (each with its own condition and lock, a
few hundred bytes) alive at once. :func:`bounded_map` keeps at most ``window`` submitted, so
the memory of a transfer does not grow with the number of objects.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

#: Calls in flight per worker thread: enough to keep every worker busy between refills.
WINDOW_PER_WORKER = 4


def bounded_map(
    fn: Callable[[T], R], items: Iterable[T], workers: int, window: int | None = None
) -> Iterator[R]:
    """``fn`` over ``items`` on ``workers`` threads, results in completion order.

    At most ``window`` calls (default ``WINDOW_PER_WORKER * workers``) are submitted at a time,
    and ``items`` is consumed lazily. The first exception raised by ``fn`` is raised here; the
    calls not started yet are cancelled and the running ones are waited for. Closing the
    iterator early does the same.
    """
    limit = max(1, window if window is not None else WINDOW_PER_WORKER * max(1, workers))
    pending: set[Future[R]] = set()
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        try:
            for item in items:
                pending.add(pool.submit(fn, item))
                if len(pending) >= limit:
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in done:
                        yield fut.result()
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    yield fut.result()
        finally:
            for fut in pending:
                fut.cancel()
