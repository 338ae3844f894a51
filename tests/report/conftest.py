"""Fixtures for the report tests: small rendered work directories, a published release, and a
headless Chromium (the Debian ``chromium`` package, installed here if it is missing).

The work directories are written the way the render stage writes them (real FLAC files through
``duetflow.audio.io.write_audio``, rows matching the rendered schemas), with known gaps: every
speaker change is a gap drawn from U[180, 230] ms except one deliberate 450 ms gap, so the tests
can recompute everything from the files.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

from duetflow.audio.io import write_audio
from duetflow.audio.loudness import measure
from duetflow.records.convert import dumps
from duetflow.records.dialogue import Rejection, Stage
from duetflow.records.manifest import (
    REJECTION_SCHEMA,
    RENDERED_DIALOGUE_SCHEMA,
    RENDERED_TURN_SCHEMA,
    write_table,
)
from duetflow.records.rows import ReleaseDialogueRow, RenderedDialogueRow, from_row
from duetflow.release.layout import RELEASE_DIALOGUE_SCHEMA
from duetflow.seeding import rng_for
from duetflow.turntaking.overlaps import BalanceStats
from duetflow.turntaking.stats import CorpusStats, DialogueStats

SR = 16000
SEED = 7
LONG_GAP_S = 0.45  # the one deliberate out-of-band gap


def _voice(duration_s: float, f0: float, amp: float) -> np.ndarray:
    """A harmonic, syllable-modulated tone that WebRTC VAD reads as speech (no inner pauses)."""
    t = np.arange(int(round(duration_s * SR))) / SR
    f = f0 * (1 + 0.05 * np.sin(2 * np.pi * 3 * t))
    ph = 2 * np.pi * np.cumsum(f) / SR
    x = sum((1.0 / k) * np.sin(k * ph) for k in range(1, 25))
    x = x * (0.6 + 0.4 * np.sin(2 * np.pi * 4 * t) ** 2)
    return (x / np.max(np.abs(x)) * amp).astype(np.float32)


@dataclass(frozen=True)
class DialogueSpec:
    corpus: str
    category: str
    language: str
    index: int
    stereo: bool
    long_gap: bool = False
    backchannel: bool = False
    provenance: dict[str, Any] | None = None
    licence: str | None = None  # None: the built-in corpus's (LICENCE_OF), else CC-BY-4.0


#: what the built-in adapters (and a PH dialogue cloning DailyTalk voices with Spark) declare
LICENCE_OF = {
    "dailytalk": "CC-BY-SA-4.0",
    "magicdata_ramc": "CC-BY-NC-ND-4.0",
    "ph": "CC-BY-NC-SA-4.0 AND CC-BY-SA-4.0",
}


def _render(wd: Path, spec: DialogueSpec) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    did = f"{spec.corpus}__d{spec.index}__w000_00000000"
    rng = rng_for(SEED, did)
    spk = (f"{spec.corpus}-A{spec.index}", f"{spec.corpus}-B{spec.index}")
    amp = {spk[0]: 0.30, spk[1]: 0.22}
    f0 = {spk[0]: 120.0, spk[1]: 210.0}
    n_turns = 6 + spec.index % 3
    segs: list[tuple[str, float, float, str]] = []  # speaker, start, end, kind
    t = 0.25
    for k in range(n_turns):
        s = spk[k % 2]
        dur = float(rng.uniform(0.8, 1.6))
        segs.append((s, t, t + dur, "turn"))
        t += dur
        gap = LONG_GAP_S if spec.long_gap and k == 2 else float(rng.uniform(0.18, 0.23))
        t += gap
    t += 0.25 - gap
    if spec.backchannel:  # B says "mhm" inside A's first turn
        s0 = segs[0][1]
        segs.append((spk[1], s0 + 0.3, s0 + 0.55, "backchannel"))
    total = t
    n = int(round(total * SR))
    tracks = {s: np.zeros(n, np.float32) for s in spk}
    for s, a, b, kind in segs:
        i0 = int(round(a * SR))
        x = _voice(
            b - a,
            f0[s] * (1.3 if kind == "backchannel" else 1.0),
            amp[s] * 0.6 if kind == "backchannel" else amp[s],
        )
        tracks[s][i0 : i0 + len(x)] += x[: n - i0]
    tone = rng.standard_normal((n, 2)).astype(np.float32) * 0.0008
    if spec.stereo:
        audio = np.stack([tracks[spk[0]], tracks[spk[1]]], axis=1) + tone
    else:
        audio = tracks[spk[0]] + tracks[spk[1]] + tone[:, 0]
    rel = f"audio/{did}.flac"
    write_audio(wd / rel, audio, SR)
    sha = hashlib.sha256((wd / rel).read_bytes()).hexdigest()
    lufs = {
        s: measure(
            np.concatenate([tracks[s][int(a * SR) : int(b * SR)] for x, a, b, _ in segs if x == s]),
            SR,
        ).lufs
        for s in spk
    }
    order = sorted(segs, key=lambda x: x[1])
    turns = [
        {
            "dialogue_id": did,
            "turn_index": i,
            "speaker": s,
            "kind": kind,
            "start_s": round(a, 6),
            "end_s": round(b, 6),
            "orig_start_s": round(a + 3.0, 6),
            "orig_end_s": round(b + 3.0, 6),
            "text": f"words {i}",
        }
        for i, (s, a, b, kind) in enumerate(order)
    ]
    row = {
        "dialogue_id": did,
        "source_id": f"{spec.corpus}__d{spec.index}",
        "corpus": spec.corpus,
        "category": spec.category,
        "language": spec.language,
        "topic": "weather",
        "speaker_a": spk[0],
        "speaker_b": spk[1],
        "audio_path": rel,
        "sha256": sha,
        "duration_s": n / SR,
        "sample_rate": SR,
        "num_channels": 2 if spec.stereo else 1,
        "n_turns": len(turns),
        "loudness_lufs_a": lufs[spk[0]],
        "loudness_lufs_b": lufs[spk[1]],
        "gain_db_a": 0.0,
        "gain_db_b": 0.0,
        "gap_ms_min": 180.0,
        "gap_ms_max": 230.0 if not spec.long_gap else LONG_GAP_S * 1000,
        "provenance": dumps(spec.provenance or {"code_version": "0.1.0-test"}),
        "licence": spec.licence or LICENCE_OF.get(spec.corpus, "CC-BY-4.0"),
        "source_sample_rate": SR,
    }
    return row, turns


def _rejection(item: str, corpus: str, stage: str, reason: str) -> dict[str, Any]:
    return {
        "item_id": item,
        "corpus": corpus,
        "source_path": f"/corpora/{corpus}/{item}",
        "stage": stage,
        "reason": reason,
        "detail": f"{reason} in {item}",
    }


def _stats(corpus: str, rejected: dict[str, int]) -> dict[str, Any]:
    """A stats.json as the process stage writes it (the real ``CorpusStats``)."""
    stats = CorpusStats()
    rng = rng_for(SEED, "stats", corpus)
    for i in range(4):
        ftos = tuple(float(x) for x in np.round(rng.normal(0.2, 0.4, 12), 3))
        stats.add(
            DialogueStats(
                dialogue_id=f"{corpus}__src{i}",
                corpus=corpus,
                category="HH",
                duration_s=90.0,
                n_windows=3,
                n_kept=1 if i % 2 else 0,
                ftos=ftos,
                overlaps={
                    "backchannel": 2,
                    "interruption": i % 2,
                    "non_floor_interruption": 1,
                    "terminal_overlap": 3,
                },
                balance=BalanceStats({"A": 0.5, "B": 0.5}, {"A": 0.55, "B": 0.45}),
                kept_ftos=ftos[:4] if i % 2 else (),
                kept_overlaps={"backchannel": 1} if i % 2 else {},
                window_b_shares=((0.45, bool(i % 2)), (0.7, False), (0.3, False)),
                kept_duration_s=40.0 if i % 2 else 0.0,
            )
        )
    for reason, n in rejected.items():
        for k in range(n):
            stats.add_rejection(Rejection(f"{corpus}__r{k}", Stage.FILTER, reason, corpus=corpus))
    return stats.to_dict()


def write_workdir(
    wd: Path,
    specs: list[DialogueSpec],
    rejections: list[dict[str, Any]],
    stats: dict[str, Any] | None,
) -> Path:
    rows, turns = [], []
    for spec in specs:
        r, t = _render(wd, spec)
        rows.append(r)
        turns.extend(t)
    write_table(wd / "dialogues.parquet", RENDERED_DIALOGUE_SCHEMA, rows)
    write_table(wd / "turns.parquet", RENDERED_TURN_SCHEMA, turns)
    write_table(wd / "rejections.parquet", REJECTION_SCHEMA, rejections)
    if stats is not None:
        (wd / "stats.json").write_text(json.dumps(stats))
    return wd


PH_PROV = [
    {
        "backend": "default",
        "cloned": False,
        "clone_similarity": {"A": 0.62, "B": 0.55},
        "code_version": "0.1.0-test",
    },
    {
        "backend": "spark",
        "cloned": True,
        "clone_similarity": {"A": 0.81, "B": 0.77},
        "code_version": "0.1.0-test",
    },
]


@pytest.fixture(scope="session")
def licence_of() -> dict[str, str]:
    """The licence each fixture corpus's rows carry (ground truth for the card)."""
    return dict(LICENCE_OF)


