"""TTS backends per language in one build, backend in PH ids, and whose voices are cloned."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tts_helpers import tts_config, write_json

from duetflow.pipeline.commands import synthesize
from duetflow.pipeline.stages import synth as steps
from duetflow.records.manifest import DIALOGUES, iter_rows
from duetflow.tts import backend as base
from duetflow.tts.espeak import EspeakBackend
from duetflow.tts.voices import build_voice_pool


class AltEspeak(EspeakBackend):
    """A second offline backend: eSpeak NG under another name (stands in for dia/spark)."""

    name = "espeak-alt"


@pytest.fixture
def two_backends(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(base._BUILTIN, "espeak-alt", f"{__name__}:AltEspeak")
    base.clear_backend_cache()


def _scripts(root: Path, sample_scripts: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name in ("en-kitchen.json", "zh-books.json"):
        shutil.copy(sample_scripts / name, root / name)
    lines = [{"speaker": "A", "text": "Bonjour, ça va ?"}, {"speaker": "B", "text": "Oui."}]
    write_json(root / "fr.json", {"id": "fr-1", "language": "fr", "lines": lines})
    return root


def test_backends_per_language_in_one_build(
    two_backends: None, voices_workdir: Path, sample_scripts: Path, tmp_path: Path
) -> None:
    cfg = tts_config(
        {"synth": {"backends": {"en": ["default", "espeak-alt"], "zh": ["espeak-alt"]}}}
    )
    scripts = _scripts(tmp_path / "scripts", sample_scripts)
    rep = synthesize(scripts, voices_workdir, cfg, tmp_path / "out", qa=False)
    rows = {r["dialogue_id"]: r for r in iter_rows(tmp_path / "out" / DIALOGUES)}
    assert sorted(rows) == [
        "ph__default__en-kitchen",
        "ph__espeak-alt__en-kitchen",
        "ph__espeak-alt__zh-books",
    ]
    assert {d: r["tts_backend"] for d, r in rows.items()} == {
        "ph__default__en-kitchen": "default",
        "ph__espeak-alt__en-kitchen": "espeak-alt",
        "ph__espeak-alt__zh-books": "espeak-alt",
    }
    rejected = {
        r["item_id"]: r["reason"] for r in iter_rows(tmp_path / "out" / "rejections.parquet")
    }
    assert rejected == {"ph__fr-1": "no_backend"}  # once, not once per backend
    assert (rep.scripts, rep.kept, rep.rejected) == (4, 3, 1)
    # one script voiced by two backends: the same voices, pauses and seeds; only the TTS differs
    a, b = rows["ph__default__en-kitchen"], rows["ph__espeak-alt__en-kitchen"]
    assert (a["speaker_a"], a["speaker_b"]) == (b["speaker_a"], b["speaker_b"])
    assert a["gap_ms_min"] == b["gap_ms_min"] and a["gap_ms_max"] == b["gap_ms_max"]
    for r in rows.values():
        assert r["speaker_a"] != r["speaker_b"]  # the two voices of a PH dialogue differ


def test_pipeline_shards_carry_their_backend(
    two_backends: None, voices_workdir: Path, sample_scripts: Path, tmp_path: Path
) -> None:
    cfg = tts_config(
        {
            "workdir": str(tmp_path / "work"),
            "synth": {
                "scripts": str(_scripts(tmp_path / "scripts", sample_scripts)),
                "backends": {"en": ["default", "espeak-alt"], "zh": ["default"]},
            },
            "runner": {"shard_size": 1},
        }
    )
    pool = steps.build_voices(cfg, [voices_workdir])
    rejected: list[object] = []
    shards = list(steps.plan_synth_shards(cfg, [voices_workdir], pool, rejected))
    got = sorted((s.backend, s.scripts[0].id) for s in shards)
    assert got == [("default", "en-kitchen"), ("default", "zh-books"), ("espeak-alt", "en-kitchen")]
    assert [getattr(r, "reason", None) for r in rejected] == ["no_backend"]
    assert len({s.key for s in shards}) == len(shards)  # the backend is part of the cache key
    assert [s.index for s in shards] == list(range(len(shards)))


def test_default_voice_pool_is_hm_participants_only(voices_workdir: Path, tmp_path: Path) -> None:
    wd = tmp_path / "wd"
    shutil.copytree(voices_workdir, wd)
    table = pq.read_table(wd / DIALOGUES)
    ids, cats = table["dialogue_id"].to_pylist(), table["category"].to_pylist()
    cats = ["HM" if d == "studio__en1" else c for d, c in zip(ids, cats, strict=True)]
    where = table.schema.get_field_index("category")
    table = table.set_column(where, "category", pa.array(cats, pa.string()))
    pq.write_table(table, wd / DIALOGUES)
    hm_only = build_voice_pool(
        wd, tts_config({"synth": {"voice_categories": ["HM"]}}), tmp_path / "c1"
    )
    # the HM dialogue's human (speaker A; B, the system, is never cloned); no HH speaker
    assert [v.speaker_id for v in hm_only.voices] == ["en_m"]
    from duetflow.config import RunConfig

    assert RunConfig().synth.voice_categories == ["HM"]
    both = build_voice_pool(wd, tts_config(), tmp_path / "c2")
    assert sorted(v.speaker_id for v in both.voices) == ["en_m", "zh_f", "zh_m"]


def test_person_key_scopes_session_roles_and_follows_participants() -> None:
    """Two studio sessions' ``user`` are two people unless the sidecar names one participant;
    corpus speaker ids name people corpus-wide."""
    from duetflow.tts.voice_sources import person_key

    def row(source: str, participants: dict[str, str] | None, corpus: str = "studio") -> Any:
        prov = {"input": {"participants": participants}} if participants else {}
        return SimpleNamespace(corpus=corpus, source_id=source, provenance=json.dumps(prov))

    s1 = row("s1", {"user": "s1/user", "system": "s1/system"})
    s2 = row("s2", {"user": "s2/user", "system": "s2/system"})
    assert person_key(s1, "user") != person_key(s2, "user")
    same = row("s3", {"user": "P0173"}), row("s4", {"user": "P0173"})
    assert person_key(same[0], "user") == person_key(same[1], "user") == "studio:P0173"
    iemocap = row("Ses01F_impro01", None, corpus="iemocap")
    assert person_key(iemocap, "Ses01_F") == "iemocap:Ses01_F"
