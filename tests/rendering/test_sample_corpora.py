"""End to end on the generated sample corpora: ingest -> process -> measure the rendered audio.

Every corpus (DailyTalk clip-per-turn, IEMOCAP two-channel, MagicData-RAMC mono mix and
two-channel) and every studio shape (a file per speaker, one stereo file, a mono mix with
given timings) is rendered with the default config, and every rendered file is checked on its
own audio: at least 98 % of the speaker-change gaps, by the acoustic measure
(:func:`duetflow.audio.edges.measure_gap`, docs/turn-taking.md), lie in the configured window;
an energy instrument written for the tests (``render_signals.pause_edges``) hears at least
98 % of them within 10 ms of the gap the rows report; no gap holds digital zeros where room
tone was laid; both parties measure the same loudness (BS.1770, within 0.5 LU), the true peak
is under the ceiling, and no join jumps by more than half the steepest slope of the speech.
"""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf

from duetflow.audio.edges import DIGITAL_FLOOR, longest_zero_run, measure_gap
from duetflow.audio.gap_tolerance import floor_in_file_db
from duetflow.audio.loudness import measure, true_peak_dbtp
from duetflow.config import RunConfig, build_config
from duetflow.pipeline.commands import process_workdir
from duetflow.pipeline.ingest import ingest
from duetflow.records.manifest import DIALOGUES, REJECTIONS, TURNS, iter_rows
from render_signals import change_pauses, pause_edges

FOLDERS = {
    "dailytalk": "dailytalk",
    "iemocap": "IEMOCAP_full_release",
    "magicdata_ramc": "MagicData-RAMC",
    "studio": "studio",
}
# (corpus, source kind) groups the acceptance names: each must render at least one window
GROUPS = [
    ("dailytalk", "per_turn"),
    ("iemocap", "multichannel"),
    ("magicdata_ramc", "mixed_mono"),
    ("magicdata_ramc", "multichannel"),
    ("studio", "per_speaker"),  # a file per speaker
    ("studio", "multichannel"),  # one stereo file
    ("studio", "mixed_mono"),  # a mono mix with timings (RTTM)
]


Rendered = dict[tuple[str, str], list[tuple[dict[str, Any], list[dict[str, Any]]]]]


@pytest.fixture(scope="module")
def config() -> RunConfig:
    return build_config({})


@pytest.fixture(scope="module")
def rendered(
    sample_root: Path, tmp_path_factory: pytest.TempPathFactory, config: RunConfig
) -> tuple[Path, Rendered]:
    base = tmp_path_factory.mktemp("render-samples")
    intakes = []
    for corpus, folder in FOLDERS.items():
        assert (sample_root / folder).is_dir(), f"sample corpus {folder} was not generated"
        ingest(corpus, sample_root / folder, base / "intake" / corpus, config)
        intakes.append(base / "intake" / corpus)
    out = base / "out"
    report = process_workdir(intakes, out, config)
    assert report.rendered >= len(GROUPS)
    turns: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for t in iter_rows(out / TURNS):
        turns[t["dialogue_id"]].append(t)
    groups: Rendered = defaultdict(list)
    for row in iter_rows(out / DIALOGUES):
        kind = json.loads(row["provenance"])["source_kind"]
        groups[(row["corpus"], kind)].append((row, turns[row["dialogue_id"]]))
    return out, groups


def _change_gaps(
    y: np.ndarray, sr: int, rows: list[dict[str, Any]], floor_db: float | None
) -> list[tuple[float, float | None, float, int]]:
    """Per speaker-change pause between consecutive main turns: (row gap, acoustic gap by
    the edge module against the floor the file records, gap by the tests' own instrument,
    longest run of exact zeros), seconds and samples. Changes the rows report as overlaps (talk
    kept overlapping in a mono mix) have no pause and are skipped."""
    out = []
    digital = floor_db is not None and np.isinf(floor_db)
    for a, b in change_pauses(rows):
        m = measure_gap(
            y,
            sr,
            (a["start_s"] * sr, a["end_s"] * sr),
            (b["start_s"] * sr, b["end_s"] * sr),
            floor=DIGITAL_FLOOR if digital else None,
            floor_db=None if digital else floor_db,
        )
        off, on, _ = pause_edges(y, sr, a["end_s"], b["start_s"])
        zeros = longest_zero_run(y[int(a["end_s"] * sr) : int(b["start_s"] * sr)])
        out.append((b["start_s"] - a["end_s"], None if m is None else m.gap / sr, on - off, zeros))
    return out


