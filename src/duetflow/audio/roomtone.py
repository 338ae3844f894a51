"""Room tone: the recording's own background, collected from its non-speech and laid in gaps.

A gap of digital silence between two noisy turns is a tell (the floor switches off and on). The
renderer fills every gap, and tops up every clip whose own background is quieter, with the
recording's background at the dialogue's floor level, so the floor is one steady level across
the whole file (docs/turn-taking.md, *Room tone*).

* :func:`tone_pieces` collects background from the frames of a signal that hold no speech:
  runs of at least :data:`MIN_PAUSE_S` (a pause between words qualifies, a lead-in, the rest of
  a long recording), each trimmed clear of its edges, frames louder than the floor by more than
  :data:`EVENT_DB` left out (a cough, a door, a breath), joined with short equal-power
  crossfades;
* :func:`synthesized_tone` stands in where a recording has a floor but no pause long enough
  to take it from (continuous talk): noise with the background's own average spectrum, taken
  from its quietest frames, at its level;
* :func:`fill` loops tone to any length (random excerpts, equal-power crossfades, the tone's
  level), :func:`extract_room_tone` does all of it for a signal with known speech regions
  (PH ambience from reference recordings).

Pure numpy; nothing here reads files (see :mod:`duetflow.acoustics.tone_sources` for reading
more of a recording when a window holds too little non-speech).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from duetflow.audio import edges
from duetflow.audio.io import Audio, to_mono
from duetflow.audio.trim import rms_db

#: Non-speech quieter than this (RMS dBFS) is digital silence, not room tone.
DIGITAL_SILENCE_DB = edges.DIGITAL_DB
#: Shortest run of non-speech taken as room tone (s): a pause between words is enough.
MIN_PAUSE_S = 0.08
#: Kept clear of speech at both ends of a run (s).
MARGIN_S = 0.01
#: Frames louder than the floor by more than this are events, not room tone (dB): a faint
#: crosstalk tail, a breath, a cough would come back in every gap the tone is laid in.
EVENT_DB = 4.0
#: Enough material to loop without audible repetition (s).
MAX_TONE_S = 10.0
#: Crossfade between pieces of tone (s).
XFADE_S = 0.005


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
    # every sample is written: a piece's own samples, or a fade's sum (the fade-out written,
    # the next piece's fade-in added to it): the values of adding both into zeros
    out = np.empty(total, dtype=np.float32)
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
                np.multiply(p[n - tail :], fout, out=out[pos + n - tail : pos + n])
        pos += n - fade_n
    return out


def pause_runs(
    an: edges.Analysis,
    background: edges.BoolArray,
    floor: edges.Floor,
    *,
    min_len_s: float = MIN_PAUSE_S,
    margin_s: float = MARGIN_S,
) -> list[tuple[int, int]]:
    """Sample ranges of room tone: runs of ``background`` frames at the floor's level.

    A run covers the samples whose every envelope window is background, less ``margin_s`` at
    both ends; runs shorter than ``min_len_s`` are left out. Frames louder than the floor by
    :data:`EVENT_DB` break a run.
    """
    env = an.level
    n = min(len(env), len(background))
    if n == 0 or floor.digital:
        return []
    ok = background[:n] & (env.db[:n] <= floor.db + EVENT_DB) & (env.db[:n] > edges.DIGITAL_DB)
    d = np.diff(np.concatenate(([0], ok.astype(np.int8), [0])))
    starts, stops = np.flatnonzero(d == 1), np.flatnonzero(d == -1)
    sr, hop = env.sr, env.hop
    margin = int(round(margin_s * sr))
    min_n = int(round(min_len_s * sr))
    out = []
    for k0, k1 in zip(starts, stops, strict=True):
        a = env.start + int(k0) * hop + margin
        b = env.start + (int(k1) - 1 + edges.WINDOW_HOPS) * hop - margin
        if b - a >= min_n:
            out.append((a, b))
    return out


def tone_pieces(
    samples: Audio,
    runs: Sequence[tuple[int, int]],
    sr: int,
    *,
    max_len_s: float = MAX_TONE_S,
) -> Audio | None:
    """The runs of ``samples`` (sample ranges, see :func:`pause_runs`) joined with short
    equal-power crossfades, at most ``max_len_s`` long; None when there is none."""
    x = to_mono(samples)
    fade_n = max(1, int(round(XFADE_S * sr)))
    max_n = int(max_len_s * sr)
    chosen: list[Audio] = []
    got = 0
    for a, b in runs:
        a, b = max(0, a), min(len(x), b)
        take = min(b - a, max_n - got + fade_n)
        if take <= 2 * fade_n:
            continue
        chosen.append(np.asarray(x[a : a + take], dtype=np.float32))
        got += take - fade_n
        if got >= max_n:
            break
    tone = xfade_concat(chosen, fade_n)
    if tone.size == 0 or rms_db(tone) < DIGITAL_SILENCE_DB:
        return None
    return tone


def synthesized_tone(
    samples: Audio,
    an: edges.Analysis,
    background: edges.BoolArray,
    floor: edges.Floor,
    rng: np.random.Generator,
    length_s: float = 2.0,
) -> Audio | None:
    """Noise with the background's average spectrum at the floor's level (mean power).

    The spectrum is averaged over the quietest background frames (a Hann-windowed FFT of 20 ms
    around each); None for a digital floor or too few frames.
    """
    if floor.digital:
        return None
    x = to_mono(samples)
    env = an.level
    n = min(len(env), len(background))
    idx = np.flatnonzero(background[:n] & (env.db[:n] > edges.DIGITAL_DB))
    if idx.size < edges.MIN_FLOOR_FRAMES:
        return None
    keep = max(edges.MIN_FLOOR_FRAMES, idx.size // 4)
    quiet = idx[np.argsort(env.db[idx], kind="stable")[:keep]]
    sr = env.sr
    size = 1 << max(6, int(math.ceil(math.log2(0.02 * sr))))
    win = np.hanning(size)
    spec = np.zeros(size // 2 + 1)
    used = 0
    for k in np.sort(quiet)[:200]:
        c = int(env.center(float(k)))
        a = c - size // 2
        if a < 0 or a + size > len(x):
            continue
        spec += np.abs(np.fft.rfft(x[a : a + size].astype(np.float64) * win)) ** 2
        used += 1
    if used == 0:
        return None
    m = int(length_s * sr)
    shaped = np.fft.rfft(rng.standard_normal(m))
    f_in = np.linspace(0.0, 1.0, spec.size)
    f_out = np.linspace(0.0, 1.0, shaped.size)
    shaped *= np.sqrt(np.interp(f_out, f_in, spec / used))
    y = np.fft.irfft(shaped, m)
    y -= float(np.mean(y))
    p = float(np.mean(y * y))
    if p <= 0:
        return None
    y *= math.sqrt(floor.power / p)
    return y.astype(np.float32)


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


def extract_room_tone(
    samples: Audio,
    sr: int,
    speech_regions: Sequence[tuple[float, float]],
    min_len_s: float = MIN_PAUSE_S,
    *,
    margin_s: float = 0.05,
    max_len_s: float = MAX_TONE_S,
    rng: np.random.Generator | None = None,
) -> Audio | None:
    """The background of a signal whose speech lies in ``speech_regions`` (seconds).

    Non-speech is everything ``margin_s`` clear of the regions whose level is the floor's
    (measured there); runs of at least ``min_len_s`` are joined (:func:`tone_pieces`). Where the
    regions leave no such run, noise with the background's spectrum stands in
    (:func:`synthesized_tone`, seeded by ``rng``, default seed 0). None when the background is
    digital silence (clean or synthetic sources).
    """
    x = to_mono(samples)
    an = edges.analyse(x, sr)
    spans = [(a * sr, b * sr) for a, b in speech_regions]
    background = edges.background_mask(an.edge, spans, margin_s * sr)
    floor = edges.floor_of(an, spans, margin_s * sr)
    if floor is None or floor.digital:
        return None
    runs = pause_runs(an, background, floor, min_len_s=min_len_s)
    tone = tone_pieces(x, runs, sr, max_len_s=max_len_s)
    if tone is not None:
        return tone
    if np.count_nonzero(background) < edges.MIN_FLOOR_FRAMES:
        background = an.level.db <= floor.db + edges.EDGE_DB
    return synthesized_tone(x, an, background, floor, rng or np.random.default_rng(0))
