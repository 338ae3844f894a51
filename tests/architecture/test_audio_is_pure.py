"""``duetflow.audio`` is pure signal processing: no run configuration, no data model.

Read from the source (every import statement of every ``audio/*.py``, including those under
``if TYPE_CHECKING:``), not from what happens to be imported at run time. Configuration-aware
steps (re-timing in :mod:`duetflow.turntaking.retime`, the renderer's floors and room tone in
:mod:`duetflow.rendering`) pass plain parameters down.
"""

from __future__ import annotations

from pathlib import Path

from import_probe import duetflow_imports as _duetflow_imports

import duetflow.audio

AUDIO = Path(duetflow.audio.__file__).parent
#: the only duetflow modules outside the package that audio code may import (a leaf: exceptions)
ALLOWED = {"duetflow.errors"}


def _outside_audio(module: str) -> bool:
    inside = module == "duetflow.audio" or module.startswith("duetflow.audio.")
    return not inside and module not in ALLOWED


def test_audio_modules_import_neither_config_nor_model() -> None:
    files = sorted(AUDIO.glob("*.py"))
    assert len(files) >= 10  # the probe really read the package
    offending = {f.name: sorted(filter(_outside_audio, _duetflow_imports(f))) for f in files}
    assert {name: bad for name, bad in offending.items() if bad} == {}


def test_the_probe_sees_a_config_import(tmp_path: Path) -> None:
    """The instrument itself: the import forms it must catch are caught."""
    sample = tmp_path / "bad.py"
    sample.write_text(
        "from typing import TYPE_CHECKING\n"
        "from duetflow.records.dialogue import Turn\n"
        "if TYPE_CHECKING:\n"
        "    from duetflow.config import RenderConfig\n"
        "def f():\n"
        "    import duetflow.records.manifest\n"
        "from . import io\n",
        encoding="utf-8",
    )
    assert _duetflow_imports(sample, "duetflow.audio") >= {
        "duetflow.records.dialogue", "duetflow.config",
        "duetflow.records.manifest", "duetflow.audio",
    }  # fmt: skip
