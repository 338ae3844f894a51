"""Say what the audio is (issue 27 item 6): ``voice_cloned`` and the reference speakers on every
release row, and the card's wording from the release.

Ground truth: the provenance each fixture dialogue was written with (which backend, whether it
declared cloning, which voices), not the rows under test.
"""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import lhotse
import pyarrow.parquet as pq
import pytest

from duetflow.release.export_hf import export_hf
from duetflow.release.export_lhotse import export_lhotse
from duetflow.release.publish import publish
from duetflow.release.pull import pull
from duetflow.release.validate import validate_release
from duetflow.report import release_report
from duetflow.report.card import ph_wording
from duetflow.report.data import Distribution, PhStats
from release_fixtures import Spec, make_workdir, specs


def _ph_prov(backend: str, clones: bool | None, voices: tuple[str, str]) -> str:
    prov: dict[str, object] = {"backend": backend, "speakers": [{"id": v} for v in voices]}
    if clones is not None:
        prov["clones"] = clones
    return json.dumps(prov)


def _release(tmp: Path, ph: dict[str, tuple[str, bool | None]]) -> Path:
    """HH dialogues plus one PH dialogue per entry of ``ph`` (id -> backend, clones)."""
    hh = specs(4, prefix="talk", per_source=1)
    phs = [Spec(did, f"src-{did}", "PH", "en", "ph") for did in ph]
    over = {
        did: {"provenance": _ph_prov(b, c, (f"{did}:voiceA", f"{did}:voiceB"))}
        for did, (b, c) in ph.items()
    }
    wd = make_workdir(tmp / "work", [*hh, *phs], row_overrides=over)
    publish([wd], str(tmp / "store"), None, report=release_report)
    return tmp / "store"


def _rows(store: Path) -> dict[str, dict[str, object]]:
    (rid,) = [p.name for p in (store / "releases").iterdir() if p.is_dir()]
    table = pq.read_table(store / "releases" / rid / "manifests" / "dialogues.parquet")
    return {r["dialogue_id"]: r for r in table.to_pylist()}


def _card(store: Path) -> str:
    (rid,) = [p.name for p in (store / "releases").iterdir() if p.is_dir()]
    return (store / "releases" / rid / "report" / "README.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("voices")
    ph = {
        "ph__spark__a": ("spark", True),
        "ph__default__b": ("default", False),
        "ph__old__c": ("default", None),  # says nothing: never called cloned
    }
    return _release(tmp, ph)


def test_every_row_says_whether_its_voices_were_cloned_and_from_whom(mixed: Path) -> None:
    rows = _rows(mixed)
    assert rows["ph__spark__a"]["voice_cloned"] is True
    assert rows["ph__default__b"]["voice_cloned"] is False
    assert rows["ph__old__c"]["voice_cloned"] is False
    for did in ("ph__spark__a", "ph__default__b", "ph__old__c"):
        assert (rows[did]["reference_speaker_a"], rows[did]["reference_speaker_b"]) == (
            f"{did}:voiceA",
            f"{did}:voiceB",
        )
    for did, r in rows.items():
        if not did.startswith("ph__"):
            assert (r["voice_cloned"], r["reference_speaker_a"], r["reference_speaker_b"]) == (
                False,
                None,
                None,
            )
    assert validate_release(str(mixed)) == []
    assert "1 of 3 voice-cloned" in _card(mixed)


def test_a_release_without_cloning_never_says_voice_cloned(tmp_path: Path) -> None:
    store = _release(tmp_path, {"ph__default__x": ("default", False)})
    card = _card(store)
    assert "voice-cloned TTS" not in card
    assert "not voice-cloned; eSpeak NG (offline default TTS, no cloning): 1" in card
    cloned = _release(tmp_path / "c", {"ph__dia__y": ("dia", True)})
    assert "pseudo-human voice-cloned TTS (PH; Dia-1.6B weights: 1)" in _card(cloned)


def test_the_exports_carry_the_voice_facts(mixed: Path, tmp_path: Path) -> None:
    dest = tmp_path / "d"
    pull(str(mixed), split="test", dest=dest)
    (_, sup) = export_lhotse(dest, tmp_path / "lhotse")["test"]
    cloned = {s.recording_id: s.custom["voice_cloned"] for s in lhotse.load_manifest(sup)}
    assert cloned["ph__spark__a"] is True and cloned["ph__default__b"] is False
    export_hf(dest, tmp_path / "hf")
    ds = datasets.load_dataset(str(tmp_path / "hf"), split="test").remove_columns("audio")
    assert ds.features["voice_cloned"].dtype == "bool"
    by_id = {r["dialogue_id"]: r for r in ds}
    assert by_id["ph__spark__a"]["voice_cloned"] is True
    assert by_id["ph__spark__a"]["reference_speaker_b"] == "ph__spark__a:voiceB"


def _ph(n: int, cloning: dict[str, int], backends: dict[str, int]) -> PhStats:
    empty = Distribution("ph_similarity", "cosine", 0, None, None, None, (), ())
    return PhStats(n, backends, cloning, empty, {})


def test_the_wording_follows_the_counts() -> None:
    assert ph_wording(_ph(0, {}, {})) == "no pseudo-human (PH)"
    assert ph_wording(_ph(2, {"cloned": 2}, {"spark": 2})) == (
        "pseudo-human voice-cloned TTS (PH; Spark-TTS-0.5B weights: 2)"
    )
    assert "not voice-cloned" in ph_wording(_ph(2, {"not cloned": 1, "unknown": 1}, {"x": 2}))
