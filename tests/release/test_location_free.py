"""A release is its content: the same corpora and scripts in another directory publish the same
release (id and every byte); one input file's bytes changed publish another."""

from __future__ import annotations

import shutil
from hashlib import sha256
from pathlib import Path

import pytest
import soundfile as sf
import yaml

from duetflow.config import load_config
from duetflow.demo import make_samples
from duetflow.pipeline.driver import run_pipeline
from duetflow.records.locations import relative_path, relative_text, root_spellings


def release_content(store: Path, release_id: str) -> dict[str, str]:
    """sha256 of every file of the release and of every audio object, by relative path."""
    out: dict[str, str] = {}
    for base, prefix in ((store / "releases" / release_id, ""), (store / "audio", "audio/")):
        for f in sorted(base.rglob("*")):
            if f.is_file():
                out[prefix + f.relative_to(base).as_posix()] = sha256(f.read_bytes()).hexdigest()
    return out


def _publish(run_dir: Path, samples: Path) -> tuple[str, dict[str, str]]:
    data = {
        "workdir": str(run_dir / "work"),
        "corpora": [{"name": "dailytalk", "root": str(samples / "dailytalk")}],
        "synth": {
            "enabled": True,
            "scripts": str(samples / "scripts"),
            "voice_categories": ["HM", "HH"],
        },
        "release": {"store": str(run_dir / "store")},
        "runner": {"shard_size": 2},
    }
    path = run_dir / "run.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    result = run_pipeline(load_config(path))
    assert result.release is not None
    rid = result.release.release_id
    return rid, release_content(run_dir / "store", rid)


@pytest.mark.slow
def test_same_inputs_elsewhere_same_release_changed_bytes_another(tmp_path: Path) -> None:
    here = tmp_path / "one" / "samples"
    make_samples(here, seed=0, scale=1, include=["dailytalk", "scripts"])
    there = tmp_path / "two" / "deeper" / "copy"
    shutil.copytree(here, there, symlinks=True)  # the samples' path-escape link stays a link
    changed = tmp_path / "three" / "samples"
    shutil.copytree(here, changed, symlinks=True)
    clip = changed / "dailytalk" / "data" / "0" / "0_1_d0.wav"
    audio, sr = sf.read(clip, dtype="int16")
    audio[len(audio) // 3 : len(audio) // 3 + 400] //= 2  # a few samples quieter
    sf.write(clip, audio, sr, subtype="PCM_16")
    assert clip.read_bytes() != (here / clip.relative_to(changed)).read_bytes()

    rid_a, content_a = _publish(tmp_path / "one", here)
    rid_b, content_b = _publish(tmp_path / "two", there)
    rid_c, content_c = _publish(tmp_path / "three", changed)

    assert rid_a == rid_b
    assert content_a == content_b
    assert any(k.startswith("audio/") for k in content_a) and "RELEASE.json" in content_a
    for run in ("one", "two"):  # the instrument: no published byte names where inputs sat
        for f in (tmp_path / run / "store").rglob("*"):
            if f.is_file():
                assert str(tmp_path).encode() not in f.read_bytes(), f
    assert rid_c != rid_a
    assert content_c["manifests/dialogues.parquet"] != content_a["manifests/dialogues.parquet"]


def test_paths_and_messages_are_written_relative_to_the_root(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    (root / "a").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(root)
    roots = root_spellings(link)
    assert roots[0] != roots[1] and str(root.resolve()) in roots  # both spellings, longest first
    assert relative_path(str(root / "a" / "x.wav"), roots) == "a/x.wav"
    assert relative_path(str(link / "a" / "x.wav"), roots) == "a/x.wav"
    assert relative_path(str(tmp_path / "out.wav"), roots) == "../out.wav"
    assert relative_path("a/x.wav", roots) == "a/x.wav"
    msg = f"{root}/a/x.wav: resolves to ../y.wav, outside the corpus root {root}; refusing"
    assert relative_text(msg, roots) == (
        "a/x.wav: resolves to ../y.wav, outside the corpus root <root>; refusing"
    )
