"""PH synthesis throughput: utterances/s and real-time factor per backend on this machine.

    .venv/bin/python bench/synthesize.py                 # default backend + tiny Dia (CPU)
    .venv/bin/python bench/synthesize.py --scale 10      # bigger stage run (memory check)
    .venv/bin/python bench/synthesize.py --gpu-check --model-path DIA --codec-path DAC \
        --reference ref.wav --transcript "exact words of ref.wav" [--device cuda]

Figures:

* **default** (eSpeak NG): ``EspeakBackend.synthesize`` on N English lines, one call per line
  (what the stage does per speaker), then the whole ``synthesize`` stage on the sample scripts
  against a generated voices workdir (reference selection + assembly + FLAC + manifests).
* **dia-tiny**: ``DiaBackend.generate`` (load, prompt with a 5 s reference, seeded generate,
  prompt-free decode) on the tiny random Dia of :mod:`duetflow.tts.tiny`, fixed frame budget
  (a random model never stops by itself). It measures the code path's overhead, not Dia.

RTF = synthesis seconds / seconds of audio produced (lower is faster). CPU seconds include child
processes (eSpeak runs in a worker process per call).

``--gpu-check`` is the prepared check for real weights on a GPU machine (one command, < 10 min on
one GPU): loads ``nari-labs/Dia-1.6B-0626`` + ``descript/dac_44khz`` from local folders, clones the
given reference for 6 lines through the real guard, writes WAVs, and prints RTF, retries,
same-seed reproducibility and Resemblyzer similarity to the reference.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "tts"))  # the voices-workdir builder used by the tests

LINES = [
    "Hey, do you have any plans for the weekend?",
    "Not really. I was thinking about going hiking if the weather holds.",
    "That sounds great. Which trail were you thinking of?",
    "The one along the river, it takes about three hours.",
    "Mind if I join you? I could bring some sandwiches.",
    "Of course, let's meet at the station at nine.",
]


def _cpu() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _voice(root: Path, seconds: float = 5.0):  # type: ignore[no-untyped-def]
    from duetflow.audio.io import write_audio
    from duetflow.tts import espeak
    from duetflow.tts.backend import Voice

    text = "This is the reference speaker reading a few sentences for the clone prompt."
    (wave,), sr = espeak.speak([text], "en-us+m3", 160, 40)
    wave = wave[: int(seconds * sr)]
    path = write_audio(root / "ref.wav", wave, sr)
    return Voice(
        "ref", "en", "M", 120.0, "bench", str(path), text, len(wave) / sr, sr, None, None, "bench"
    )


def bench_default(n: int, root: Path) -> dict[str, float]:
    from duetflow.config import SynthConfig
    from duetflow.tts.espeak import EspeakBackend

    be = EspeakBackend(SynthConfig())
    voice = _voice(root)
    texts = [LINES[i % len(LINES)] for i in range(n)]
    t0, c0 = time.perf_counter(), _cpu()
    audio_s = 0.0
    for text in texts:
        (res,) = be.synthesize([text], voice, seed=1)
        audio_s += len(res.audio) / res.sample_rate
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    return {
        "utterances": n,
        "audio_s": round(audio_s, 2),
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "utt_per_s": round(n / wall, 2),
        "rtf": round(wall / audio_s, 4),
    }


def bench_stage(scale: int, root: Path) -> dict[str, float]:
    from tts_helpers import build_rendered_workdir, tts_config

    from duetflow.demo.scripts import generate
    from duetflow.pipeline.commands import synthesize

    voices = build_rendered_workdir(root / f"voices{scale}")
    generate(root / f"s{scale}", 0, scale)
    t0, c0 = time.perf_counter(), _cpu()
    rep = synthesize(
        root / f"s{scale}" / "scripts", voices, tts_config(), root / f"out{scale}", qa=False
    )  # tts_config: the voices' dialogues are HH, the default pool takes HM participants only
    if rep.kept == 0:  # a stage that made nothing measured nothing
        sys.exit(f"synthesis stage kept no dialogue: {rep.reasons}")
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    return {
        "dialogues": rep.kept,
        "utterances": rep.utterances,
        "audio_s": rep.audio_s,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "dialogues_per_s": round(rep.kept / wall, 2),
        "x_realtime_per_cpu_s": round(rep.audio_s / cpu, 1),
        "tts_rtf": round(rep.rtf, 4),
        "peak_rss_mb": round(_rss_mb()),
    }


def bench_dia_tiny(n: int, root: Path, frames: int = 64) -> dict[str, float]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from duetflow.config import SynthConfig
    from duetflow.tts.dia import HOP, MAX_DELAY, SAMPLE_RATE, DiaBackend, build_prompt
    from duetflow.tts.tiny import build_tiny_dia
    from duetflow.tts.voices import load_voice_audio

    t0 = time.perf_counter()
    dia_dir, dac_dir = build_tiny_dia(root / "tiny")
    build_s = time.perf_counter() - t0
    be = DiaBackend(SynthConfig(model_path=str(dia_dir), codec_path=str(dac_dir)))
    voice = _voice(root)
    ref, _ = load_voice_audio(voice, SAMPLE_RATE)
    t0 = time.perf_counter()
    be._load()
    load_s = time.perf_counter() - t0
    prompts = [build_prompt(voice.transcript, LINES[i % len(LINES)]) for i in range(n)]
    be.generate(prompts[:1], ref, 0, frames)  # warm-up
    t0, c0 = time.perf_counter(), _cpu()
    audio_s = 0.0
    for i, p in enumerate(prompts):
        (w,) = be.generate([p], ref, i, frames)
        audio_s += len(w) / SAMPLE_RATE
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    t0 = time.perf_counter()
    batch = be.generate(prompts, ref, 0, frames)
    batch_s = time.perf_counter() - t0
    assert all(len(w) == (frames - MAX_DELAY - 1) * HOP for w in batch)
    return {
        "utterances": n,
        "frames": frames,
        "audio_s": round(audio_s, 2),
        "build_s": round(build_s, 2),
        "load_s": round(load_s, 2),
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "utt_per_s": round(n / wall, 2),
        "rtf": round(wall / audio_s, 3),
        "batch_utt_per_s": round(n / batch_s, 2),
    }


def gpu_check(args: argparse.Namespace) -> int:
    """Real Dia weights on a GPU: clone a reference for 6 lines through the guard."""
    import soundfile as sf
    import torch

    from duetflow.audio.io import read_seconds
    from duetflow.config import SynthConfig
    from duetflow.tts.backend import SynthesisError, Voice
    from duetflow.tts.dia import SAMPLE_RATE, DiaBackend
    from duetflow.tts.qa import SpeakerEncoder, similarity

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ref, sr = read_seconds(args.reference)
    voice = Voice(
        "ref",
        "en",
        None,
        None,
        "gpu-check",
        str(Path(args.reference).resolve()),
        args.transcript,
        len(ref) / sr,
        sr,
        None,
        None,
        "gpu-check",
    )
    be = DiaBackend(
        SynthConfig(
            model_path=args.model_path,
            codec_path=args.codec_path,
            device=args.device,
            max_retries=2,
        )
    )
    t0 = time.perf_counter()
    be._load()
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    results, failures = [], []
    for i, line in enumerate(LINES):  # one at a time, so one guard failure does not stop the check
        try:
            results.extend(be.synthesize([line], voice, seed=1234 + i))
        except SynthesisError as e:
            failures.append(f"line {i}: {e}")
    synth_s = time.perf_counter() - t0
    audio_s = sum(len(r.audio) for r in results) / SAMPLE_RATE
    same = None
    if results:
        first_ok = not any(f.startswith("line 0:") for f in failures)
        if first_ok:  # same seed again: bit-identical on this device?
            again = be.synthesize([LINES[0]], voice, seed=1234)[0]
            same = bool(np.array_equal(again.audio, results[0].audio))
    enc = SpeakerEncoder.get()
    sims = [similarity(enc, r.audio, SAMPLE_RATE, ref, sr) for r in results]
    for i, r in enumerate(results):
        sf.write(out / f"line{i}.wav", r.audio, SAMPLE_RATE)
    report = {
        "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else args.device,
        "load_s": round(load_s, 1),
        "synth_s": round(synth_s, 1),
        "audio_s": round(audio_s, 1),
        "rtf": round(synth_s / audio_s, 3) if audio_s else None,
        "attempts": [r.attempts for r in results],
        "guard_failures": failures,
        "same_seed_identical": same,
        "similarity_to_reference": [None if s is None else round(s, 3) for s in sims],
        "wavs": str(out),
    }
    print(json.dumps(report, indent=1))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--utterances", type=int, default=12)
    ap.add_argument("--scale", type=int, default=1, help="copies of the sample scripts")
    ap.add_argument("--skip-dia", action="store_true")
    ap.add_argument(
        "--torch-threads",
        type=int,
        default=1,
        help="torch intra-op threads for tiny Dia (spinning threads slow tiny ops on shared CPUs)",
    )
    ap.add_argument("--gpu-check", action="store_true")
    ap.add_argument("--model-path")
    ap.add_argument("--codec-path")
    ap.add_argument("--reference", help="5-10 s mono reference clip")
    ap.add_argument("--transcript", help="exact transcript of the reference")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out", default="./dia-gpu-check")
    args = ap.parse_args()
    if args.gpu_check:
        if not (args.model_path and args.codec_path and args.reference and args.transcript):
            ap.error("--gpu-check needs --model-path, --codec-path, --reference, --transcript")
        return gpu_check(args)
    if not args.skip_dia:
        import torch

        torch.set_num_threads(args.torch_threads)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        results = {
            "default": bench_default(args.utterances, root),
            "stage_default": bench_stage(args.scale, root),
        }
        if not args.skip_dia:
            results["dia_tiny"] = bench_dia_tiny(args.utterances, root)
    for name, r in results.items():
        print(f"{name}: " + ", ".join(f"{k}={v}" for k, v in r.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
