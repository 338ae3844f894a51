"""The bounded transfer pool and RELEASE.json written without a dict per object."""

from __future__ import annotations

import json
import threading
import time

import pytest

from duetflow.release.release_json import json_bytes, release_json
from duetflow.storage.parallel import bounded_map


def test_bounded_map_returns_every_result_and_never_holds_more_than_the_window() -> None:
    lock = threading.Lock()
    submitted = 0
    finished = 0
    most_ahead = 0

    def items():  # counts how far submission runs ahead of the finished calls
        nonlocal submitted, most_ahead
        for i in range(200):
            with lock:
                submitted += 1
                most_ahead = max(most_ahead, submitted - finished)
            yield i

    def work(i: int) -> int:
        nonlocal finished
        time.sleep(0.0005)
        with lock:
            finished += 1
        return i * i

    out = sorted(bounded_map(work, items(), workers=4, window=8))
    assert out == [i * i for i in range(200)]
    assert most_ahead <= 8 + 1  # the window, plus the item being drawn


def test_bounded_map_raises_the_first_failure_and_cancels_the_rest() -> None:
    started: list[int] = []

    def work(i: int) -> int:
        started.append(i)
        if i == 3:
            raise OSError("disk full on item 3")
        time.sleep(0.001)
        return i

    with pytest.raises(OSError, match="item 3"):
        list(bounded_map(work, range(1000), workers=2, window=4))
    assert len(started) < 50  # nothing like the 1,000 queued up front


@pytest.mark.parametrize("n", [0, 1, 3])
def test_release_json_is_the_same_bytes_as_json_dumps_of_the_whole_document(n: int) -> None:
    objects = [
        (f"audio/{i:02x}/{'ab' * 32}.flac" if i else 'releases/r "ü"/x\\y.json', "cd" * 32, 10**i)
        for i in range(n)
    ]
    doc = {"release_id": "r1", "counts": {"train": 2}, "workdirs": ["wd ü"], "zz": [], "a": 1}
    expected = json_bytes(
        {**doc, "objects": [{"key": k, "sha256": s, "size": z} for k, s, z in objects]}
    )
    assert release_json(doc, objects) == expected
    assert json.loads(expected)["objects"] == [
        {"key": k, "sha256": s, "size": z} for k, s, z in objects
    ]
