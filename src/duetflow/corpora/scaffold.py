"""``duetflow corpora new NAME``: the three files a new corpus needs, ready to fill in.

The generated adapter already works for a simple layout (one folder per dialogue holding a
``turns.tsv`` and an ``audio.wav``), and the generated sample generator writes exactly that
layout, so the generated test passes before anything is edited. Two layouts are offered:
``mono`` (both speakers mixed in one channel) and ``stereo`` (one channel per speaker, as in
telephone corpora such as Fisher or Switchboard: the transcript names the side, the energy of
each side's turns confirms the channel). A data engineer then changes
the parsing (marked ``TODO``) to the real corpus layout, the generator to mimic it, and the
test to assert the corpus's quirks. docs/adding-a-corpus.md walks through it. The generated
files' text is in :mod:`duetflow.corpora.scaffold_templates` (mono, stereo, the test) and
:mod:`duetflow.corpora.scaffold_formats` (the annotated layouts).
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass
from pathlib import Path

from duetflow.corpora.scaffold_formats import (
    ANNOTATED_ADAPTER_TEMPLATE,
    ANNOTATED_SAMPLES_TEMPLATE,
    FORMAT_LAYOUTS,
)
from duetflow.corpora.scaffold_formats import fill as fill_format
from duetflow.corpora.scaffold_templates import (
    ADAPTER_TEMPLATE,
    SAMPLES_TEMPLATE,
    STEREO_ADAPTER_TEMPLATE,
    STEREO_SAMPLES_TEMPLATE,
    TEST_TEMPLATE,
)
from duetflow.errors import ConfigError

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


#: Layouts the scaffold can start from (``duetflow corpora new NAME --layout ...``) and the
#: AudioSource kind each one's adapter yields (checked by the generated test). ``textgrid``,
#: ``eaf`` and ``rttm`` read a recording + an annotation file per dialogue through
#: :mod:`duetflow.corpora.formats` (templates in :mod:`duetflow.corpora.scaffold_formats`).
LAYOUT_SOURCE = {
    "mono": "mixed_mono",
    "stereo": "multichannel",
    "textgrid": "multichannel",
    "eaf": "multichannel",
    "rttm": "multichannel",
}
LAYOUTS = tuple(LAYOUT_SOURCE)


@dataclass(frozen=True)
class Scaffold:
    """What :func:`scaffold` wrote and the entry points to register."""

    adapter: Path
    samples: Path
    test: Path
    entry_point: str  # [project.entry-points."duetflow.corpora"]
    samples_entry_point: str  # [project.entry-points."duetflow.samples"]


def class_name(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("_")) + "Adapter"


def check_name(name: str) -> None:
    if not _NAME.match(name) or keyword.iskeyword(name):
        raise ConfigError(
            f"corpus name {name!r} must be a lowercase Python identifier (letters, digits, _)"
        )


def render(
    name: str, adapter_module: str, samples_module: str, layout: str = "mono"
) -> dict[str, str]:
    """Source text of the adapter, sample generator and test for corpus ``name``."""
    check_name(name)
    if layout not in LAYOUT_SOURCE:
        raise ConfigError(f"unknown layout {layout!r}; choose one of {', '.join(LAYOUTS)}")
    cls = class_name(name)
    subst = {
        "__NAME__": name,
        "__CLASS__": cls,
        "__ADAPTER_MODULE__": adapter_module,
        "__SAMPLES_MODULE__": samples_module,
        "__SOURCE_KIND__": LAYOUT_SOURCE[layout],
    }

    def fill(text: str) -> str:
        for k, v in subst.items():
            text = text.replace(k, v)
        return text

    if layout in FORMAT_LAYOUTS:
        return {
            "adapter": fill(fill_format(ANNOTATED_ADAPTER_TEMPLATE, layout)),
            "samples": fill(fill_format(ANNOTATED_SAMPLES_TEMPLATE, layout)),
            "test": fill(TEST_TEMPLATE),
        }
    stereo = layout == "stereo"
    return {
        "adapter": fill(STEREO_ADAPTER_TEMPLATE if stereo else ADAPTER_TEMPLATE),
        "samples": fill(STEREO_SAMPLES_TEMPLATE if stereo else SAMPLES_TEMPLATE),
        "test": fill(TEST_TEMPLATE),
    }


def scaffold(name: str, project: Path, *, force: bool = False, layout: str = "mono") -> Scaffold:
    """Write the adapter, sample generator and test of corpus ``name`` under ``project``.

    ``project`` is a source tree with ``src/duetflow`` and ``tests`` (this repository or a
    checkout of it); :func:`duetflow.corpora.scaffold_package.scaffold_package` writes a
    separate plug-in package instead. Existing files are never overwritten unless ``force``.
    ``layout`` is one of :data:`LAYOUTS` (``mono``: one mixed channel; ``stereo``: one channel
    per speaker; ``textgrid``/``eaf``/``rttm``: a recording + an annotation file).
    """
    check_name(name)
    adapter_module = f"duetflow.corpora.{name}"
    samples_module = f"duetflow.demo.{name}"
    files = render(name, adapter_module, samples_module, layout)
    out = Scaffold(
        adapter=project / "src" / "duetflow" / "corpora" / f"{name}.py",
        samples=project / "src" / "duetflow" / "demo" / f"{name}.py",
        test=project / "tests" / "corpora" / f"test_{name}.py",
        entry_point=f'{name} = "{adapter_module}:{class_name(name)}"',
        samples_entry_point=f'{name} = "{samples_module}"',
    )
    targets = {"adapter": out.adapter, "samples": out.samples, "test": out.test}
    existing = [str(p) for p in targets.values() if p.exists()]
    if existing and not force:
        raise ConfigError(f"refusing to overwrite {existing} (use --force)")
    for key, path in targets.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(files[key], encoding="utf-8")
    return out
