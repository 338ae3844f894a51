"""A tampered or corrupt store gives clear errors (issue 24, item 6).

Each case publishes a real release into a local store, tampers with it the way someone with
write access to the bucket (or a broken disk) could, and runs ``duetflow validate`` and
``duetflow pull``: validate reports the problem (non-zero exit), pull refuses with one line
naming the object and the cause, and leaves nothing in the destination that it could not
verify. No traceback reaches the user.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from chaos_helpers import Cli

from duetflow.hashing import sha256_bytes
from duetflow.release.layout import manifest_key, release_json_key
from duetflow.storage import LocalStore
from release_fixtures import make_workdir, specs

pytestmark = pytest.mark.timeout(300)

RID = "v1"


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with one release (made once, copied by every case)."""
    from duetflow.config import RunConfig
    from duetflow.release.publish import publish

    tmp = tmp_path_factory.mktemp("store-src")
    wd = make_workdir(tmp / "hh", specs(6, prefix="hh", per_source=1))
    (tmp / "no-report").mkdir()
    publish([wd], str(tmp / "store"), RunConfig(), release_id=RID, report_dir=tmp / "no-report")
    return tmp / "store"


def _copy(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst, symlinks=True)
    return dst


def _doc(store: LocalStore) -> dict:
    return json.loads(store.get_bytes(release_json_key(RID)))


def _put_doc(store: LocalStore, doc: dict) -> None:
    store.put_bytes(release_json_key(RID), json.dumps(doc).encode())


def _latest_undecodable(store: LocalStore) -> None:
    store.put_bytes("releases/LATEST", b"v\xff\xfe1\n")


def _manifest_not_parquet(store: LocalStore) -> None:
    """train.parquet replaced by other bytes, and the record updated to match (checksum ok)."""
    key = manifest_key(RID, "train")
    data = b"<html>definitely not parquet</html>\n" * 10
    store.put_bytes(key, data)
    doc = _doc(store)
    for o in doc["objects"]:
        if o["key"] == key:
            o["sha256"], o["size"] = sha256_bytes(data), len(data)
    _put_doc(store, doc)


def _turns_not_parquet(store: LocalStore) -> None:
    key = manifest_key(RID, "turns")
    data = b"PAR1 but only the magic PAR1"
    store.put_bytes(key, data)
    doc = _doc(store)
    for o in doc["objects"]:
        if o["key"] == key:
            o["sha256"], o["size"] = sha256_bytes(data), len(data)
    _put_doc(store, doc)


def _release_id_differs(store: LocalStore) -> None:
    doc = _doc(store)
    doc["release_id"] = "v2"
    _put_doc(store, doc)


def _manifest_map_swapped(store: LocalStore) -> None:
    doc = _doc(store)
    doc["manifests"]["train"] = manifest_key(RID, "test")
    _put_doc(store, doc)


def _objects_wrong_shape(store: LocalStore) -> None:
    doc = _doc(store)
    doc["objects"] = [{"key": 3}, "x"]
    _put_doc(store, doc)


def _release_json_not_utf8(store: LocalStore) -> None:
    store.put_bytes(release_json_key(RID), b'{"release_id": "v1\xff"}')


CASES: dict[str, tuple[Callable[[LocalStore], None], str, str]] = {
    # name: (tamper, release to ask for, words the one-line error must contain)
    "latest_undecodable": (_latest_undecodable, "latest", "releases/LATEST"),
    "manifest_not_parquet": (_manifest_not_parquet, RID, "train.parquet"),
    "turns_not_parquet": (_turns_not_parquet, RID, "turns.parquet"),
    "release_id_differs": (_release_id_differs, RID, "release_id"),
    "manifest_map_swapped": (_manifest_map_swapped, RID, "manifests"),
    "objects_wrong_shape": (_objects_wrong_shape, RID, "objects"),
    "release_json_not_utf8": (_release_json_not_utf8, RID, "RELEASE.json"),
}


def _unverified(dest: Path) -> list[str]:
    """Files in ``dest`` a reader could mistake for a verified pull."""
    if not dest.exists():
        return []
    return sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())


@pytest.mark.parametrize("case", sorted(CASES))
def test_tampered_store_validate_reports_and_pull_refuses(
    cli: Cli, tmp_path: Path, published: Path, case: str
) -> None:
    tamper, release, words = CASES[case]
    root = _copy(published, tmp_path / "store")
    tamper(LocalStore(root))
    res = cli("validate", f"{root}/releases/{release}" if release != "latest" else root)
    assert res.rc != 0, res.text
    assert "Traceback" not in res.text
    assert words in res.text, res.text
    dest = tmp_path / "dest"
    res = cli("pull", "--store", root, "--release", release, "--split", "train", "--dest", dest)
    assert res.rc != 0, res.text
    assert "Traceback" not in res.text
    err = [x for x in res.err.strip().splitlines() if x.strip()]
    assert len(err) == 1 and err[0].startswith("error: ") and words in err[0], res.err
    assert _unverified(dest) == [], _unverified(dest)
