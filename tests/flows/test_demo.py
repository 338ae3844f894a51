"""``duetflow demo``: samples + bundled config + build_dataset + a validated release."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from duetflow.hashing import sha256_file
from duetflow.release.pull import pull
from duetflow.release.validate import validate_release
from duetflow.release.view import ReleaseFilter

pytestmark = [pytest.mark.prefect, pytest.mark.slow]

DUETFLOW = str(Path(sys.executable).with_name("duetflow"))


def test_demo_builds_a_validated_release_and_reruns_from_cache(
    tmp_path: Path, prefect_server: dict[str, str]
) -> None:
    out = tmp_path / "demo"
    cmd = [DUETFLOW, "demo", "--dest", str(out), "--no-progress"]
    first = subprocess.run(
        cmd, env=prefect_server, capture_output=True, text=True, timeout=900, check=False
    )
    assert first.returncode == 0, first.stdout + first.stderr[-3000:]
    match = re.search(r"^release: (rel-[0-9a-f]+)\s+store: (\S+)", first.stdout, re.MULTILINE)
    assert match, first.stdout
    release_id, store = match.groups()
    assert f"validated release {release_id}" in first.stdout
    for corpus in ("dailytalk", "iemocap", "magicdata_ramc", "studio", "ph"):
        assert re.search(rf"^\s+{corpus}\s+kept\s+[1-9]", first.stdout, re.MULTILINE), corpus
    assert (out / "config.yaml").is_file() and (out / "samples" / "truth.json").is_file()
    report = re.search(r"^report: (\S+)", first.stdout, re.MULTILINE)
    assert report and (Path(report.group(1)) / "index.html").is_file()
    validate_release(store, release_id)

    again = subprocess.run(
        cmd, env=prefect_server, capture_output=True, text=True, timeout=600, check=False
    )
    assert again.returncode == 0, again.stdout + again.stderr[-3000:]
    assert f"release: {release_id}" in again.stdout
    assert "ingest 0 computed" in again.stdout and "process 0 computed" in again.stdout

    # issue 27: the filtered pull of the demo's PH test dialogues in Chinese returns exactly
    # those rows, verified (ground truth: the Chinese scripts the demo wrote)
    zh_scripts = {p.stem for p in (out / "samples" / "scripts").glob("zh-*.json")}
    assert zh_scripts
    dest = tmp_path / "ph-zh"
    res = pull(
        store, release_id, "test", dest, where=ReleaseFilter.of(category="PH", language="zh")
    )
    rows = pq.read_table(res.manifest).to_pylist()
    assert {r["dialogue_id"].rsplit("__", 1)[1] for r in rows} == zh_scripts
    assert len(rows) == len(zh_scripts) == res.dialogues
    assert {(r["category"], r["language"], r["split"]) for r in rows} == {("PH", "zh", "test")}
    for r in rows:
        assert sha256_file(dest / r["audio_key"]) == r["sha256"]
    assert {t["dialogue_id"] for t in pq.read_table(dest / "turns.parquet").to_pylist()} == {
        r["dialogue_id"] for r in rows
    }
