"""The plain-Python core under the flows: keys, the cache directory protocol, merging."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from duetflow.config import load_config
from duetflow.pipeline import cache, keys, merge
from duetflow.pipeline import driver as run
from duetflow.pipeline.cache import StepOutcome
from duetflow.pipeline.shards import stable_chunks
from duetflow.records import manifest
from flow_helpers import write_config


def test_tree_fingerprint_sees_new_and_changed_files(tmp_path: Path) -> None:
    (tmp_path / "s1").mkdir()
    (tmp_path / "s1" / "a.wav").write_bytes(b"abc")
    before = keys.tree_fingerprint(tmp_path)
    assert keys.tree_fingerprint(tmp_path) == before
    (tmp_path / "s2").mkdir()
    (tmp_path / "s2" / "b.wav").write_bytes(b"x")
    added = keys.tree_fingerprint(tmp_path)
    assert added != before
    (tmp_path / "s1" / "a.wav").write_bytes(b"abcd")
    assert keys.tree_fingerprint(tmp_path) != added


def test_a_step_that_dies_leaves_nothing_that_looks_finished(tmp_path: Path) -> None:
    final = tmp_path / "cache" / "process" / "k1"
    calls: list[int] = []

    def dying(out: Path) -> StepOutcome:
        (out / "half.parquet").write_bytes(b"partial")
        raise RuntimeError("killed")

    def working(out: Path) -> StepOutcome:
        calls.append(1)
        (out / "dialogues.parquet").write_bytes(b"done")
        return StepOutcome("process", "c", "k1", str(out), found=2, kept=1, rejected=1)

    with pytest.raises(RuntimeError):
        cache.build_cached(final, dying)
    assert cache.load_outcome(final) is None
    assert not list(tmp_path.rglob("*.partial"))  # a failed step leaves no half-built folder
    first = cache.build_cached(final, working)
    assert not first.reused and first.path == str(final)
    assert (final / "dialogues.parquet").read_bytes() == b"done"
    assert not (tmp_path / "cache" / "process" / "k1.partial").exists()
    again = cache.build_cached(final, working)
    assert again.reused and calls == [1]
    assert (again.found, again.kept, again.rejected) == (2, 1, 1)


def test_merge_stats_adds_counts_and_reweights_means() -> None:
    a = {"kept": 2, "dur": 1.5, "h": {"edges": [0, 1, 2], "counts": [1, 1], "n": 2, "mean": 1.0,
         "min": 0.5, "max": 1.5}}  # fmt: skip
    b = {"kept": 1, "dur": 0.5, "h": {"edges": [0, 1, 2], "counts": [0, 1], "n": 1, "mean": 1.6,
         "min": 1.6, "max": 1.6}, "new": {"x": 1}}  # fmt: skip
    m = merge.merge_stats([a, b])
    assert m["kept"] == 3 and m["dur"] == 2.0 and m["new"] == {"x": 1}
    assert m["h"]["edges"] == [0, 1, 2] and m["h"]["counts"] == [1, 2] and m["h"]["n"] == 3
    assert m["h"]["mean"] == pytest.approx(1.2)
    assert (m["h"]["min"], m["h"]["max"]) == (0.5, 1.6)


def test_plain_pipeline_merges_shards_in_intake_order_and_resumes(
    tmp_path: Path, flow_samples: Path
) -> None:
    cfg_path = write_config(tmp_path / "run.yaml", flow_samples, scripts=False)
    from duetflow.config import load_config

    cfg = load_config(cfg_path)
    first = run.run_pipeline(cfg, publish=False)
    intake = next(s for s in first.steps if s.stage == "ingest")
    shards = [s for s in first.steps if s.stage == "process"]
    assert sum(s.found for s in shards) == intake.kept and first.computed("process") == len(shards)
    assert all(1 <= s.found <= 4 for s in shards)
    merged = first.merged[0]
    # inputs = kept + rejected: every intake rejection is carried into the rendered workdir
    rendered = Path(merged.path)
    carried = sum(n for k, n in merged.by_reason.items() if k.startswith("ingest:"))
    assert carried == intake.rejected > 0
    ids = [r["dialogue_id"] for r in manifest.iter_rows(rendered / manifest.DIALOGUES)]
    shard_ids = [
        r["dialogue_id"]
        for s in sorted(shards, key=lambda s: s.index)
        for r in manifest.iter_rows(Path(s.path) / manifest.DIALOGUES)
    ]
    assert ids == shard_ids and len(ids) == merged.kept > 0
    for row in manifest.iter_rows(rendered / manifest.DIALOGUES):
        audio = rendered / row["audio_path"]
        assert audio.is_file() and os.stat(audio).st_nlink >= 1
    stats = json.loads((rendered / "stats.json").read_text())
    assert stats["total"]["rejected"] == merged.rejected
    before = pq.read_table(rendered / manifest.DIALOGUES)
    written = (rendered / manifest.DIALOGUES).stat().st_ino

    second = run.run_pipeline(cfg, publish=False)
    assert second.computed("ingest") == second.computed("process") == 0
    assert second.reused("process") == len(shards)
    assert pq.read_table(rendered / manifest.DIALOGUES).equals(before)
    # the merge of unchanged shards is kept, not written again
    assert second.processed[0].reused and second.processed[0].key == merged.key != ""
    assert (rendered / manifest.DIALOGUES).stat().st_ino == written
    # one shard fewer (a changed shard key): merged anew, the shard's dialogues gone
    fewer = merge.merge_workdirs(merged.label, shards[1:], rendered, stage="process")
    assert not fewer.reused and fewer.key != merged.key
    assert fewer.kept == merged.kept - shards[0].kept


def test_a_failed_run_leaves_no_partial_folders(
    tmp_path: Path, flow_samples: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A render that dies mid-shard, then a merge that dies: no ``*.partial`` folder is left."""
    from duetflow.config import load_config
    from duetflow.pipeline import process

    cfg = load_config(write_config(tmp_path / "run.yaml", flow_samples, scripts=False))
    real = process.process_dialogues
    calls: list[int] = []

    def dies_on_the_second_shard(dialogues, config, out_dir):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 2:
            (Path(out_dir) / "audio").mkdir(parents=True, exist_ok=True)
            raise OSError("disk full")
        return real(dialogues, config, out_dir)

    monkeypatch.setattr(process, "process_dialogues", dies_on_the_second_shard)
    with pytest.raises(OSError, match="disk full"):
        run.run_pipeline(cfg, publish=False)
    workdir = Path(cfg.workdir)
    assert len(calls) == 2 and not list(workdir.rglob("*.partial"))
    monkeypatch.setattr(process, "process_dialogues", real)

    def merge_dies(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise OSError("merge interrupted")

    monkeypatch.setattr(merge, "_merge_stats", merge_dies)
    with pytest.raises(OSError, match="merge interrupted"):
        run.run_pipeline(cfg, publish=False)
    assert (
        not list(workdir.rglob("*.partial")) and not (workdir / "rendered" / "dailytalk").exists()
    )


def test_stable_chunks_keep_shards_when_an_item_is_inserted() -> None:
    items = [f"studio__session_{i:04d}" for i in range(0, 400, 2)]
    before = list(stable_chunks(items, 8, str))
    assert [x for c in before for x in c] == items
    assert all(1 <= len(c) <= 16 for c in before) and 10 <= len(before) <= 45
    after = list(stable_chunks([*items[:101], "studio__session_0203", *items[101:]], 8, str))
    changed = [c for c in after if c not in before]
    assert len(changed) == 1 and "studio__session_0203" in changed[0]
    assert list(stable_chunks(items, 1, str)) == [[x] for x in items]


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="needs /proc to name synced fds")
def test_a_step_is_synced_once_at_its_commit_not_per_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The renderer's writes do not fsync; the step flushes every file once, then writes its
    marker, syncs it, and renames the folder into place."""
    import numpy as np

    from duetflow.audio.io import to_pcm16, write_audio

    synced: list[str] = []
    real = os.fsync

    def spy(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fsync", spy)
    during: list[int] = []

    def build(out: Path) -> StepOutcome:
        for k in range(3):
            write_audio(out / "audio" / f"d{k}.flac", to_pcm16(np.zeros(1600, np.float32)), 16000)
        (out / "dialogues.parquet").write_bytes(b"rows")
        during.append(len(synced))
        return StepOutcome("process", "c", "k", str(out), found=3, kept=3, rejected=0)

    final = tmp_path / "cache" / "process" / "k"
    cache.build_cached(final, build)
    assert during == [0]  # nothing synced while the step ran
    partial = str(final) + ".partial"
    files = [f"{partial}/audio/d{k}.flac" for k in range(3)] + [f"{partial}/dialogues.parquet"]
    assert sorted(p for p in synced if p in files) == sorted(files)  # each file once
    marker = [i for i, p in enumerate(synced) if p.endswith(".result.json.tmp")]
    assert len(marker) == 1 and marker[0] > max(synced.index(f) for f in files)
    assert {partial, f"{partial}/audio", str(final.parent)} <= set(synced)  # folders too
    assert cache.load_outcome(final) is not None


def test_a_rerun_that_reuses_every_step_loads_no_render_or_tts_code(
    tmp_path: Path, flow_samples: Path
) -> None:
    """A reused step costs reading its outcome, not importing the stage's work (scipy, the
    renderer, the TTS stack: ~1 s of a re-run's fixed cost, docs/performance.md)."""
    import subprocess
    import sys

    cfg = write_config(tmp_path / "run.yaml", flow_samples, scripts=False)
    first = run.run_pipeline(load_config(cfg), synthesize=False, publish=False)
    assert first.computed("process") >= 1
    probe = (
        "import sys; from duetflow.config import load_config; from duetflow.pipeline.driver import "
        "run_pipeline; r = run_pipeline(load_config(sys.argv[1]), synthesize=False, publish=False)"
        "; assert r.computed('process') == 0 and r.reused('process') >= 1, r; "
        "print(sorted(m for m in sys.modules if m.startswith(('duetflow.rendering', "
        "'duetflow.tts.voices', 'scipy.signal'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(cfg)], check=True, capture_output=True, text=True
    )
    assert out.stdout.strip() == "[]", out.stdout