def _solo(y: np.ndarray, sr: int, rows: list[dict[str, Any]], speaker: str) -> np.ndarray:
    """One speaker's main-turn audio where no one else's turn (or backchannel) is rendered."""
    own = np.zeros(len(y), dtype=bool)
    other = np.zeros(len(y), dtype=bool)
    for r in rows:
        a, b = int(round(r["start_s"] * sr)), int(round(r["end_s"] * sr))
        if r["speaker"] != speaker:
            other[a:b] = True
        elif r["kind"] == "turn":
            own[a:b] = True
    return y[own & ~other]


def _join_jump(y: np.ndarray, sr: int, rows: list[dict[str, Any]]) -> tuple[float, float]:
    """(largest sample-to-sample jump at the joins, largest inside the turns).

    Every join (a clip's faded edge over the room-tone bed) lies between two consecutive turns:
    the trimmed tail and pad of one, the pad and soft onset of the next.
    """
    mains = sorted((r for r in rows if r["kind"] == "turn"), key=lambda r: r["start_s"])
    d = np.abs(np.diff(y.astype(np.float64)))
    joins, inner = 0.0, 0.0
    for a, b in itertools.pairwise(mains):
        i0, i1 = int(a["end_s"] * sr), int(b["start_s"] * sr)
        if i1 > i0:
            joins = max(joins, float(d[i0:i1].max()))
    for r in mains:
        i0, i1 = int(r["start_s"] * sr), int(r["end_s"] * sr)
        if i1 > i0:
            inner = max(inner, float(d[i0:i1].max()))
    return joins, inner


def test_every_corpus_and_studio_shape_is_rendered(rendered: tuple[Path, Rendered]) -> None:
    _, groups = rendered
    missing = [g for g in GROUPS if not groups.get(g)]
    assert not missing, f"nothing rendered for {missing}; got {sorted(groups)}"


