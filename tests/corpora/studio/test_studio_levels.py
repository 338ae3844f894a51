"""Signal levels real recordings have (issue 24, item 7): a DC offset, a float track over full
scale, a hard-clipped track.

Real session folders (float WAV written with soundfile, so values over 1.0 survive) go through
the studio adapter's VAD path (no transcript). Ground truth is the turn plan the tracks were
built from: the clean session finds it, and so must every level variant; the other speaker's
turns never vanish because one track is offset or loud. A clipped track is one named
rejection. DC-free input passes through the DC removal bit-identical.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from duetflow.audio.levels import DcTracker, Headroom
from duetflow.corpora import get_adapter
from duetflow.records.dialogue import Dialogue, Rejection
from studio_helpers import NO_STATE, PLAN, SR, tracks, write_session

IDS = ("user", "system")


def _session(root: Path, name: str, a: np.ndarray, b: np.ndarray) -> None:
    folder = write_session(root / name, session_id=name)
    sf.write(folder / "a.wav", a, SR, subtype="FLOAT")
    sf.write(folder / "b.wav", b, SR, subtype="FLOAT")


VARIANTS = {
    "clean": lambda a, b: (a, b),
    "dc_on_a": lambda a, b: (a + 0.2, b),
    "dc_on_b": lambda a, b: (a, b + 0.5),
    "dc_opposite": lambda a, b: (a - 0.3, b + 0.3),
    "dc_drifting": lambda a, b: (a + np.linspace(0.10, 0.13, len(a), dtype=np.float32), b),
    "a_over_full_scale": lambda a, b: (a * 8, b),
    "b_over_full_scale": lambda a, b: (a, b * 30),  # its leak of A is louder than A itself
    "over_full_scale_and_dc": lambda a, b: (a * 8 + 0.5, b),
}


def _turns(d: Dialogue) -> list[tuple[str, float, float]]:
    return [(t.speaker, t.start, t.end) for t in d.turns]


@pytest.fixture(scope="module")
def scanned(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Dialogue | Rejection]:
    root = tmp_path_factory.mktemp("levels") / "studio"
    a, b = tracks(0)
    for name, make in VARIANTS.items():
        xa, xb = make(a.copy(), b.copy())
        _session(root, name, xa.astype(np.float32), xb.astype(np.float32))
    clipped_a = np.clip(a * 40.0, -1.0, 1.0)  # a hard-clipped integer recording
    _session(root, "clipped", clipped_a.astype(np.float32), b)
    adapter = get_adapter("studio")(root, NO_STATE)
    return {
        (i.source_id if isinstance(i, Dialogue) else i.item_id.split("__", 1)[1]): i
        for i in adapter.scan()
    }


def test_clean_session_finds_the_plan(scanned: dict[str, Dialogue | Rejection]) -> None:
    d = scanned["clean"]
    assert isinstance(d, Dialogue), d
    got = _turns(d)
    assert [s for s, _, _ in got] == [IDS[w] for w, _, _ in PLAN]
    for (_, s, e), (_, ps, pe) in zip(got, PLAN, strict=True):
        assert abs(s - ps) < 0.05 and abs(e - pe) < 0.05


@pytest.mark.parametrize("variant", sorted(set(VARIANTS) - {"clean"}))
def test_levels_never_lose_or_invent_turns(
    scanned: dict[str, Dialogue | Rejection], variant: str
) -> None:
    d, clean = scanned[variant], scanned["clean"]
    assert isinstance(d, Dialogue) and isinstance(clean, Dialogue), d
    got, want = _turns(d), _turns(clean)
    assert [s for s, _, _ in got] == [s for s, _, _ in want], got
    for (_, s, e), (_, ws, we) in zip(got, want, strict=True):
        assert abs(s - ws) <= 0.05 and abs(e - we) <= 0.05, (got, want)


def test_a_clipped_track_is_one_rejection_naming_the_cause(
    scanned: dict[str, Dialogue | Rejection],
) -> None:
    r = scanned["clipped"]
    assert isinstance(r, Rejection) and r.reason == "unusable_track", r
    assert "a.wav" in r.detail and "clipped at full scale" in r.detail and "'user'" in r.detail


def test_dc_free_input_passes_bit_identical() -> None:
    for seed in range(10):
        for x in tracks(seed):
            dc = DcTracker(SR)
            for i in range(0, len(x), 8192):
                block = x[i : i + 8192].astype(np.float32)
                assert dc(block) is block  # not even copied
            head = Headroom()
            assert head.pcm16(x) == (np.clip(x, -1, 1) * 32767.0).astype("<i2").tobytes()


def test_dc_removal_does_not_depend_on_block_size() -> None:
    a, _ = tracks(3)
    x = (a + np.linspace(0.1, 0.13, len(a))).astype(np.float32)
    outs = []
    for size in (SR, SR + 1234, len(x)):  # blocks of a second or more
        dc = DcTracker(SR)
        outs.append(np.concatenate([dc(x[i : i + size]) for i in range(0, len(x), size)]))
    assert np.allclose(outs[0], outs[1], atol=1e-6) and np.allclose(outs[1], outs[2], atol=1e-6)
    assert abs(float(np.mean(outs[2]))) < 5e-3  # the offset (0.1 and more) is gone
