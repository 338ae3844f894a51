"""Room tone: taken from the recording's own pauses, at its level, without holes or seams."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

from duetflow.acoustics import tone_sources
from duetflow.audio import roomtone
from duetflow.audio.edges import longest_zero_run
from noise import noise_at

SR = 16000


def _speechy(n: int, rng: np.random.Generator) -> np.ndarray:
    t = np.arange(n) / SR
    x = sum(np.sin(2 * np.pi * 140 * k * t + rng.uniform(0, 6)) / k for k in range(1, 20))
    return 0.1 * x * (0.6 + 0.4 * np.sin(2 * np.pi * 4 * t) ** 2)


def _level(x: np.ndarray) -> float:
    return float(10 * np.log10(np.mean(np.asarray(x, np.float64) ** 2)))


def _talk_with_pauses(rng: np.random.Generator, pause_s: float = 0.12, floor_db: float = -62.0):
    """Speech in 0.8 s bursts, ``pause_s`` pauses between them, over a pink floor."""
    spans, pos = [], 0.05
    while pos + 0.8 < 6.0:
        spans.append((pos, pos + 0.8))
        pos += 0.8 + pause_s
    n = int(6.2 * SR)
    x = noise_at(n, floor_db, rng, SR)
    for a, b in spans:
        i0, i1 = int(a * SR), int(b * SR)
        x[i0:i1] += _speechy(i1 - i0, rng)
    return x.astype(np.float32), spans


def test_tone_from_pauses_between_words_at_the_floor_level() -> None:
    """Pauses of 120 ms (well under the 0.3 s an older rule needed) are enough."""
    rng = np.random.default_rng(1)
    x, spans = _talk_with_pauses(rng)
    tone = roomtone.extract_room_tone(x, SR, spans, margin_s=0.01)
    assert tone is not None and len(tone) > 0.5 * SR
    assert abs(_level(tone) - (-62.0)) < 1.5
    assert longest_zero_run(tone) == 0


def _at_joins(x: np.ndarray, joins: list[int], half: int) -> float:
    """Mean power (dB) of the windows centred on ``joins``: a dip or jump at the joins shows
    in the average while the noise's own flicker averages out."""
    p = [np.mean(np.asarray(x[j - half : j + half], np.float64) ** 2) for j in joins]
    return float(10 * np.log10(np.mean(p)))


