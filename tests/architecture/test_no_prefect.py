"""The library core imports no Prefect: only flows/, tasks/ and cli/ are the Prefect shell."""

from __future__ import annotations

import json
import subprocess
import sys

SHELL = ("duetflow.flows", "duetflow.tasks", "duetflow.cli")

_PROBE = """
import importlib, json, sys
from pathlib import Path
import duetflow
shell = tuple(sys.argv[1:])
root = Path(duetflow.__file__).parent
imported, failed = [], {}
# module names from the files (pkgutil.walk_packages would import the shell packages to
# look inside them)
names = sorted(
    ".".join(("duetflow", *p.relative_to(root).with_suffix("").parts)).removesuffix(".__init__")
    for p in root.rglob("*.py")
)
for name in names:
    if name == "duetflow" or name.startswith(tuple(s + "." for s in shell)) or name in shell:
        continue
    try:
        importlib.import_module(name)
    except ImportError as e:  # an optional extra that is not installed
        failed[name] = f"{type(e).__name__}: {e}"
        continue
    imported.append(name)
prefect = sorted(m for m in sys.modules if m == "prefect" or m.startswith("prefect."))
print(json.dumps({"imported": imported, "failed": failed, "prefect": prefect}))
"""


def test_importing_every_core_module_pulls_in_no_prefect() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, *SHELL], capture_output=True, text=True, check=True
    )
    found = json.loads(out.stdout.strip().splitlines()[-1])
    imported = set(found["imported"])
    # the probe really walked the core: the pipeline, its stages, keys, render, publish, report
    assert {
        "duetflow.pipeline.driver",
        "duetflow.pipeline.stage",
        "duetflow.pipeline.stages",
        "duetflow.pipeline.stages.synth",
        "duetflow.pipeline.keys",
        "duetflow.rendering.render",
        "duetflow.release.publish",
        "duetflow.report",
        "duetflow.corpora.studio",
        "duetflow.tts.synthesize",
    } <= imported
    assert not found["failed"], found["failed"]  # the dev install has every extra
    assert found["prefect"] == []


def test_the_shell_is_where_prefect_lives() -> None:
    probe = "import sys, duetflow.flows.build; print('prefect' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"  # the probe above would see Prefect if it were there