@pytest.fixture(scope="session")
def work_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three rendered work directories: DailyTalk-like (mono), RAMC-like (stereo), PH."""
    root = tmp_path_factory.mktemp("report-work")
    write_workdir(
        root / "dailytalk",
        [
            DialogueSpec("dailytalk", "HH", "en", 0, False, backchannel=True),
            DialogueSpec("dailytalk", "HH", "en", 1, False, long_gap=True),
            DialogueSpec("dailytalk", "HH", "en", 2, False),
        ],
        [
            _rejection("dailytalk__d7", "dailytalk", "filter", "balance"),
            _rejection("dailytalk__d8", "dailytalk", "filter", "balance"),
            _rejection("dailytalk__d9", "dailytalk", "filter", "interruptions"),
            _rejection("dailytalk__d10", "dailytalk", "ingest", "missing_file"),
            _rejection("dailytalk__d11", "dailytalk", "filter", "balance"),
            _rejection("dailytalk__d12", "dailytalk", "filter", "balance"),
        ],
        _stats("dailytalk", {"balance": 4, "interruptions": 1, "missing_file": 1}),
    )
    write_workdir(
        root / "magicdata_ramc",
        [
            DialogueSpec("magicdata_ramc", "HH", "zh", 3, True),
            DialogueSpec("magicdata_ramc", "HH", "zh", 4, True, backchannel=True),
        ],
        [_rejection("magicdata_ramc__G0001__w001", "magicdata_ramc", "window", "too_short")],
        _stats("magicdata_ramc", {"too_short": 1}),
    )
    write_workdir(
        root / "ph",
        [
            DialogueSpec("ph", "PH", "en", 5, False, provenance=PH_PROV[0]),
            DialogueSpec("ph", "PH", "en", 6, False, provenance=PH_PROV[1]),
        ],
        [_rejection("ph__script3", "ph", "synthesize", "runaway_generation")],
        None,
    )
    return root


@pytest.fixture(scope="session")
def release_dir(work_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A release laid out as publish writes it, in a local store, from the work directories."""
    store = tmp_path_factory.mktemp("report-store")
    rid = "r-test-0001"
    man = store / "releases" / rid / "manifests"
    man.mkdir(parents=True)
    schema = RELEASE_DIALOGUE_SCHEMA
    rows: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    rejections: list[dict[str, Any]] = []
    splits = ["train", "train", "val", "test"]
    for wd in sorted(p for p in work_root.iterdir() if p.is_dir()):
        for i, r in enumerate(pq.read_table(wd / "dialogues.parquet").to_pylist()):
            key = f"audio/{r['sha256'][:2]}/{r['sha256']}.flac"
            (store / key).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(wd / r["audio_path"], store / key)
            split = "test" if r["category"] == "PH" else splits[i % len(splits)]
            rendered = from_row(RenderedDialogueRow, r)
            rows.append(ReleaseDialogueRow.released(rendered, split, key).to_row())
        turns.extend(pq.read_table(wd / "turns.parquet").to_pylist())
        rejections.extend(pq.read_table(wd / "rejections.parquet").to_pylist())
    write_table(man / "dialogues.parquet", schema, rows)
    for sp in ("train", "val", "test"):
        write_table(man / f"{sp}.parquet", schema, [r for r in rows if r["split"] == sp])
    write_table(man / "turns.parquet", RENDERED_TURN_SCHEMA, turns)
    write_table(man / "rejections.parquet", REJECTION_SCHEMA, rejections)
    meta = {
        "release_id": rid,
        "code_version": "0.1.0-test",
        "config_hash": "cafef00d12345678",
        "counts": {sp: sum(r["split"] == sp for r in rows) for sp in ("train", "val", "test")},
        "render_config": {"gap_ms_min": 170.0, "gap_ms_max": 240.0},
    }
    (store / "releases" / rid / "stats").mkdir()
    shutil.copyfile(
        work_root / "dailytalk" / "stats.json",
        store / "releases" / rid / "stats" / "00-dailytalk.json",
    )
    (store / "releases" / rid / "RELEASE.json").write_text(json.dumps(meta))
    (store / "releases" / "LATEST").write_text(rid + "\n")
    return store / "releases" / rid


