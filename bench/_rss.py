"""A bench child's own peak RSS: ``VmHWM`` of ``/proc/self/status``, not ``ru_maxrss``.

Linux carries a parent's high-water mark into a child started with ``subprocess`` (vfork +
exec: the child's ``ru_maxrss`` starts at the parent's peak), so a child's ``ru_maxrss`` is at
least the peak of the bench parent that made its inputs (the sample corpora, a work directory),
which grows with the scale. ``VmHWM`` is the high-water mark of the child's own address space.
"""

from __future__ import annotations

import resource


def peak_rss_mb() -> float:
    """This process's own resident high-water mark in MB (``ru_maxrss`` where no ``/proc``)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
