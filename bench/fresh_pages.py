"""What this machine charges for a file written into fresh memory: the render bench's instrument.

One command: ``.venv/bin/python bench/fresh_pages.py`` (``--files N``, ``--size BYTES``,
``--rounds N``).

The render writes each window as a FLAC file of ~0.7 MB. On bare metal the kernel puts those
bytes into page-cache pages for well under a millisecond. This machine is a nested virtual
machine whose kernel reports free memory to its host (``Free page reporting enabled``,
``page_reporting_order=11`` on its command line: free blocks of 8 MB are handed back), so a
page the kernel takes from a block the host reclaimed costs a fault in the host before the
write can fill it. How much memory was reclaimed moves with what ran before and when: the same
render read 8-12 ms of system CPU a window in one run and ~1 ms in another (docs/performance.md,
*Round eighteen*).

In one process, round after round, interleaved, each way writing ``--files`` files of
``--size`` random bytes (the render's write: ``open``, ``write``, ``close``):

* **kept**: every file into a new folder, kept: the page cache grows by each file, taking fresh
  pages, as a render that keeps its outputs does (the render bench did, before round eighteen);
* **replaced**: each file removed before the next is written, off the clock: the next takes the
  pages just freed (what ``bench/render.py``'s harness now does between windows).

Printed: the least and the median system and user CPU per file each way, and the ratio of the
system CPU (kept over replaced). Last line: ``fresh_pages: kept <k> ms sys a file, replaced
<r> ms (<x>x; <n> files of <s> MB, rounds <m>); load <1-minute load average>``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import tempfile
from pathlib import Path


def _cpu() -> tuple[float, float]:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_stime, r.ru_utime


def _write(folder: Path, data: bytes, files: int, replace: bool) -> tuple[float, float]:
    """System and user CPU seconds of writing ``files`` files of ``data`` into ``folder``;
    with ``replace``, each file is removed (off the clock) before the next is written."""
    sys_s = user_s = 0.0
    for i in range(files):
        path = folder / f"w{i:04d}.flac"
        s0, u0 = _cpu()
        with open(path, "wb") as f:
            f.write(data)
        s1, u1 = _cpu()
        sys_s += s1 - s0
        user_s += u1 - u0
        if replace:
            path.unlink()
    return sys_s, user_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=48, help="files per round and way")
    ap.add_argument("--size", type=int, default=700_000, help="bytes per file (a window's FLAC)")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    data = os.urandom(args.size)
    per: dict[str, list[tuple[float, float]]] = {"kept": [], "replaced": []}
    with tempfile.TemporaryDirectory(prefix="duetflow-pages-") as tmp:
        for k in range(args.rounds):
            for way in per:
                folder = Path(tmp) / f"{way}-{k}"
                folder.mkdir()
                s, u = _write(folder, data, args.files, replace=way == "replaced")
                per[way].append((s / args.files * 1e3, u / args.files * 1e3))
    print(f"{args.files} files of {args.size / 1e6:.2f} MB a round, {args.rounds} rounds")
    print(f"{'way':<10}{'sys ms/file least':>19}{'median':>9}{'user ms/file median':>21}")
    med = {}
    for way, rows in per.items():
        sys_ms = [s for s, _ in rows]
        med[way] = statistics.median(sys_ms)
        user = statistics.median(u for _, u in rows)
        print(f"{way:<10}{min(sys_ms):>19.3f}{med[way]:>9.3f}{user:>21.3f}")
    ratio = med["kept"] / med["replaced"] if med["replaced"] > 0 else float("inf")
    print(
        f"fresh_pages: kept {med['kept']:.2f} ms sys a file, replaced {med['replaced']:.2f} ms "
        f"({ratio:.1f}x; {args.files} files of {args.size / 1e6:.2f} MB, rounds {args.rounds}); "
        f"load {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