# --- headless Chromium ---------------------------------------------------------------------------


def _find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture(scope="session")
def chromium() -> str:
    """Path of a headless-capable Chromium; installs the Debian package when missing."""
    found = _find_chromium()
    if found is None and os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=False, env=env, timeout=600)
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "chromium"], check=False, env=env, timeout=900
        )
        found = _find_chromium()
    if found is None:
        pytest.fail(
            "headless Chromium not found and could not be installed: run"
            " `apt-get install -y chromium` (make browser) before the tests"
        )
    return found


@pytest.fixture(scope="session")
def artifacts_dir() -> Iterator[Path]:
    """Where screenshots go so they survive the run (``DUETFLOW_TEST_ARTIFACTS`` or build/)."""
    base = os.environ.get("DUETFLOW_TEST_ARTIFACTS")
    path = Path(base) if base else Path(__file__).resolve().parents[2] / "build" / "test-artifacts"
    path = path / "report"
    path.mkdir(parents=True, exist_ok=True)
    yield path


# --- the real sample pipeline ------------------------------------------------------------------


@pytest.fixture(scope="session")
def sample_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample pipeline for real: generated DailyTalk + RAMC → ingest → process → publish.

    Returns the local store root (its ``releases/LATEST`` is the release).
    """
    from duetflow.config import RunConfig
    from duetflow.demo import make_samples
    from duetflow.pipeline.commands import process_workdir
    from duetflow.pipeline.ingest import ingest
    from duetflow.release.publish import publish
    from duetflow.report import release_report

    root = tmp_path_factory.mktemp("report-sample")
    make_samples(root / "samples", seed=0, scale=1, include=["dailytalk", "magicdata_ramc"])
    cfg = RunConfig()
    workdirs = []
    for corpus, folder in (("dailytalk", "dailytalk"), ("magicdata_ramc", "MagicData-RAMC")):
        ingest(corpus, root / "samples" / folder, root / "intake" / corpus, cfg)
        process_workdir(root / "intake" / corpus, root / "work" / corpus, cfg)
        workdirs.append(root / "work" / corpus)
    publish(workdirs, str(root / "store"), cfg, report=release_report)
    return root / "store"
