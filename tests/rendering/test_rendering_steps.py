"""Each rendering step on its own: constructed inputs whose answer is known by construction.

End-to-end properties of a rendered file are in the other modules of this folder; here every
step of :mod:`duetflow.rendering` is called directly: reading a window's tracks, trimming
bounds, room tone and floors, the confirmed gaps as rows report them, and the records.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from duetflow.acoustics.blocks import Block
from duetflow.acoustics.extent_bounds import (
    block_bounds,
    quietest_point,
    same_track_bounds,
    sample_span,
)
from duetflow.acoustics.window import Track, track_view, window_floor, window_floor_again
from duetflow.audio import edges
from duetflow.audio import loudness as ld
from duetflow.config import RenderConfig, RunConfig
from duetflow.errors import InputError
from duetflow.records.dialogue import (
    AudioSource,
    Category,
    Dialogue,
    MixedMonoSource,
    MultichannelSource,
    PerSpeakerSource,
    PerTurnSource,
    Speaker,
    Turn,
)
from duetflow.records.rows import RenderedTurnRow
from duetflow.rendering.gaps import measured_gaps_ms, rows_at_changes
from duetflow.rendering.mixdown import Change, Mix
from duetflow.rendering.roomtone import (
    Tone,
    describe_tone,
    file_floor,
    find_tone,
)
from duetflow.rendering.rows import Rendering, dialogue_record, ordered_turn_rows, turn_row
from duetflow.rendering.source_rate import source_rate
from duetflow.rendering.sources import load_mixed, load_separable, source_turns

SR = 8000


def _dialogue(
    turns: tuple[Turn, ...],
    source: AudioSource | None = None,
    window: tuple[float, float] | None = None,
    duration_s: float = 10.0,
) -> Dialogue:
    return Dialogue(
        id="d1",
        corpus="test",
        source_id="s1",
        category=Category.HH,
        language="en",
        topic="tests",
        speakers=(Speaker("A"), Speaker("B")),
        turns=turns,
        source=source or MixedMonoSource("unused.wav"),
        duration_s=duration_s,
        window=window,
    )


def _close(got: object, want: object) -> None:
    np.testing.assert_allclose(
        np.asarray(got, dtype=float), np.asarray(want, dtype=float), atol=1e-9
    )


def _noise(n: int, db: float, seed: int) -> np.ndarray:
    """White noise whose mean power is ``db`` dBFS."""
    x = np.random.default_rng(seed).standard_normal(n)
    return (x / np.sqrt(np.mean(x**2)) * 10 ** (db / 20)).astype(np.float32)


# --- sources: reading a window's tracks ---------------------------------------------------------


def test_window_relative_turns_move_onto_the_source_timeline() -> None:
    rel = (Turn("A", 0.2, 1.0), Turn("B", 1.5, 2.5, annotated=(1.4, 2.6)))
    got = source_turns(_dialogue(rel, window=(10.0, 13.0)))
    _close([(t.start, t.end) for t in got], [(10.2, 11.0), (11.5, 12.5)])
    assert got[1].annotated == pytest.approx((11.4, 12.6))
    absolute = (Turn("A", 10.2, 11.0), Turn("B", 11.5, 12.5))
    assert source_turns(_dialogue(absolute, window=(10.0, 13.0))) == absolute
    with pytest.raises(InputError) as e:  # inside neither the window nor its length
        source_turns(_dialogue((Turn("A", 5.0, 9.0),), window=(10.0, 13.0)))
    assert e.value.reason == "bad_window"


def test_a_channel_per_speaker_reads_only_the_window_plus_context(tmp_path: Path) -> None:
    n = 4 * SR
    data = np.stack([np.linspace(-0.5, 0.5, n), np.linspace(0.4, -0.4, n)], axis=1)
    path = tmp_path / "two.wav"
    sf.write(path, data.astype(np.float32), SR, subtype="FLOAT")
    turns = (Turn("A", 1.2, 1.6), Turn("B", 1.7, 1.9))
    src = MultichannelSource(str(path), {"A": 1, "B": 0})
    d = _dialogue(turns, src, window=(1.0, 2.0), duration_s=4.0)
    tracks, files = load_separable(d, turns, SR, 0.5)
    assert files == {str(path): SR}
    a, b = tracks["A"], tracks["B"]
    assert a.t0 == b.t0 == pytest.approx(0.5)
    assert a.n == b.n == SR * 2  # 0.5 .. 2.5 s, nothing more
    np.testing.assert_allclose(a.samples, data[SR // 2 : SR // 2 + 2 * SR, 1], atol=1e-6)
    np.testing.assert_allclose(b.samples, data[SR // 2 : SR // 2 + 2 * SR, 0], atol=1e-6)
    assert a.recording == (str(path), 1)
    assert a.index(1.2, SR) == round(0.7 * SR)


def test_a_file_that_ends_before_its_turn_is_truncated_audio(tmp_path: Path) -> None:
    path = tmp_path / "short.wav"
    sf.write(path, np.zeros(2 * SR, dtype=np.float32), SR)
    turns = (Turn("A", 0.5, 1.0), Turn("B", 1.2, 2.5))  # the file ends at 2.0 s
    with pytest.raises(InputError) as e:
        load_mixed(_dialogue(turns, MixedMonoSource(str(path))), MixedMonoSource(str(path)),
                   turns, SR, 0.5)  # fmt: skip
    assert e.value.reason == "truncated_audio"
    assert "short.wav" in str(e.value)


def test_clips_land_on_their_speakers_tracks_with_gaps_between(tmp_path: Path) -> None:
    paths = []
    for k, level in enumerate((0.1, 0.2, 0.3)):
        p = tmp_path / f"clip{k}.wav"
        sf.write(p, np.full(SR // 2, level, dtype=np.float32), SR, subtype="FLOAT")
        paths.append(str(p))
    # clips laid end to end: A 0-0.5, B 0.5-1.0, A 1.0-1.5
    turns = (Turn("A", 0.0, 0.5), Turn("B", 0.5, 1.0), Turn("A", 1.0, 1.5))
    src = PerTurnSource(tuple(paths))
    tracks, files = load_separable(_dialogue(turns, src, duration_s=1.5), turns, SR, 0.0)
    assert files == {p: SR for p in paths}
    a, b = tracks["A"], tracks["B"]
    _close(a.pieces, [(0.0, 0.5), (1.0, 1.5)])
    _close(b.pieces, [(0.5, 1.0)])
    _close(b.gaps, [(0.0, 0.5), (1.0, 1.5)])
    assert a.samples[SR // 4] == pytest.approx(0.1)
    assert a.samples[SR + SR // 4] == pytest.approx(0.3)
    assert not np.any(a.samples[SR // 2 + 10 : SR - 10])  # B's clip is not on A's track
    assert b.samples[SR // 2 + SR // 4] == pytest.approx(0.2)


# --- trim: where each extent may lie -------------------------------------------------------------


def test_sample_span_rounds_a_fractional_extent() -> None:
    assert sample_span(edges.Extent(10.4, 20.6, -20.0, -25.0)) == (10, 21)


def test_a_turn_s_edges_stop_at_the_middle_of_the_pause_and_its_clip() -> None:
    sr = 1000
    turns = [Turn("A", 1.0, 2.0), Turn("A", 2.4, 3.0), Turn("B", 1.9, 2.6)]
    track = Track(np.zeros(5 * sr, dtype=np.float32), t0=0.5)
    lo, hi = same_track_bounds(turns, [0, 1], 0, track, sr)
    assert lo == pytest.approx(0.0)  # the search reach (0.5 s) before 1.0 s, at the track start
    assert hi == pytest.approx((2.2 - 0.5) * sr)  # the middle of A's own pause; B is no bound
    clipped = replace(track, pieces=((0.9, 2.1),))
    assert same_track_bounds(turns, [0, 1], 0, clipped, sr) == pytest.approx(
        ((0.9 - 0.5) * sr, (2.1 - 0.5) * sr)
    )


def test_the_quietest_frame_is_found() -> None:
    x = np.full(SR, 0.5, dtype=np.float32)
    frame = SR // 200  # 5 ms
    x[1000 + 3 * frame : 1000 + 4 * frame] = 0.0
    assert quietest_point(x, 1000, 1000 + 10 * frame, SR) == 1000 + 3 * frame + frame // 2
    assert quietest_point(x, 1000, 1010, SR) == 1005  # shorter than a frame: its middle


def test_blocks_are_cut_at_the_quietest_point_of_an_overlap_else_mid_pause() -> None:
    x = np.full(8 * SR, 0.5, dtype=np.float32)
    quiet = int(1.9 * SR) - int(0.02 * SR) + 10 * (SR // 200)  # a frame inside the overlap
    x[quiet : quiet + SR // 200] = 0.0
    track = Track(x, t0=0.0)
    blocks = [
        Block(1.0, 2.0, (0,), "A", "A"),
        Block(1.9, 3.0, (1,), "B", "B"),  # latched: overlaps the previous by 0.1 s
        Block(3.4, 4.0, (2,), "A", "A"),  # 0.4 s after: cut at the middle of the pause
        Block(6.0, 7.0, (3,), "B", "B"),  # 2 s after: each keeps its search reach
    ]
    cut = (quiet + SR // 400) / SR
    _close(block_bounds(track, blocks, SR), [(0.5, cut), (cut, 3.2), (3.2, 4.5), (5.5, 7.5)])


# --- room tone and floors -----------------------------------------------------------------------


def test_the_floor_after_marking_crosstalk_is_the_floor_found_anew() -> None:
    """The floor kept when the crosstalk blocks no clear frame equals the one found again; one
    that blocks clear frames is found again (its floor and the frames it counts change)."""
    rng = np.random.default_rng(4)
    x = _noise(6 * SR, -50.0, 1)
    x[: 3 * SR] *= np.float32(3.0)  # a louder first half: blocking it moves the floor
    t = np.arange(SR) / SR
    for a in (1.0, 3.5):
        x[int(a * SR) : int(a * SR) + SR] += (0.1 * np.sin(2 * np.pi * 300 * t)).astype(np.float32)
    turns = [Turn("A", 1.0, 2.0), Turn("A", 3.5, 4.5)]
    track = Track(x, t0=0.0)
    d = _dialogue(tuple(turns), window=(0.0, 6.0), duration_s=6.0)
    kept = 0
    for trial in range(40):
        v = track_view(d, track, turns, SR)
        found = window_floor(track, v, SR)
        blocked = rng.random(v.n_frames) < rng.uniform(0.0, 0.9)
        if trial % 2 == 0:
            blocked &= ~v.clear  # blocks only frames no floor reads
        v.blocked = blocked
        got = window_floor_again(track, v, SR, found, None)
        assert got == window_floor(track, v, SR)
        kept += got is found
    assert 0 < kept < 40
    v = track_view(d, track, turns, SR)
    found = window_floor(track, v, SR)
    v.blocked = v.clear.copy()
    v.blocked[v.n_frames // 2 :] = False  # the louder half's background blocked: a lower floor
    got = window_floor_again(track, v, SR, found, None)
    assert got == window_floor(track, v, SR)
    assert got[0] is not None and found[0] is not None and got[0].db < found[0].db - 3.0


def test_the_window_floor_is_the_level_of_its_background() -> None:
    x = _noise(6 * SR, -50.0, 1)
    t = np.arange(SR) / SR
    for a in (1.0, 3.5):  # two 1 s "turns" 20 dB above the noise
        x[int(a * SR) : int(a * SR) + SR] += (0.1 * np.sin(2 * np.pi * 300 * t)).astype(np.float32)
    turns = [Turn("A", 1.0, 2.0), Turn("A", 3.5, 4.5)]
    track = Track(x, t0=0.0)
    d = _dialogue(tuple(turns), window=(0.0, 6.0), duration_s=6.0)
    v = track_view(d, track, turns, SR)
    floor, rec = window_floor(track, v, SR)
    assert rec is None and floor is not None and not floor.digital
    assert floor.db == pytest.approx(-50.0, abs=1.5)
    tone = find_tone("A", track, v, floor, [(1.0 * SR, 2.0 * SR), (3.5 * SR, 4.5 * SR)], None,
                     SR, np.random.default_rng(0))  # fmt: skip
    assert tone is not None and tone.origin == "window" and tone.speaker == "A"
    assert len(tone.samples) >= SR  # the pauses hold more than a second of it
    level = 10 * np.log10(np.mean(np.square(tone.samples, dtype=np.float64)))
    assert level == pytest.approx(-50.0, abs=1.5)  # tone at the background's level, no speech


def test_the_file_floor_is_the_loudest_background_after_gain_when_tone_is_laid() -> None:
    on, off = RenderConfig(room_tone=True), RenderConfig(room_tone=False)
    tone = Tone(np.zeros(SR, dtype=np.float32), "window", "B")
    post = [edges.Floor(-60.0, -62.0), edges.Floor(-50.0, -52.0), edges.DIGITAL_FLOOR]
    assert file_floor(on, post, tone) == -50.0
    assert file_floor(off, post, tone) is None
    assert file_floor(on, post, None) is None
    assert file_floor(on, [edges.DIGITAL_FLOOR], tone) is None


def test_the_room_tone_record_says_what_was_laid_or_why_not() -> None:
    on, off = RenderConfig(room_tone=True), RenderConfig(room_tone=False)
    tone = Tone(np.zeros(SR // 2, dtype=np.float32), "recording", "B")
    assert describe_tone(on, tone, -51.234, SR) == {
        "used": True, "from_speaker": "B", "origin": "recording", "floor_dbfs": -51.23,
        "material_s": 0.5,
    }  # fmt: skip
    assert describe_tone(off, None, None, SR) == {
        "used": False,
        "reason": "render.room_tone is false",
    }
    assert describe_tone(on, None, None, SR)["reason"] == "the source's floor is digital silence"


# --- gaps: the confirmed gaps as the rows report them --------------------------------------------


def _measure(offset: float, onset: float) -> edges.GapMeasure:
    return edges.GapMeasure(offset, onset, edges.DIGITAL_FLOOR, 0.0, 0.0, 0)


def test_rows_take_the_edges_the_confirmation_measured_at_each_change() -> None:
    spans = [(100, 200), (300, 400), (500, 600)]
    mix = Mix(
        np.zeros(1000, dtype=np.float32), None, shifts=[0, 10, 20],
        measures=[_measure(205.0, 305.0), None], ceiling_db=0.0,
    )  # fmt: skip
    changes = [Change(0, 0.1), Change(1, 0.1)]
    assert rows_at_changes(spans, changes, mix) == [(100, 205), (305, 410), (520, 620)]
    # a measurement outside the two items it separates is not taken
    wild = replace(mix, measures=[_measure(50.0, 305.0), None])
    assert rows_at_changes(spans, changes, wild) == [(100, 200), (310, 410), (520, 620)]
    assert measured_gaps_ms(mix, 1000) == [100.0, None]


# --- rows: the records and their provenance -------------------------------------------------------


def _row(start: float, orig: float, speaker: str = "A") -> RenderedTurnRow:
    return RenderedTurnRow("d1", 9, speaker, "turn", start, start + 0.5, orig, orig + 0.5, "")


def test_turn_rows_are_ordered_by_start_then_annotation_and_numbered() -> None:
    rows = [_row(1.0, 3.0), _row(0.5, 9.0), _row(1.0, 2.0, "B")]
    got = ordered_turn_rows(rows)
    assert [(r.start_s, r.orig_start_s, r.turn_index) for r in got] == [
        (0.5, 9.0, 0), (1.0, 2.0, 1), (1.0, 3.0, 2),
    ]  # fmt: skip


def test_a_turn_row_keeps_the_annotation_and_says_whether_it_is_hosted() -> None:
    turns = (Turn("A", 1.0, 2.0, text="hi", annotated=(0.9, 2.2)), Turn("B", 1.2, 1.4))
    d = _dialogue(turns)
    row = turn_row(d, 0, False, 0.2000004, 1.2)
    assert (row.kind, row.start_s, row.orig_start_s, row.orig_end_s) == ("turn", 0.2, 0.9, 2.2)
    assert turn_row(d, 1, True, 0.5, 0.7).kind == "backchannel"
    assert turn_row(d, 1, True, 0.5, 0.7).orig_start_s == 1.2


def test_the_dialogue_record_reports_levels_after_gain_and_ceiling(tmp_path: Path) -> None:
    wav = tmp_path / "x.wav"
    sf.write(wav, np.zeros(4410, dtype=np.float32), 44100)
    turns = (Turn("A", 1.0, 2.0), Turn("B", 2.2, 3.0))
    d = replace(_dialogue(turns, MixedMonoSource(str(wav))), licence="CC-BY-4.0")
    res = Rendering(
        out=np.zeros(10, dtype=np.float32), stems=None, rows=[], gaps=[0.3, 0.5],
        measured=[300.0, 499.5], corrected=1,
        loud={"A": ld.Loudness(-26.0, "bs1770"), "B": ld.Loudness(ld.SILENCE_LUFS, "silent")},
        gains={"A": 3.0, "B": -2.0}, tone={"used": False}, dropped=[], ceiling_db=-1.5,
    )  # fmt: skip
    row = dialogue_record(
        d, RunConfig(), res, {str(wav): 44100}, audio_path="audio/d1.flac", audio_sha256="ab",
        duration_s=4.0, stems_path=None, n_turns=2,
    )  # fmt: skip
    assert row.loudness_lufs_a == pytest.approx(-26.0 + 3.0 - 1.5)
    assert row.loudness_lufs_b == ld.SILENCE_LUFS  # silence stays silence, whatever the gain
    assert (row.gain_db_a, row.gain_db_b) == (pytest.approx(1.5), pytest.approx(-3.5))
    assert (row.gap_ms_min, row.gap_ms_max) == (300.0, 500.0)
    assert (row.audio_path, row.sha256, row.n_turns, row.licence) == (
        "audio/d1.flac", "ab", 2, "CC-BY-4.0",
    )  # fmt: skip
    prov = json.loads(row.provenance)
    assert prov["gaps_ms"] == [300.0, 500.0] and prov["gaps_measured_ms"] == [300.0, 499.5]
    assert prov["ceiling_gain_db"] == -1.5 and prov["gap_corrections"] == 1
    assert prov["source_files"] == [str(wav)] and prov["loudness"]["A"]["method"] == "bs1770"
    assert row.source_sample_rate == 44100
    assert (
        prov["resampling"]["from_hz"] == [44100] and prov["resampling"]["to_hz"] == row.sample_rate
    )


def test_the_source_rate_comes_from_the_headers_the_render_read(tmp_path: Path) -> None:
    """The render hands the rates it read to the row (no header read twice); a file it did
    not read is read for its header."""
    a, b = tmp_path / "a.wav", tmp_path / "b.wav"
    sf.write(a, np.zeros(800, dtype=np.float32), 8000)
    sf.write(b, np.zeros(4410, dtype=np.float32), 44100)
    src = PerSpeakerSource({"A": str(a), "B": str(b)})
    read = source_rate(src, SR)
    assert (read.sample_rate, read.rates) == (44100, (8000, 44100))
    assert source_rate(src, SR, {str(a): 8000, str(b): 44100}) == read
    given = source_rate(src, SR, {str(b): 48000})  # the render's word wins over the header
    assert (given.sample_rate, given.rates) == (48000, (8000, 48000))
    _, files = load_separable(
        _dialogue((Turn("A", 0.0, 0.05), Turn("B", 0.05, 0.1)), src, duration_s=0.1),
        (Turn("A", 0.0, 0.05), Turn("B", 0.05, 0.1)), SR, 0.0,
    )  # fmt: skip
    assert files == {str(a): 8000, str(b): 44100}