def test_joins_neither_dip_nor_jump() -> None:
    """Equal-power crossfades between pieces of noise keep the level through every join."""
    rng = np.random.default_rng(2)
    piece, fade = int(0.1 * SR), int(0.005 * SR)
    pieces = [noise_at(piece, -60.0, rng, SR).astype(np.float32) for _ in range(60)]
    tone = roomtone.xfade_concat(pieces, fade)
    joins = [k * (piece - fade) + fade // 2 for k in range(1, 60)]
    assert abs(_at_joins(tone, joins, fade // 4) - _level(tone)) < 1.0
    # the check would see a plain (linear) crossfade of uncorrelated noise: 3 dB down
    ramp = np.linspace(0.0, 1.0, fade, dtype=np.float32)
    linear = np.concatenate(
        [pieces[0][:-fade]]
        + [
            np.concatenate([pieces[k - 1][-fade:] * (1 - ramp) + pieces[k][:fade] * ramp,
                            pieces[k][fade:-fade]])
            for k in range(1, 60)
        ]
    )  # fmt: skip
    assert _at_joins(linear, joins, fade // 4) - _level(linear) < -2.0
    bed = roomtone.fill(tone, 10 * SR, np.random.default_rng(0), int(0.01 * SR))
    win = int(0.1 * SR)
    lv = [_level(bed[i : i + win]) for i in range(0, len(bed) - win, win)]
    assert abs(_level(bed) - _level(tone)) < 0.2
    assert max(lv) - min(lv) < 3.0
    assert longest_zero_run(bed) == 0


def test_continuous_talk_gets_noise_of_its_own_spectrum() -> None:
    """No pause long enough: noise shaped like the background's quietest frames, at its level."""
    rng = np.random.default_rng(3)
    x, spans = _talk_with_pauses(rng, pause_s=0.03, floor_db=-55.0)
    tone = roomtone.extract_room_tone(x, SR, spans, margin_s=0.005, rng=np.random.default_rng(0))
    assert tone is not None
    assert abs(_level(tone) - (-55.0)) < 2.0
    # pink floor: more energy below 500 Hz than above 4 kHz, as the background has
    spec = np.abs(np.fft.rfft(tone)) ** 2
    f = np.fft.rfftfreq(len(tone), 1 / SR)
    assert spec[(f > 50) & (f < 500)].mean() > 5 * spec[f > 4000].mean()


def test_digital_silence_has_no_room_tone() -> None:
    rng = np.random.default_rng(4)
    x, spans = _talk_with_pauses(rng)
    clean = x.copy()
    for i in range(len(spans) - 1):
        clean[int(spans[i][1] * SR) : int(spans[i + 1][0] * SR)] = 0.0
    clean[: int(spans[0][0] * SR)] = 0.0
    clean[int(spans[-1][1] * SR) :] = 0.0
    assert roomtone.extract_room_tone(clean, SR, spans) is None


def test_events_in_pauses_are_left_out() -> None:
    """A cough-like burst 15 dB over the floor in a pause never reaches the tone."""
    rng = np.random.default_rng(5)
    x, spans = _talk_with_pauses(rng, pause_s=0.5)
    a = int((spans[2][1] + 0.2) * SR)
    x[a : a + int(0.06 * SR)] += noise_at(int(0.06 * SR), -47.0, rng, SR, pink=False).astype(
        np.float32
    )
    tone = roomtone.extract_room_tone(x, SR, spans, margin_s=0.01)
    assert tone is not None
    win = int(0.01 * SR)
    lv = [_level(tone[i : i + win]) for i in range(0, len(tone) - win, win)]
    assert max(lv) < -62.0 + 5.0


def test_a_recording_s_lead_in_gives_tone_to_a_window_without_pauses(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mono recording with a -70 dBFS floor and 6.7 s of lead-in; the window itself is
    continuous talk. The scan finds the lead-in, and a second window reuses it unread."""
    rng = np.random.default_rng(6)
    lead = int(6.7 * SR)
    n = lead + 20 * SR
    x = noise_at(n, -70.0, rng, SR)
    x[lead:] += _speechy(n - lead, rng)
    path = tmp_path / "rec.wav"
    sf.write(path, x.astype(np.float32), SR, subtype="PCM_16")
    reads = []
    real = tone_sources.read_frames

    def counting(*a, **k):
        reads.append(a)
        return real(*a, **k)

    monkeypatch.setattr(tone_sources, "read_frames", counting)
    found = tone_sources.recording_tone(str(path), None, SR)
    assert found.tone is not None and len(found.tone) >= SR
    assert abs(_level(found.tone) - (-70.0)) < 2.0
    assert found.floor is not None and abs(found.floor.db - (-70.0)) < 2.0
    # 16-bit noise at -70 dBFS passes through zero now and then, never for a millisecond
    assert longest_zero_run(found.tone) < SR // 1000
    n_reads = len(reads)
    again = tone_sources.recording_tone(str(path), None, SR)
    assert len(reads) == n_reads and again is found


def test_crosstalk_is_neither_speech_nor_room_tone_of_the_other_track() -> None:
    """Two mics, each hearing the other speaker 14 dB down; A's annotations end 0.3 s early and
    B's start 0.6 s early, so B's hint reaches over A's last words on B's track. B's extent
    starts at B's own voice, and no room tone is taken from A's voice on B's track."""
    from duetflow.acoustics import source_acoustics as sa

    rng = np.random.default_rng(7)
    n = 12 * SR
    a = noise_at(n, -60.0, rng, SR)
    b = noise_at(n, -60.0, rng, SR)
    a_spans, b_spans = [(0.8, 2.3), (5.2, 6.7)], [(2.5, 4.0), (6.9, 8.4)]
    for spans, own_t, other_t in ((a_spans, a, b), (b_spans, b, a)):
        for s, e in spans:
            i0, i1 = int(s * SR), int(e * SR)
            seg = _speechy(i1 - i0, rng)
            own_t[i0:i1] += seg
            other_t[i0:i1] += 0.2 * seg  # -14 dB crosstalk
    own = [
        [(s * SR, (e - 0.3) * SR) for s, e in a_spans],
        [((s - 0.6) * SR, e * SR) for s, e in b_spans],
    ]
    views = [sa.view(t.astype(np.float32), SR, own[0] + own[1]) for t in (a, b)]
    floors = [sa.track_floor(v) for v in views]
    sa.mark_crosstalk(views, own, floors)
    vb, floor_b = views[1], sa.track_floor(views[1])
    assert vb.blocked is not None and floor_b is not None
    assert abs(floor_b.db - (-60.0)) < 2.0
    for (s, _), hint in zip(b_spans, own[1], strict=True):
        ext = sa.extent(vb, floor_b, hint, (hint[0] - 0.2 * SR, hint[1] + 0.5 * SR))
        assert ext is not None
        assert abs(ext.start / SR - s) < 0.01, (ext.start / SR, s)
    runs = sa.tone_runs(vb, floor_b, [(s * SR, e * SR) for s, e in b_spans])
    assert sum(e - s for s, e in runs) > 0.5 * SR
    for r0, r1 in runs:
        assert all(r1 <= s * SR or r0 >= e * SR for s, e in a_spans), "tone from crosstalk"
    # without the crosstalk mask, B's loose hint would start B's turn inside A's voice
    vb.blocked = None
    ext = sa.extent(vb, floor_b, own[1][0], (own[1][0][0] - 0.2 * SR, own[1][0][1]))
    assert ext is not None and ext.start / SR < b_spans[0][0] - 0.1