def test_every_speaker_change_gap_holds_on_the_audio(
    rendered: tuple[Path, Rendered], config: RunConfig
) -> None:
    """All groups together (the acceptance counts speaker changes, not dialogues)."""
    out, groups = rendered
    r = config.render
    lo, hi = r.gap_ms_min / 1000, r.gap_ms_max / 1000
    acoustic: list[float | None] = []
    far: list[tuple[str, float, float]] = []  # (dialogue, row gap ms, instrument gap ms)
    holes: list[tuple[str, int]] = []
    for row, rows in (item for items in groups.values() for item in items):
        did = row["dialogue_id"]
        y, sr = sf.read(out / row["audio_path"], dtype="float32")
        prov = json.loads(row["provenance"])
        tone = prov["room_tone"]["used"]
        gaps = _change_gaps(y, sr, rows, floor_in_file_db(prov))
        acoustic += [g for _, g, _, _ in gaps]
        far += [
            (did, round(w * 1e3, 1), round(t * 1e3, 1)) for w, _, t, _ in gaps if abs(t - w) > 0.01
        ]
        if tone:
            holes += [(did, z) for *_, z in gaps if z > sr // 1000]
    assert len(acoustic) >= 100  # the checks saw real changes, not an empty list
    inside = [g for g in acoustic if g is not None and lo - 1e-4 <= g <= hi + 1e-4]
    assert len(inside) >= 0.98 * len(acoustic), sorted(
        round(g * 1000, 1) if g is not None else -1.0 for g in acoustic
    )
    assert len(far) <= 0.02 * len(acoustic), f"row gaps the instrument hears 10+ ms apart: {far}"
    assert not holes, f"digital zeros (samples) in a gap where room tone was laid: {holes}"


@pytest.mark.parametrize("group", GROUPS, ids=[f"{c}-{k}" for c, k in GROUPS])
def test_rendered_audio_meets_the_acceptance(
    rendered: tuple[Path, Rendered], config: RunConfig, group: tuple[str, str]
) -> None:
    out, groups = rendered
    items = groups.get(group, [])
    assert items, f"nothing rendered for {group}"
    r = config.render
    for row, rows in items:
        did = row["dialogue_id"]
        y, sr = sf.read(out / row["audio_path"], dtype="float32")
        assert sr == config.sample_rate and y.ndim == 1
        assert len(change_pauses(rows)) >= 3, did

        la = measure(_solo(y, sr, rows, row["speaker_a"]), sr).lufs
        lb = measure(_solo(y, sr, rows, row["speaker_b"]), sr).lufs
        assert abs(la - lb) <= r.loudness_tolerance_lu, (did, la, lb)
        assert abs(la - r.loudness_target_lufs) <= 1.0, (did, la)

        assert true_peak_dbtp(y, sr) <= r.true_peak_ceiling_dbtp + 1e-3, did

        # a cut through speech without a fade jumps by the speech amplitude; faded joins over
        # room tone stay well under the steepest slope of the speech itself
        joins, inner = _join_jump(y, sr, rows)
        assert joins <= 0.5 * inner, (did, joins, inner)


def test_source_rate_resampling_and_licence_are_recorded_per_dialogue(
    rendered: tuple[Path, Rendered], config: RunConfig
) -> None:
    """Against what the generators wrote: DailyTalk clips at 44.1 kHz, IEMOCAP and RAMC at
    16 kHz, studio mic tracks at 16 kHz and the system line-out at 24 kHz."""
    from duetflow.corpora import get_adapter
    from duetflow.demo import dailytalk, iemocap, magicdata_ramc, studio

    written = {
        "dailytalk": dailytalk.SR,
        "iemocap": iemocap.SR,
        "magicdata_ramc": magicdata_ramc.SR,
    }
    out_rate = config.sample_rate
    for (corpus, kind), items in rendered[1].items():
        for row, _ in items:
            prov = json.loads(row["provenance"])
            files = [Path(f).name for f in prov["source_files"]]
            if corpus == "studio":
                rates = {studio.SAMPLE_RATE} | (
                    {studio.LINE_OUT_RATE} if "system.wav" in files else set()
                )
                assert row["licence"] == config.studio.licence
            else:
                rates = {written[corpus]}
                assert row["licence"] == get_adapter(corpus).licence
            assert row["source_sample_rate"] == max(rates), (corpus, kind, files)
            assert row["sample_rate"] == out_rate
            if rates == {out_rate}:
                assert prov["resampling"] is None
            else:
                assert prov["resampling"] == {
                    "from_hz": sorted(rates),
                    "to_hz": out_rate,
                    "method": "soxr HQ",
                }
    assert any(r["source_sample_rate"] == 44100 for r, _ in rendered[1][("dailytalk", "per_turn")])


def test_rendered_lengths_and_turn_taking_truth(
    rendered: tuple[Path, Rendered], sample_root: Path, config: RunConfig
) -> None:
    """Every rendered file lasts window.min_s–max_s by its own header; the sample windows that
    hold planted terminal overlaps (IEMOCAP two-channel, RAMC mono and stereo) are rendered;
    every window holding a planted interruption is rejected for it."""
    out, groups = rendered
    truth = json.loads((sample_root / "truth.json").read_text(encoding="utf-8"))
    windows: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for items in groups.values():
        for row, _ in items:
            info = sf.info(out / row["audio_path"])
            assert config.window.min_s <= info.duration <= config.window.max_s, (
                row["dialogue_id"],
                info.duration,
            )
            w = json.loads(row["provenance"])["window"]
            windows[row["source_id"]].append((w[0], w[1]))
    with_terminal = 0
    for entry in truth["dialogues"].values():
        spans = windows.get(entry["source_id"], [])
        for p in entry.get("terminal_overlaps", []):
            with_terminal += any(a < p["time"] < b for a, b in spans)
        for p in entry["interruptions"]:
            assert not any(a <= p["time"] < b for a, b in spans), (entry["source_id"], p)
    assert with_terminal >= 4
    reasons = {r["reason"] for r in iter_rows(out / REJECTIONS)}
    assert "interruption" in reasons
