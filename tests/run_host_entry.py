"""What a test run host's children run instead of the ``duetflow`` command line
(``python -m duetflow.flows.run_host --entry run_host_entry:entry``): small commands that show
what the child was given. ``argv[0]`` is ``run`` (the command a host serves)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def entry(argv: list[str]) -> int:
    what, *rest = argv[1:]
    if what == "show":  # what the child took from its caller, then an exit code of its choice
        from duetflow.flows import run_host

        shown = {
            "cwd": os.getcwd(), "env": os.environ.get("RUN_HOST_TEST", ""), "argv": sys.argv,
            "pid": os.getpid(), "ppid": os.getppid(), "sid": os.getsid(0),
            "umask": _umask(), "stdin": sys.stdin.read(),
            "again": run_host.hand_off("run", ["run", "show"], Path(rest[1])),
        }  # fmt: skip
        print(json.dumps(shown))
        print("to stderr", file=sys.stderr)
        return int(rest[0])
    if what == "wait":  # say so (whole: the mark appears with the pid in it), then wait
        mark = Path(rest[0])
        part = mark.with_name(mark.name + ".part")
        part.write_text(str(os.getpid()))
        os.replace(part, mark)
        try:
            time.sleep(120)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            return 130
        return 0
    return 64


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
