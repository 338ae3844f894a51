"""One pipeline, two executors: a plain run and a Prefect run publish the same bytes.

Everything a release holds is compared (manifests, audio, splits, stats, report/, RELEASE.json,
CLAIM.json) and the report each run leaves in its work directory: the two runs differ in work
directory, store, shard size and worker count, none of which is content.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from duetflow.config import load_config
from duetflow.flows import build_dataset
from duetflow.pipeline import driver as run
from flow_helpers import release_content, tree_digest, write_config

pytestmark = [pytest.mark.prefect, pytest.mark.slow]


def test_plain_and_flow_runs_publish_byte_identical_releases_with_their_report(
    tmp_path: Path, flow_samples: Path, prefect_server: dict[str, str]
) -> None:
    (tmp_path / "plain").mkdir()
    (tmp_path / "flow").mkdir()
    plain_cfg = load_config(
        write_config(tmp_path / "plain" / "run.yaml", flow_samples,
                     runner={"max_workers": 1, "shard_size": 2})
    )  # fmt: skip
    flow_path = write_config(
        tmp_path / "flow" / "run.yaml", flow_samples, runner={"max_workers": 2, "shard_size": 3}
    )

    plain = run.run_pipeline(plain_cfg)
    flow = build_dataset(config=str(flow_path))

    assert plain.release is not None and flow.release_id == plain.release.release_id
    plain_release = release_content(Path(plain_cfg.release.store), plain.release.release_id)
    flow_release = release_content(Path(flow.store), flow.release_id)
    assert plain_release == flow_release
    assert {"RELEASE.json", "CLAIM.json", "report/report.json", "report/index.html"} <= set(
        plain_release
    )
    assert tree_digest(Path(plain_cfg.workdir) / "report") == tree_digest(
        Path(flow.workdir) / "report"
    )

    # the report is the release's own: its id and every split of the published manifests
    rel = Path(flow.store) / "releases" / flow.release_id
    report = json.loads((rel / "report" / "report.json").read_text())
    assert report["provenance"]["release_id"] == flow.release_id
    doc = json.loads((rel / "RELEASE.json").read_text())
    by_split: dict[str, int] = {}
    for row in report["counts"]:
        if row["split"] in ("train", "val", "test"):
            by_split[row["split"]] = by_split.get(row["split"], 0) + row["dialogues"]
    assert by_split == {s: doc["counts"][s] for s in ("train", "val", "test") if doc["counts"][s]}
