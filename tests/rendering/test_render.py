"""render_dialogue, measured on the rendered audio itself, for every AudioSource kind."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from duetflow.audio.loudness import measure, true_peak_dbtp
from duetflow.audio.mix import max_jump
from duetflow.config import build_config
from duetflow.errors import InputError
from duetflow.records.manifest import RENDERED_DIALOGUE_SCHEMA, RENDERED_TURN_SCHEMA
from duetflow.rendering.render import render_dialogue
from noise import noise_at
from render_signals import (
    SR,
    change_pauses,
    make,
    measured_change_gaps,
    script,
    segments,
)

KINDS = ["multichannel", "per_speaker", "per_turn", "mixed_mono"]


def _read(out: Path, row: dict) -> np.ndarray:
    y, sr = sf.read(out / row["audio_path"], dtype="float32")
    assert sr == row["sample_rate"]
    return y


@pytest.mark.parametrize("kind", KINDS)
def test_gaps_loudness_peaks_on_rendered_audio(tmp_path: Path, kind: str) -> None:
    d = make(kind, tmp_path / "src")
    cfg = build_config({})
    r = render_dialogue(d, cfg, tmp_path / "out")
    y = _read(tmp_path / "out", r.row)

    # every speaker change, as an energy measure of the file hears it, lies in [180, 230] ms
    # (± its 5 ms resolution), and is the gap the rows report (± 10 ms)
    gaps = measured_change_gaps(y, SR, r.turns)
    assert len(gaps) >= 5
    lo, hi = cfg.render.gap_ms_min / 1000 - 0.005, cfg.render.gap_ms_max / 1000 + 0.005
    assert all(lo <= g <= hi for g in gaps), gaps
    rows = [b["start_s"] - a["end_s"] for a, b in change_pauses(r.turns)]
    assert max(abs(g - w) for g, w in zip(gaps, rows, strict=True)) <= 0.010, (gaps, rows)

    # both parties at the target, measured on the rendered audio (source levels are 16 dB apart)
    la = measure(segments(y, SR, r.turns, "A"), SR).lufs
    lb = measure(segments(y, SR, r.turns, "B"), SR).lufs
    assert abs(la - lb) <= 0.5, (la, lb)
    assert abs(la - cfg.render.loudness_target_lufs) <= 0.5
    assert abs(r.row["loudness_lufs_a"] - la) <= 0.5
    assert r.row["gain_db_b"] - r.row["gain_db_a"] == pytest.approx(16.0, abs=2.0)

    assert true_peak_dbtp(y, SR) <= cfg.render.true_peak_ceiling_dbtp + 0.1
    assert r.row["duration_s"] == pytest.approx(len(y) / SR)
    assert set(r.row) == set(RENDERED_DIALOGUE_SCHEMA.names)
    assert all(set(t) == set(RENDERED_TURN_SCHEMA.names) for t in r.turns)
    assert [t["turn_index"] for t in r.turns] == list(range(len(r.turns)))


@pytest.mark.parametrize("kind", KINDS)
def test_same_seed_same_bytes_other_seed_other_gaps(tmp_path: Path, kind: str) -> None:
    d = make(kind, tmp_path / "src")
    a = render_dialogue(d, build_config({"seed": 7}), tmp_path / "a")
    b = render_dialogue(d, build_config({"seed": 7}), tmp_path / "b")
    c = render_dialogue(d, build_config({"seed": 8}), tmp_path / "c")
    bytes_a = (tmp_path / "a" / a.row["audio_path"]).read_bytes()
    assert bytes_a == (tmp_path / "b" / b.row["audio_path"]).read_bytes()
    assert a.row == b.row and a.turns == b.turns
    gaps_a = json.loads(a.row["provenance"])["gaps_ms"]
    gaps_c = json.loads(c.row["provenance"])["gaps_ms"]
    assert len(gaps_a) == len(gaps_c) and gaps_a != gaps_c
    assert a.row["sha256"] != c.row["sha256"]


def test_true_peak_ceiling_by_gain_reduction(tmp_path: Path) -> None:
    d = make("multichannel", tmp_path / "src")
    cfg = build_config({"render": {"loudness_target_lufs": -8.0}})
    r = render_dialogue(d, cfg, tmp_path / "out")
    y = _read(tmp_path / "out", r.row)
    prov = json.loads(r.row["provenance"])
    assert prov["ceiling_gain_db"] < -1.0  # the target alone would push peaks over the ceiling
    assert true_peak_dbtp(y, SR) <= cfg.render.true_peak_ceiling_dbtp + 0.1
    assert np.max(np.abs(y)) < 0.99  # reduced, not clipped
    la = measure(segments(y, SR, r.turns, "A"), SR).lufs
    lb = measure(segments(y, SR, r.turns, "B"), SR).lufs
    assert abs(la - lb) <= 0.5


def test_room_tone_fills_gaps_at_the_recording_level(tmp_path: Path) -> None:
    d = make("multichannel", tmp_path / "src")
    r = render_dialogue(d, build_config({}), tmp_path / "out")
    y = _read(tmp_path / "out", r.row)
    prov = json.loads(r.row["provenance"])
    assert prov["room_tone"]["used"] is True
    a, b = r.turns[0], r.turns[1]
    gap = y[int((a["end_s"] + 0.05) * SR) : int((b["start_s"] - 0.05) * SR)]
    level = 10 * np.log10(np.mean(gap.astype(np.float64) ** 2))
    # the tone's source level (-58 dBFS) moved by the gain of the track it came from
    gain = r.row["gain_db_a"] if prov["room_tone"]["from_speaker"] == "A" else r.row["gain_db_b"]
    assert abs(level - (-58.0 + gain)) < 3.0
    assert np.count_nonzero(gap == 0) < len(gap) // 10  # not digital silence


def test_clean_source_gets_silence_and_says_so(tmp_path: Path) -> None:
    d = make("per_turn", tmp_path / "src", noise=False)
    r = render_dialogue(d, build_config({}), tmp_path / "out")
    y = _read(tmp_path / "out", r.row)
    prov = json.loads(r.row["provenance"])
    assert prov["room_tone"]["used"] is False and prov["room_tone"]["reason"]
    a, b = r.turns[0], r.turns[1]
    gap = y[int((a["end_s"] + 0.05) * SR) : int((b["start_s"] - 0.05) * SR)]
    assert np.all(gap == 0)


def test_no_clicks_at_cuts_through_loud_material(tmp_path: Path) -> None:
    """Turns that start and stop at full amplitude (a cosine switched on and off): every cut
    lands on a hard edge, and the fades must hide it."""
    d = make("multichannel", tmp_path / "src", items=script(3))
    n = int(d.duration_s * SR)
    x = np.zeros((n, 2), np.float32)
    for t in d.turns:
        ch = 0 if t.speaker == "A" else 1
        i0, i1 = int((t.start + 0.1) * SR), int((t.end - 0.1) * SR)
        x[i0:i1, ch] = 0.3 * np.cos(2 * np.pi * 440 * np.arange(i1 - i0) / SR)
    sf.write(Path(d.source.path), x, SR, subtype="PCM_16")  # type: ignore[union-attr]

    def render(fade_ms: float, out: str) -> np.ndarray:
        cfg = build_config({"render": {"trim_pad_ms": 0.0, "fade_ms": fade_ms}})
        r = render_dialogue(d, cfg, tmp_path / out)
        return _read(tmp_path / out, r.row)

    y = render(5.0, "out")
    natural = float(np.max(np.abs(y))) * 2 * np.pi * 440 / SR  # steepest slope of the sine
    assert max_jump(y) <= 1.2 * natural, (max_jump(y), natural)
    # the same render without fades does click: the check can fail
    y_hard = render(0.0, "hard")
    assert max_jump(y_hard) > 2 * float(np.max(np.abs(y_hard))) * 2 * np.pi * 440 / SR


@pytest.mark.parametrize("kind", ["multichannel", "per_speaker"])
def test_backchannel_keeps_its_offset_inside_the_host(tmp_path: Path, kind: str) -> None:
    items = script(1, backchannel=True)
    d = make(kind, tmp_path / "src", items=items)
    r = render_dialogue(d, build_config({}), tmp_path / "out")
    bcs = [t for t in r.turns if t["kind"] == "backchannel"]
    assert len(bcs) == 1
    bc = bcs[0]
    host = next(
        t
        for t in r.turns
        if t["kind"] == "turn"
        and t["speaker"] != bc["speaker"]
        and t["start_s"] <= bc["start_s"]
        and t["end_s"] >= bc["end_s"]
    )
    host_src, bc_src = items[1], items[2]  # script(): the backchannel follows its host
    assert bc_src.kind.value == "backchannel" and host_src.speaker == host["speaker"]
    # acoustic offset inside the host in the source (0.6 s) is kept, within trim resolution
    assert bc["start_s"] - host["start_s"] == pytest.approx(bc_src.start - host_src.start, abs=0.02)

    dropped = render_dialogue(d, build_config({"render": {"backchannels": "drop"}}), tmp_path / "d")
    assert all(t["kind"] == "turn" for t in dropped.turns)
    assert dropped.row["n_turns"] == r.row["n_turns"] - 1


def test_mixed_mono_keeps_backchannels_embedded(tmp_path: Path) -> None:
    items = script(1, backchannel=True)
    d = make("mixed_mono", tmp_path / "src", items=items)
    r = render_dialogue(d, build_config({}), tmp_path / "out")
    bc = next(t for t in r.turns if t["kind"] == "backchannel")
    host = next(
        t for t in r.turns if t["kind"] == "turn" and t["start_s"] < bc["start_s"] < t["end_s"]
    )
    assert bc["end_s"] <= host["end_s"] + 1e-6
    # an embedded backchannel cannot be removed from a mix: drop keeps it
    r2 = render_dialogue(d, build_config({"render": {"backchannels": "drop"}}), tmp_path / "o2")
    assert any(t["kind"] == "backchannel" for t in r2.turns)


def test_stems_put_one_speaker_per_channel(tmp_path: Path) -> None:
    d = make("per_speaker", tmp_path / "src")
    cfg = build_config({"render": {"stems": True}})
    r = render_dialogue(d, cfg, tmp_path / "out")
    prov = json.loads(r.row["provenance"])
    stems, sr = sf.read(tmp_path / "out" / prov["stems_path"], dtype="float32")
    assert stems.shape[1] == 2
    la = measure(segments(stems[:, 0], sr, r.turns, "A"), sr).lufs
    lb = measure(segments(stems[:, 1], sr, r.turns, "B"), sr).lufs
    assert abs(la - lb) <= 0.5
    # A's channel is quiet (room tone only) while B talks
    b_only = segments(stems[:, 0], sr, r.turns, "B")
    assert measure(b_only, sr).lufs < la - 20


def test_output_resampled_to_configured_rate(tmp_path: Path) -> None:
    d = make("multichannel", tmp_path / "src")
    r = render_dialogue(d, build_config({"sample_rate": 24000}), tmp_path / "out")
    y, sr = sf.read(tmp_path / "out" / r.row["audio_path"])
    assert sr == 24000 and r.row["sample_rate"] == 24000
    assert len(measured_change_gaps(y.astype(np.float32), sr, r.turns)) >= 5


def test_windowed_dialogue_reads_only_its_window(tmp_path: Path) -> None:
    d = make("multichannel", tmp_path / "src")
    from dataclasses import replace

    sub = d.turns[2:6]
    w = replace(
        d,
        id=d.id + "__w001",
        turns=sub,
        window=(sub[0].start, sub[-1].end),
        duration_s=sub[-1].end - sub[0].start,
    )
    r = render_dialogue(w, build_config({}), tmp_path / "out")
    assert r.row["n_turns"] == 4
    assert [t["orig_start_s"] for t in r.turns] == [t.start for t in sub]
    prov = json.loads(r.row["provenance"])
    assert prov["window"] == [sub[0].start, sub[-1].end]
    # window-relative turn times are recognised too
    rel = replace(
        w,
        turns=tuple(
            replace(t, start=t.start - sub[0].start, end=t.end - sub[0].start) for t in sub
        ),
    )
    r2 = render_dialogue(rel, build_config({}), tmp_path / "out2")
    assert r2.row["duration_s"] == pytest.approx(r.row["duration_s"], abs=1e-3)


def test_bad_audio_raises_input_error_naming_the_file(tmp_path: Path) -> None:
    d = make("per_speaker", tmp_path / "src")
    path = Path(d.source.paths["B"])  # type: ignore[union-attr]
    path.unlink()
    with pytest.raises(InputError) as e:
        render_dialogue(d, build_config({}), tmp_path / "out")
    assert e.value.reason == "missing_file" and str(path) in str(e.value)

    d2 = make("multichannel", tmp_path / "src2")
    p2 = Path(d2.source.path)  # type: ignore[union-attr]
    x, sr = sf.read(p2, dtype="float32")
    sf.write(p2, x[: len(x) // 2], sr, subtype="PCM_16")
    with pytest.raises(InputError) as e2:
        render_dialogue(d2, build_config({}), tmp_path / "out")
    assert e2.value.reason == "truncated_audio"

    d3 = make("multichannel", tmp_path / "src3")
    p3 = Path(d3.source.path)  # type: ignore[union-attr]
    sf.write(p3, np.zeros((int(d3.duration_s * SR), 2), np.float32), SR, subtype="PCM_16")
    with pytest.raises(InputError) as e3:
        render_dialogue(d3, build_config({}), tmp_path / "out")
    assert e3.value.reason == "silent_turn"
    assert not (tmp_path / "out" / "audio").exists() or not any(
        (tmp_path / "out" / "audio").iterdir()
    )


def test_mono_mix_with_a_long_lead_in_and_no_pause_in_the_window(tmp_path: Path) -> None:
    """A mono recording with a -70 dBFS floor and 6.7 s of lead-in, RTTM-like turns, and 60 ms
    between the turns of the window (too short for room tone): the tone comes from the
    recording's lead-in, and no pause of the file holds digital zeros."""
    from duetflow.audio.edges import longest_zero_run
    from duetflow.demo.voice import FEMALE, MALE, speech
    from duetflow.records.dialogue import Category, Dialogue, MixedMonoSource, Speaker, Turn

    rng = np.random.default_rng(4)
    lead, n = 6.7, int(30 * SR)
    x = noise_at(n, -70.0, rng, SR)
    turns, t = [], lead
    for k in range(8):
        d = float(rng.uniform(1.5, 2.5))
        who = "A" if k % 2 == 0 else "B"
        sig = speech(d, SR, MALE if who == "A" else FEMALE, rng, -20.0)
        x[int(t * SR) : int(t * SR) + len(sig)] += sig
        turns.append(Turn(who, round(t - 0.03, 3), round(t + d + 0.03, 3), text=f"t{k}"))
        t += d + 0.06
    p = tmp_path / "mix.wav"
    sf.write(p, x.astype(np.float32), SR, subtype="PCM_16")
    d = Dialogue(
        id="rttm__mix", corpus="rttm", source_id="mix", category=Category.HH, language="en",
        topic="", speakers=(Speaker("A"), Speaker("B")), turns=tuple(turns),
        source=MixedMonoSource(str(p)), duration_s=30.0,
        window=(turns[0].start, turns[-1].end),
    )  # fmt: skip
    r = render_dialogue(d, build_config({}), tmp_path / "out")
    y = _read(tmp_path / "out", r.row)
    tone = json.loads(r.row["provenance"])["room_tone"]
    assert tone["used"] is True and tone["origin"] == "recording", tone
    assert abs(tone["floor_dbfs"] - (-70 + r.row["gain_db_a"])) < 3.0, (tone, r.row["gain_db_a"])
    pauses = change_pauses(r.turns)
    assert len(pauses) == 7
    for a, b in pauses:
        gap = y[int(a["end_s"] * SR) : int(b["start_s"] * SR)]
        assert longest_zero_run(gap) < SR // 1000
    gaps = measured_change_gaps(y, SR, r.turns)
    assert all(0.175 <= g <= 0.235 for g in gaps), gaps
