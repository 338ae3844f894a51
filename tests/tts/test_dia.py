"""Dia backend on a tiny random Dia + DAC built from configs and saved locally (no network).

Exercises the production code path: loading from local folders (codec from its own folder),
the cloning prompt, seeded generation, prompt-free decoding, and the runaway/truncation guard
triggering and recovering on new seeds.
"""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"  # proves nothing is fetched
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import json
from pathlib import Path

import numpy as np
import pytest
from tts_helpers import tts_config

from duetflow.config import RunConfig, SynthConfig
from duetflow.errors import ConfigError
from duetflow.hashing import path_checksum
from duetflow.pipeline.commands import synthesize
from duetflow.records.manifest import iter_rows
from duetflow.tts.backend import SynthesisError, Voice, load_backend
from duetflow.tts.dia import MAX_DELAY, SAMPLE_RATE, DiaBackend, build_prompt, max_new_tokens_for

pytestmark = [pytest.mark.tts, pytest.mark.usefixtures("torch_one_thread")]

TEXT = "How are you today my friend?"
# a band of plausible durations that suits the tiny model's frame counts
NARROW = {"chars_per_s_min": 60.0, "chars_per_s_max": 150.0}


@pytest.fixture(scope="session")
def tiny_dia(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A random Dia whose EOS logit is zeroed: every generation runs to max_new_tokens."""
    from duetflow.tts.tiny import build_tiny_dia

    return build_tiny_dia(tmp_path_factory.mktemp("tiny_dia"))


@pytest.fixture(scope="session")
def tiny_dia_eos(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A random Dia whose EOS sometimes wins: lengths vary with the seed."""
    from duetflow.tts.tiny import build_tiny_dia

    return build_tiny_dia(tmp_path_factory.mktemp("tiny_dia_eos"), eos_boost=2.0)


def _voice(tmp_path: Path, seconds: float = 1.0) -> Voice:
    from duetflow.audio.io import write_audio

    t = np.arange(int(16000 * seconds)) / 16000
    clip = (0.1 * np.sin(2 * np.pi * 180 * t)).astype(np.float32)
    path = write_audio(tmp_path / "ref.wav", clip, 16000)
    return Voice(
        "spk",
        "en",
        "M",
        180.0,
        "clip1",
        str(path),
        "Transcript of the reference.",
        seconds,
        16000,
        None,
        None,
        "d1",
    )


def _backend(dirs: tuple[Path, Path], **extra: float) -> DiaBackend:
    cfg = SynthConfig(model_path=str(dirs[0]), codec_path=str(dirs[1]), **extra)  # type: ignore[arg-type]
    return DiaBackend(cfg)


def test_config_errors() -> None:
    with pytest.raises(ConfigError, match="model_path"):
        load_backend("dia", SynthConfig())


def test_prompt_is_transcript_first() -> None:
    assert build_prompt(" Hello there. ", "New line.") == "[S1] Hello there. [S1] New line. [S1]"


def test_seeded_generation_and_prompt_free_decoding(
    tiny_dia: tuple[Path, Path], tmp_path: Path
) -> None:
    be = _backend(tiny_dia)
    voice = _voice(tmp_path)
    from duetflow.tts.voices import load_voice_audio

    ref, sr = load_voice_audio(voice, SAMPLE_RATE)
    assert sr == SAMPLE_RATE and len(ref) == SAMPLE_RATE  # resampled 16 kHz → 44.1 kHz
    prompt = build_prompt(voice.transcript, TEXT)
    a = be.generate([prompt], ref, seed=3, max_new_tokens=40)[0]
    b = be.generate([prompt], ref, seed=3, max_new_tokens=40)[0]
    c = be.generate([prompt], ref, seed=4, max_new_tokens=40)[0]
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    # no EOS from a random model: exactly the new frames, the ~88-frame prompt is cut off
    assert len(a) == (40 - MAX_DELAY - 1) * 512
    # batching: two prompts in one generate, each decoded on its own
    two = be.generate([prompt, build_prompt(voice.transcript, "Short.")], ref, 5, 40)
    assert [len(w) for w in two] == [len(a), len(a)]
    prov = be.provenance()
    assert prov["model_checksum"] == path_checksum(tiny_dia[0]) and prov["clones"] is True
    assert prov["generation"]["do_sample"] is True and prov["generation"]["guidance_scale"] == 3.0


def test_guard_triggers_on_runaway(tiny_dia: tuple[Path, Path], tmp_path: Path) -> None:
    be = _backend(tiny_dia, max_retries=1, **NARROW)
    with pytest.raises(SynthesisError) as ei:
        be.synthesize([TEXT], _voice(tmp_path), seed=1)
    assert ei.value.reason == "runaway"
    assert "after 2 attempts" in str(ei.value)
    # the cap is derived from the slowest plausible rate, so a runaway is always over the bound
    lo, hi = 28 / NARROW["chars_per_s_max"], 22 / NARROW["chars_per_s_min"]
    assert (max_new_tokens_for(TEXT, be.config) - MAX_DELAY - 1) * 512 / SAMPLE_RATE > hi > lo


def test_guard_recovers_on_a_new_seed(tiny_dia_eos: tuple[Path, Path], tmp_path: Path) -> None:
    be = _backend(tiny_dia_eos, max_retries=3, **NARROW)
    voice = _voice(tmp_path, seconds=5.0)
    recovered = None
    for seed in range(12):
        try:
            (res,) = be.synthesize([TEXT], voice, seed=seed)
        except SynthesisError:
            continue
        if res.attempts > 1:
            recovered = (seed, res)
            break
    assert recovered is not None, "no seed needed a retry and then passed"
    seed, res = recovered
    assert res.seed != seed and len(res.notes) == res.attempts - 1
    assert res.notes[0].startswith(f"attempt 1 seed {seed}: ")
    assert be.check(TEXT, res.audio) is None
    (again,) = be.synthesize([TEXT], voice, seed=seed)
    assert np.array_equal(again.audio, res.audio) and again.seed == res.seed


def test_dia_in_the_synthesize_stage(
    tiny_dia_eos: tuple[Path, Path], voices_workdir: Path, tmp_path: Path
) -> None:
    scripts = tmp_path / "s.jsonl"
    lines = [{"speaker": "A", "text": TEXT}, {"speaker": "B", "text": "I am fine, thanks a lot."}]
    scripts.write_text(
        json.dumps({"id": "dia-1", "language": "en", "lines": lines})
        + "\n"
        + json.dumps({"id": "dia-zh", "language": "zh", "lines": lines})
        + "\n",
        encoding="utf-8",
    )
    cfg: RunConfig = tts_config(
        {
            # a two-line script from a tiny model: the backend is under test, not the length
            "window": {"min_s": 0.1},
            "synth": {
                "model_path": str(tiny_dia_eos[0]),
                "codec_path": str(tiny_dia_eos[1]),
                "max_retries": 15,
                "chars_per_s_min": 40.0,
                "chars_per_s_max": 400.0,
            },
        }
    )
    rep = synthesize(scripts, voices_workdir, cfg, tmp_path / "out", backend="dia", qa=False)
    assert rep.scripts == 2 and rep.kept + rep.rejected == 2
    rejected = {
        r["item_id"]: r["reason"] for r in iter_rows(tmp_path / "out" / "rejections.parquet")
    }
    assert rejected.get("ph__dia__dia-zh") in ("unsupported_language", "no_voices")
    rows = list(iter_rows(tmp_path / "out" / "dialogues.parquet"))
    if not rows:
        # Tiny random weights speak full-scale noise. Since issue 24 the levels are read as
        # recorded (scaled, not clipped, DC removed), and a pause between two noise bursts may
        # then not be confirmable on the audio: such a dialogue is rejected gap_unconfirmed,
        # never published. Everything before the mixdown (loading, cloning, every line
        # synthesised) ran; the provenance checks below need the kept row.
        assert rejected == {
            "ph__dia__dia-1": "gap_unconfirmed",
            **{k: v for k, v in rejected.items() if k != "ph__dia__dia-1"},
        }, rejected
        assert rep.rejected == 2
        return
    assert [r["dialogue_id"] for r in rows] == ["ph__dia__dia-1"], rejected
    prov = json.loads(rows[0]["provenance"])
    assert prov["backend"] == "dia" and prov["clones"] is True
    assert prov["model_checksum"] == path_checksum(tiny_dia_eos[0])
    assert len(prov["attempts"]) == 2 and len(prov["reference_clip_ids"]) == 2
