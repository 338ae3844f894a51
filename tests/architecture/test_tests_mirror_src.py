"""The tests mirror the source, so a module's tests are found by its path.

``tests/<package>/...`` holds the tests of ``src/duetflow/<package>/...`` (``tests/rendering``,
``tests/corpora/studio``, ``tests/corpora/studio/diarize``); ``tests/`` itself holds the tests of
the top-level modules, each file named for its module (``tests/test_licences.py`` ↔
``duetflow/licences.py``). The only other folders are the cross-cutting ones declared below,
each with its reason. Helpers that more than one folder uses (``release_fixtures``,
``studio_helpers``, ``llm_server``, ...) sit in ``tests/``, which ``tests/conftest.py`` puts on
``sys.path``; a folder's own helpers and fixtures stay in it.

Read from the two trees of this checkout, not from whatever ``duetflow`` is importable.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
SRC = ROOT / "src" / "duetflow"

#: folders of tests about no single package, and why they stay together
CROSS_CUTTING: dict[str, str] = {
    "architecture": "the repository's shape, read from its files: import layering, a pure "
    "audio package, no Prefect in the core, documentation links, this mirror",
    "chaos": "hostile input through the `duetflow` command end to end (config, corpora, studio "
    "deliveries, stores, releases) with one CLI harness; the contract checked is the process's "
    "(exit code, one line naming file and cause, counts that add up), across stages",
}


def misplaced(tests: Path, src: Path, cross_cutting: frozenset[str]) -> list[str]:
    """Python files under ``tests`` whose place mirrors nothing in ``src`` (the package dir).

    A file in a sub-folder needs that folder to be a package of ``src`` (``__init__.py``) or to
    sit in a declared cross-cutting folder; a test file directly in ``tests`` needs a top-level
    module or package of ``src`` that its name starts with (``test_<module>.py``,
    ``test_<module>_<aspect>.py``).
    """
    top = {p.stem for p in src.glob("*.py") if p.stem != "__init__"}
    top |= {p.parent.name for p in src.glob("*/__init__.py")}
    bad: list[str] = []
    for f in sorted(tests.rglob("*.py")):
        rel = f.relative_to(tests)
        folder = rel.parent.parts
        if "__pycache__" in folder:
            continue
        if not folder:
            name = f.stem.removeprefix("test_")
            if f.stem.startswith("test_") and not any(
                name == m or name.startswith(m + "_") for m in top
            ):
                bad.append(rel.as_posix())
        elif folder[0] not in cross_cutting and not src.joinpath(*folder, "__init__.py").is_file():
            bad.append(rel.as_posix())
    return sorted(bad)


def test_every_test_folder_is_a_source_package_or_declared_cross_cutting() -> None:
    assert len(list(TESTS.rglob("test_*.py"))) > 100  # the probe really read the tree
    bad = misplaced(TESTS, SRC, frozenset(CROSS_CUTTING))
    assert bad == [], (
        "move these to tests/<package>/ mirroring src/duetflow/<package>/ (a top-level module's "
        "tests to tests/test_<module>.py), or declare their folder in CROSS_CUTTING with a reason"
    )


def test_each_cross_cutting_folder_exists_and_holds_tests() -> None:
    for name in CROSS_CUTTING:
        assert list((TESTS / name).glob("test_*.py")), name
        assert not (SRC / name).exists(), f"{name} is a source package: mirror it instead"


def test_the_probe_finds_what_mirrors_nothing(tmp_path: Path) -> None:
    """The instrument itself, on a constructed pair of trees with known misplaced files."""
    src, tests = tmp_path / "src", tmp_path / "tests"
    for f in ("__init__.py", "manifest.py", "a/__init__.py", "a/b/__init__.py", "c/data.txt"):
        (src / f).parent.mkdir(parents=True, exist_ok=True)
        (src / f).write_text("", encoding="utf-8")
    placed = [
        "conftest.py",  # helpers and fixtures at the top are fine
        "shared_helpers.py",
        "test_manifest.py",  # a top-level module
        "test_manifest_streaming.py",  # an aspect of it
        "test_a.py",  # a top-level package
        "a/test_x.py",
        "a/conftest.py",
        "a/b/test_y.py",
        "chaos/test_z.py",  # declared cross-cutting
        "chaos/deep/test_w.py",
    ]
    wrong = [
        "test_nothing.py",  # no such module
        "test_manifests.py",  # a prefix of a name is not the name
        "a/nope/test_v.py",  # not a package of src
        "c/test_u.py",  # a folder of src that is no package
        "core/test_t.py",  # a grab bag
        "core/helpers.py",
    ]
    for f in placed + wrong:
        (tests / f).parent.mkdir(parents=True, exist_ok=True)
        (tests / f).write_text("", encoding="utf-8")
    assert misplaced(tests, src, frozenset({"chaos"})) == sorted(wrong)
