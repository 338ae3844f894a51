"""The import graph kept between runs (duetflow.hashing.ImportGraphCache).

The instrument is the parser itself: a closure built through a warm cache must equal the one
parsed from every source, with the parser made to fail so a hit cannot hide behind a parse;
an edited source must be parsed afresh; a broken or unwritable file must cost nothing but time.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from duetflow import hashing
from duetflow.pipeline import stages
from duetflow.user_cache import CACHE_DIR_ENV, user_cache_dir

ENTRIES = tuple(sorted({*stages.PROCESS.entries, *stages.INGEST.entries}))


@pytest.fixture
def cache_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh process-wide cache in ``tmp_path`` (as a new run with that folder would see)."""
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    hashing.import_graph_cache.cache_clear()
    hashing.clear_code_hashes()
    yield tmp_path / "cache" / hashing.IMPORT_GRAPH_FILE
    hashing.import_graph_cache.cache_clear()
    hashing.clear_code_hashes()


def _new_process() -> None:
    """Forget everything a process keeps in memory (the file stays)."""
    hashing.import_graph_cache.cache_clear()
    hashing.clear_code_hashes()


def _parsed_closure(entries: tuple[str, ...]) -> dict[str, Path]:
    """The closure with no cache file at all (every source parsed)."""
    hashing.import_graph_cache.cache_clear()
    hashing.clear_code_hashes()
    cold = hashing.ImportGraphCache(None)
    real = hashing.import_graph_cache
    try:
        hashing.import_graph_cache = lambda: cold  # type: ignore[assignment]
        return hashing.import_closure(entries)
    finally:
        hashing.import_graph_cache = real  # type: ignore[assignment]
        hashing.clear_code_hashes()


def test_the_user_cache_folder_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, "/somewhere/else")
    assert user_cache_dir() == Path("/somewhere/else")
    monkeypatch.delenv(CACHE_DIR_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", "/xdg")
    assert user_cache_dir() == Path("/xdg/duetflow")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert user_cache_dir() == Path.home() / ".cache" / "duetflow"
    monkeypatch.setenv(CACHE_DIR_ENV, "~/pulled")
    assert user_cache_dir() == Path.home() / "pulled"
    # one folder for every cache: pulled releases go there by default too
    from duetflow.release.pull import default_cache_dir

    assert default_cache_dir() == user_cache_dir()


def test_a_warm_cache_gives_the_parsed_closure_without_parsing(
    cache_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    truth = _parsed_closure(ENTRIES)
    first = hashing.code_hash(ENTRIES)  # parses, writes the file
    assert cache_file.is_file()
    written = json.loads(cache_file.read_text())["entries"]
    assert len(written) == len(hashing.import_closure(ENTRIES))

    _new_process()

    def no_parse(*args: object) -> None:
        raise AssertionError("parsed although the cache holds this source")

    monkeypatch.setattr(hashing, "import_candidates", no_parse)
    stamp = cache_file.stat().st_mtime_ns
    assert hashing.code_hash(ENTRIES) == first
    assert hashing.import_closure(ENTRIES) == truth
    assert cache_file.stat().st_mtime_ns == stamp  # nothing new: not written again


def test_an_edited_source_is_parsed_afresh(
    cache_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hashing.code_hash(ENTRIES)
    _new_process()
    target = hashing.module_file("duetflow.rendering.gaps")
    real = hashing.read_source

    def read(path: Path) -> bytes:  # the module now imports one more duetflow module
        data = real(path)
        return data + b"\nimport duetflow.turntaking.retime\n" if path == target else data

    monkeypatch.setattr(hashing, "read_source", read)
    parsed: list[str] = []
    parse = hashing.import_candidates

    def counting(package: str, source: bytes, path: Path) -> hashing.Candidates:
        parsed.append(str(path))
        return parse(package, source, path)

    monkeypatch.setattr(hashing, "import_candidates", counting)
    got = hashing.imported_modules("duetflow.rendering.gaps", read(target), target)
    assert parsed == [str(target)]
    assert "duetflow.turntaking.retime" in got


def test_a_broken_cache_file_is_parsed_over_and_rewritten(cache_file: Path) -> None:
    truth = _parsed_closure(ENTRIES)
    for junk in (b"\x00\xff not json", b'{"format": 1, "entries": {"k": 3}}', b"[1, 2]"):
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        cache_file.write_bytes(junk)
        _new_process()
        assert hashing.import_closure(ENTRIES) == truth
        hashing.import_graph_cache().save()
        assert json.loads(cache_file.read_text())["format"] == hashing.ImportGraphCache.FORMAT


def test_an_unwritable_cache_folder_costs_nothing_but_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(CACHE_DIR_ENV, str(blocker / "cache"))  # its parent is a file
    _new_process()
    try:
        assert hashing.code_hash(ENTRIES)
        assert not (blocker / "cache").exists()
        assert [p.name for p in tmp_path.iterdir()] == ["a-file"]  # no temporary file left
    finally:
        _new_process()


def test_the_file_keeps_what_this_process_used_within_its_bound(cache_file: Path) -> None:
    cache = hashing.ImportGraphCache(cache_file)
    cache.MAX_ENTRIES = 3  # type: ignore[misc]
    cache._load().update({f"old{k}": ((), ()) for k in range(5)})
    path = hashing.module_file("duetflow.rendering.gaps")
    cache.candidates("duetflow.rendering.gaps", "duetflow.rendering", path.read_bytes(), path)
    cache.save()
    kept = json.loads(cache_file.read_text())["entries"]
    assert len(kept) == 3
    assert cache.key("duetflow.rendering.gaps", "duetflow.rendering", path.read_bytes()) in kept
    assert not [p for p in cache_file.parent.iterdir() if p.name.endswith(".tmp")]
    assert os.environ[CACHE_DIR_ENV] == str(cache_file.parent)
