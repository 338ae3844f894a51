"""The layers import downward only, read from every import statement of the source.

``audio`` (pure signal processing) < ``acoustics`` (measurement of a source's tracks: floors,
extents, acoustic turn timing) < ``turntaking`` (analysis, windows, the re-timing arithmetic) <
``rendering`` < ``pipeline`` < the Prefect shell (``flows``, ``tasks``) and the
command line (``cli`` and its entry point ``console``). What each lower layer must never name,
even in a function body or under ``if TYPE_CHECKING:``
(``tests/architecture/test_audio_is_pure.py`` holds audio to stricter rules). Beside that
chain: corpus adapters never reach into the pipeline, a release never into the renderer (what
both sides share, such as the gap tolerance, sits below them in ``audio``), the config names no
domain package, and the foundation (``records``, ``hashing``, ``errors``, ``user_cache``)
imports only itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from import_probe import SRC, duetflow_imports, module_name

SHELL = (
    "duetflow.flows",
    "duetflow.tasks",
    "duetflow.cli",
    "duetflow.console",
    "duetflow.__main__",
)
#: package → the packages above it that it must not import
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "duetflow.audio": (
        "duetflow.acoustics",
        "duetflow.turntaking",
        "duetflow.rendering",
        "duetflow.pipeline",
        *SHELL,
    ),
    "duetflow.acoustics": (
        "duetflow.turntaking",
        "duetflow.rendering",
        "duetflow.pipeline",
        *SHELL,
    ),
    "duetflow.turntaking": ("duetflow.rendering", "duetflow.pipeline", *SHELL),
    "duetflow.rendering": ("duetflow.pipeline", *SHELL),
    "duetflow.corpora": ("duetflow.pipeline", "duetflow.rendering", *SHELL),
    "duetflow.release": ("duetflow.rendering", "duetflow.pipeline", "duetflow.report", *SHELL),
}
#: the foundation: what every layer may import; it imports nothing but itself
FOUNDATION = ("duetflow.errors", "duetflow.records", "duetflow.hashing", "duetflow.user_cache")
#: what the run config may import: the foundation and the leaf modules of plain data it checks
#: values against (licence ids, the topic taxonomy, bounded YAML loading, language tags)
CONFIG_MAY_IMPORT = (
    *FOUNDATION,
    "duetflow.config",
    "duetflow.licences",
    "duetflow.topics",
    "duetflow.bounded_yaml",
    "duetflow.langtag",
)


def _under(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def _files(package: str) -> list[Path]:
    return sorted((SRC / package.removeprefix("duetflow.").replace(".", "/")).rglob("*.py"))


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_a_layer_imports_nothing_above_it(package: str) -> None:
    files = _files(package)
    assert len(files) >= 5  # the probe really read the package
    bad = {
        module_name(f): sorted(m for m in duetflow_imports(f) if _under(m, FORBIDDEN[package]))
        for f in files
    }
    assert {k: v for k, v in bad.items() if v} == {}


def test_the_config_imports_no_domain_package() -> None:
    files = _files("duetflow.config")
    assert len(files) >= 5
    bad = {
        module_name(f): sorted(m for m in duetflow_imports(f) if not _under(m, CONFIG_MAY_IMPORT))
        for f in files
    }
    assert {k: v for k, v in bad.items() if v} == {}


def test_the_foundation_imports_only_itself() -> None:
    files = [f for p in FOUNDATION for f in (_files(p) or [SRC / f"{p.split('.')[1]}.py"])]
    assert len(files) >= 7 and all(f.is_file() for f in files)
    bad = {
        module_name(f): sorted(m for m in duetflow_imports(f) if not _under(m, FOUNDATION))
        for f in files
    }
    assert {k: v for k, v in bad.items() if v} == {}


def test_the_core_never_imports_the_shell() -> None:
    core = [f for f in SRC.rglob("*.py") if not _under(module_name(f), SHELL)]
    assert len(core) > 100
    bad = {module_name(f): sorted(m for m in duetflow_imports(f) if _under(m, SHELL)) for f in core}
    assert {k: v for k, v in bad.items() if v} == {}


def test_the_probe_sees_an_upward_import_in_a_function(tmp_path: Path) -> None:
    """The instrument itself: a lazy upward import and a relative one are seen."""
    sample = tmp_path / "late.py"
    sample.write_text(
        "def f():\n    from duetflow.rendering.render import render_dialogue\n"
        "from ..pipeline import steps\n",
        encoding="utf-8",
    )
    found = duetflow_imports(sample, "duetflow.turntaking")
    assert _under("duetflow.rendering.render", FORBIDDEN["duetflow.turntaking"])
    assert {"duetflow.rendering.render", "duetflow.pipeline"} <= found
