"""A full disk during a stage: a clear error naming the file, nothing partial left, and the
re-run after freeing space gives the same bytes as a run that never ran out.

The real case runs the pipeline in a small tmpfs (``mount -t tmpfs``, root only) filled to a
chosen level; the injected cases make the writers fail with ENOSPC where no mount is allowed.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from duetflow.audio import io as audio_io
from duetflow.errors import DiskFullError
from duetflow.flows.runner import resolve_config
from duetflow.pipeline.driver import run_pipeline
from flow_helpers import write_config


def _tree(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root``, by relative path (folders as "dir")."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        out[rel] = "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _no_partial_output(work: Path) -> None:
    """No ``.partial`` folder, no temporary file, and every step folder is committed."""
    names = [p.relative_to(work).as_posix() for p in work.rglob("*")]
    assert not [n for n in names if ".partial" in n or n.endswith(".tmp")], names
    for stage in (work / "cache").glob("*"):
        for step in stage.iterdir():
            assert (step / "result.json").is_file(), step


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 16 MiB tmpfs of its own (skipped where mounting is not allowed: the injected tests
    below cover those machines)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill(mnt: Path, leave: int) -> Path:
    """Fill ``mnt`` so that about ``leave`` bytes stay free; returns the filler file."""
    st = os.statvfs(mnt)
    free = st.f_bavail * st.f_frsize
    filler = mnt / "filler"
    with open(filler, "wb") as f:
        f.write(b"\0" * max(0, free - leave))
    return filler


@pytest.mark.slow
def test_a_full_disk_in_any_stage_is_named_cleaned_and_resumable(
    tmp_path: Path, flow_samples: Path, tmpfs: Path
) -> None:
    cfg = resolve_config(
        str(write_config(tmp_path / "run.yaml", flow_samples, scripts=False)),
        workdir=str(tmpfs / "work"),
    )
    work = Path(cfg.workdir)
    run_pipeline(cfg, publish=False, synthesize=False)
    reference = _tree(work)
    shutil.rmtree(work)
    failed_in = set()
    # 8 KiB: the ingest's first tables do not fit; 1 MiB: ingest fits, rendering does not
    for leave in (8 << 10, 1 << 20):
        filler = _fill(tmpfs, leave)
        with pytest.raises(DiskFullError) as e:
            run_pipeline(cfg, publish=False, synthesize=False)
        message = str(e.value)
        assert message.startswith(str(work)) and "disk full (No space left on device" in message
        assert "\n" not in message
        failed_in.add(Path(e.value.path).relative_to(work).parts[:2])
        _no_partial_output(work)
        filler.unlink()
    assert len(failed_in) == 2, failed_in  # two different stages ran out
    run_pipeline(cfg, publish=False, synthesize=False)  # space freed: resume
    assert _tree(work) == reference


def test_libsndfiles_system_error_on_a_full_disk_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Injected: libsndfile fails with its errno-less "System error." and the folder's file
    system reports no room (what a full disk looks like to the writer)."""
    real_write = sf.SoundFile.write

    def failing_write(self: sf.SoundFile, data: object) -> None:
        real_write(self, data)
        raise sf.LibsndfileError(2)  # SFE_SYSTEM, as a failed write(2) gives

    class Full:
        f_bavail, f_frsize = 0, 4096

    monkeypatch.setattr(sf.SoundFile, "write", failing_write)
    monkeypatch.setattr(audio_io.os, "statvfs", lambda _p: Full())
    target = tmp_path / "audio" / "x.flac"
    with pytest.raises(DiskFullError, match=f"^{target}: disk full"):
        audio_io.write_audio(target, np.zeros(1600, np.float32), 16000)
    assert list(target.parent.iterdir()) == []  # no temporary file left
    # the same libsndfile failure with room left is not called a full disk
    monkeypatch.setattr(audio_io.os, "statvfs", lambda _p: type("Room", (), {
        "f_bavail": 1 << 20, "f_frsize": 4096})())  # fmt: skip
    with pytest.raises(sf.LibsndfileError):
        audio_io.write_audio(target, np.zeros(1600, np.float32), 16000)


def test_enospc_in_a_step_is_a_disk_full_error_and_leaves_no_partial(
    tmp_path: Path, flow_samples: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Injected ENOSPC from the table writer (pyarrow's wording) in the process stage."""
    cfg = resolve_config(str(write_config(tmp_path / "run.yaml", flow_samples, scripts=False)))
    from duetflow.records import manifest

    real_init = manifest.TableWriter.__init__

    def failing_init(self: object, path: Path, *a: object, **k: object) -> None:
        if "process" in Path(path).parts[-3]:
            raise OSError(
                errno.ENOSPC, "Error writing bytes to file. Detail: [errno 28] No space left"
            )
        real_init(self, path, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(manifest.TableWriter, "__init__", failing_init)
    with pytest.raises(DiskFullError, match="disk full") as e:
        run_pipeline(cfg, publish=False, synthesize=False)
    assert "cache/process/" in e.value.path
    _no_partial_output(Path(cfg.workdir))


def test_oserror_wordings_of_a_full_disk() -> None:
    pyarrow_style = OSError("Error writing bytes to file. Detail: [errno 28] No space left")
    pyarrow_style.errno = None  # type: ignore[assignment]
    assert DiskFullError.of(pyarrow_style, "/w/x.parquet") is not None
    quota = OSError(errno.EDQUOT, os.strerror(errno.EDQUOT), "/w/a.flac")
    full = DiskFullError.of(quota, "/w")
    assert full is not None and full.path == "/w/a.flac" and "quota" in str(full).lower()
    assert DiskFullError.of(OSError(errno.EACCES, "Permission denied"), "/w") is None
    assert DiskFullError.of(ValueError("No space left on device"), "/w") is None


@pytest.mark.slow
def test_the_cli_says_disk_full_without_a_traceback(
    tmp_path: Path, flow_samples: Path, tmpfs: Path
) -> None:
    cfg = write_config(tmp_path / "run.yaml", flow_samples, scripts=False)
    _fill(tmpfs, 1 << 20)
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "PREFECT_HOME")}
    env.update(HOME=str(tmp_path / "user"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    done = subprocess.run(
        [str(Path(sys.executable).with_name("duetflow")), "run", "-c", str(cfg),
         "--workdir", str(tmpfs / "work"), "--no-publish", "--no-synth", "--no-progress"],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: {tmpfs / 'work'}/") and ": disk full (" in last, last
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    _no_partial_output(tmpfs / "work")
