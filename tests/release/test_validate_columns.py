"""``duetflow validate`` on a release whose manifest lost a column: a problem, not a crash."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from duetflow.cli import main
from release_fixtures import make_workdir, specs


def _drop_column(store: Path, release: str, manifest: str, column: str) -> str:
    """Rewrite one manifest of a published release without ``column`` and record the new file
    in RELEASE.json (size + sha256), so only the column, not a checksum, is wrong. Returns the
    manifest's store key."""
    doc_path = store / "releases" / release / "RELEASE.json"
    doc = json.loads(doc_path.read_text(encoding="utf-8"))
    entry = next(o for o in doc["objects"] if o["key"].endswith(f"/{manifest}.parquet"))
    path = store / entry["key"]
    table = pq.read_table(path)
    assert column in table.schema.names
    pq.write_table(table.drop_columns([column]), path)
    data = path.read_bytes()
    entry["size"], entry["sha256"] = len(data), hashlib.sha256(data).hexdigest()
    doc_path.write_text(json.dumps(doc), encoding="utf-8")
    return str(entry["key"])


@pytest.mark.parametrize(("manifest", "column"), [("dialogues", "gain_db_a"), ("turns", "kind")])
def test_validate_names_the_manifest_and_the_missing_column(
    tmp_path: Path, manifest: str, column: str
) -> None:
    wd = make_workdir(tmp_path / "wd", specs(4, per_source=1))
    store = tmp_path / "store"
    args = ["publish", "--workdir", str(wd), "--store", str(store), "--release", "r1"]
    assert CliRunner().invoke(main, args).exit_code == 0
    key = _drop_column(store, "r1", manifest, column)
    exe = shutil.which("duetflow", path=str(Path(sys.executable).parent))
    assert exe is not None
    proc = subprocess.run(
        [exe, "validate", f"{store}/releases/r1"], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    problems = [ln for ln in proc.stderr.splitlines() if ln.startswith("problem:")]
    # one problem: the missing column, named on its manifest, not pandera's echo of it as well
    assert len(problems) == 1, proc.stderr
    assert key in problems[0] and f"missing column(s) {column}" in problems[0], proc.stderr
    assert "checksum" not in proc.stderr  # RELEASE.json matches: only the column is wrong
