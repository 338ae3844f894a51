"""Room tone: fill re-timed gaps with the recording's own background, not digital zero.

A gap of digital silence between two noisy turns is a tell (the noise floor switches off and on).
:func:`extract_room_tone` collects the recording's non-speech material, keeps only its quiet,
steady part (coughs and door slams that the annotation missed are louder than the floor and are
left out), and :func:`fill` loops it to any length with equal-power crossfades between randomly
chosen excerpts, so the level stays the measured one and no loop point is audible.

The TTS stage reuses both functions to lay reference-recording ambience under synthetic speech.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from duetflow.audio.io import Audio, to_mono
from duetflow.audio.trim import frame_db, rms_db

#: Non-speech quieter than this (RMS dBFS) is digital silence, not room tone.
DIGITAL_SILENCE_DB = -80.0
_CHUNK_S = 0.1  # non-speech is judged in 100 ms chunks
_KEEP_ABOVE_QUIET_DB = 6.0  # chunks louder than the quiet level by more than this are events
_MAX_TONE_S = 10.0  # enough material to loop without audible repetition


def _xfade_curves(fade_n: int) -> tuple[Audio, Audio]:
    """Equal-power (sin/cos) fade-out and fade-in of ``fade_n`` samples."""
    theta = (np.arange(fade_n, dtype=np.float64) + 0.5) / fade_n * (math.pi / 2)
    return np.cos(theta).astype(np.float32), np.sin(theta).astype(np.float32)


def xfade_concat(pieces: Sequence[Audio], fade_n: int) -> Audio:
    """Concatenate mono pieces, overlapping neighbours by ``fade_n`` with equal-power fades."""
    parts = [p for p in pieces if len(p) > 0]
    if not parts:
        return np.zeros(0, dtype=np.float32)
    fade_n = max(0, min([fade_n, *(len(p) // 2 for p in parts)]))
    total = sum(len(p) for p in parts) - fade_n * (len(parts) - 1)
    out = np.zeros(total, dtype=np.float32)
    fout, fin = _xfade_curves(fade_n) if fade_n else (None, None)
    pos = 0
    last = len(parts) - 1
    for k, p in enumerate(parts):
        n = len(p)
        if not fade_n or fin is None or fout is None:
            out[pos : pos + n] = p
        else:
            head = fade_n if k > 0 else 0
            tail = fade_n if k < last else 0
            if head:
                out[pos : pos + head] += p[:head] * fin
            out[pos + head : pos + n - tail] = p[head : n - tail]
            if tail:
                out[pos + n - tail : pos + n] += p[n - tail :] * fout
        pos += n - fade_n
    return out


def _nonspeech_spans(
    n: int, sr: int, speech_regions: Sequence[tuple[float, float]], margin_s: float
) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    pos = 0
    for a, b in sorted(speech_regions):
        i0 = max(0, int(math.floor((a - margin_s) * sr)))
        if i0 > pos:
            spans.append((pos, min(i0, n)))
        pos = max(pos, int(math.ceil((b + margin_s) * sr)))
        if pos >= n:
            break
    if pos < n:
        spans.append((pos, n))
    return [(a, b) for a, b in spans if b > a]


def extract_room_tone(
    samples: Audio,
    sr: int,
    speech_regions: Sequence[tuple[float, float]],
    min_len_s: float = 0.3,
    *,
    margin_s: float = 0.05,
    max_len_s: float = _MAX_TONE_S,
) -> Audio | None:
    """The recording's background: quiet non-speech material, crossfaded into one mono signal.

    ``speech_regions`` are ``(start_s, end_s)`` relative to ``samples[0]``; everything outside
    them (less ``margin_s``) is a candidate. Runs shorter than ``min_len_s`` are ignored, and so
    is material louder than the quiet level by more than 6 dB (unannotated events). Returns None
    when nothing is left or what is left is digital silence (clean or synthetic sources).
    """
    x = to_mono(samples)
    chunk = max(1, int(round(_CHUNK_S * sr)))
    min_n = max(1, int(round(min_len_s * sr)))
    runs: list[tuple[int, int]] = []
    levels: list[float] = []
    for a, b in _nonspeech_spans(len(x), sr, speech_regions, margin_s):
        if b - a < min_n:
            continue
        db = frame_db(x[a:b], chunk)
        for k, level in enumerate(db):
            runs.append((a + k * chunk, a + (k + 1) * chunk))
            levels.append(float(level))
    if not runs:
        return None
    quiet = float(np.percentile(levels, 25))
    if quiet < DIGITAL_SILENCE_DB:
        return None
    limit = quiet + _KEEP_ABOVE_QUIET_DB
    # merge kept chunks that touch into contiguous pieces (only real joins get crossfades)
    pieces: list[tuple[int, int]] = []
    for (a, b), level in zip(runs, levels, strict=True):
        if level > limit:
            continue
        if pieces and pieces[-1][1] == a:
            pieces[-1] = (pieces[-1][0], b)
        else:
            pieces.append((a, b))
    pieces = [(a, b) for a, b in pieces if b - a >= min(min_n, 2 * chunk)]
    if not pieces:
        return None
    fade_n = max(1, int(0.01 * sr))
    max_n = int(max_len_s * sr)
    chosen: list[Audio] = []
    got = 0
    for a, b in pieces:
        take = min(b - a, max_n - got)
        if take <= 2 * fade_n:
            break
        chosen.append(x[a : a + take])
        got += take
    tone = xfade_concat(chosen, fade_n)
    if tone.size == 0 or rms_db(tone) < DIGITAL_SILENCE_DB:
        return None
    return tone


def fill(tone: Audio, n: int, rng: np.random.Generator, fade_n: int) -> Audio:
    """``n`` samples of room tone: random excerpts of ``tone`` joined with equal-power crossfades.

    Excerpts are 3/4 of the tone long at random offsets, so short tones do not repeat with an
    audible period. The result is scaled to the tone's RMS (the measured level).
    """
    if n <= 0:
        return np.zeros(0, dtype=np.float32)
    tone = to_mono(tone).astype(np.float32, copy=False)
    length = len(tone)
    if length == 0:
        return np.zeros(n, dtype=np.float32)
    fade_n = max(0, min(fade_n, length // 4))
    seg = max(2 * fade_n + 1, (3 * length) // 4)
    if n <= seg:
        off = int(rng.integers(0, length - n + 1))
        return tone[off : off + n].copy()
    step = seg - fade_n
    count = 1 + math.ceil((n - seg) / step)
    offsets = rng.integers(0, length - seg + 1, size=count)
    pieces = [tone[int(o) : int(o) + seg] for o in offsets]
    out = xfade_concat(pieces, fade_n)[:n]
    target = rms_db(tone)
    got = rms_db(out)
    if math.isfinite(target) and math.isfinite(got):
        out *= np.float32(10 ** ((target - got) / 20.0))
    return out
