"""Turn detection from audio: WebRTC VAD per track with crosstalk attribution.

Studio sessions record each party on its own track (a mic per person, the system's line-out, or
one channel each of a stereo file). Every mic also hears the other party, a few tens of dB down
(*crosstalk*), and WebRTC VAD is nearly level-blind, so running it per track alone turns every
utterance into a turn on *both* tracks. The rule used here:

* the *coupling* ``c_ij`` (how loud track *j*'s sound arrives in track *i*, e.g. -20 dB for
  mics a metre apart, -inf for a line-out that hears nothing) is estimated per session from
  frames where *j* is loud and louder than *i*; a voiced frame of track *i* is kept only when
  it is louder than *j*'s leakage would make it by ``crosstalk_margin_db``:
  ``E_i > E_j + c_ij + margin`` (energies smoothed over 50 ms). Leakage sits at
  ``E_j + c_ij`` and is dropped; genuine overlap (both parties talking) keeps both turns, even
  when one party is much quieter;
* kept frames are smoothed like :func:`duetflow.audio.vad.smooth` (bridge pauses shorter than
  ``min_silence_ms``, drop runs shorter than ``min_speech_ms``);
* each region's boundaries are then refined on a 10 ms energy grid: the start moves to the first
  frame that is acoustically active (``activity_db`` over the track's noise floor) and owned by
  the track, the end back to the last such frame, which removes the VAD hangover and the 30 ms
  frame quantisation from the reported times.

Each track's energy grid and VAD decisions are streamed by
:class:`~duetflow.corpora.studio.track_features.TrackFeatures`; everything here is a pure
function of the samples and :class:`~duetflow.config.SegmentConfig`.
:func:`score_turns` compares detected turns with a ground truth (turn-level F1 and boundary
error), used by the tests and by ``bench/``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from duetflow.audio.io import Audio, audio_info
from duetflow.audio.stream import BLOCK_FRAMES, StreamResampler, iter_blocks
from duetflow.config import SegmentConfig
from duetflow.corpora.studio.echo import EchoReturn, echo_leak_db, fit_echo_return
from duetflow.corpora.studio.track_features import (
    ANALYSIS_RATE,
    HOP_S,
    BoolArray,
    FloatArray,
    TrackFeatures,
    features_of,
)
from duetflow.errors import InputError
from duetflow.records.dialogue import Turn

log = logging.getLogger(__name__)

_SMOOTH_FRAMES = 5  # 50 ms moving average before comparing track energies
_FLOOR_PERCENTILE = 10.0
_SILENT_DB = -120.0
_STRONG_DB = 20.0
_MIN_COUPLING_FRAMES = 50  # 0.5 s of loud speech before a coupling is estimated
_ACTIVITY_FLOOR_DB = -80.0  # a floor below this is digital silence, not a room's noise
_BREATH_GAP_FRAMES = 8  # a pause of 80 ms or more separates a breath from the words
_BREATH_MAX_FRAMES = 60  # a breath lasts at most 0.6 s
_BREATH_DB = 12.0  # its loudest frame stays this far below the turn's median level
#: A track clipped on more than this share of its samples (and never over full scale, so not
#: a hot float track) cannot be measured: rejected ``unusable_track``, naming the cause.
MAX_CLIPPED_SHARE = 0.05


@dataclass(frozen=True)
class TrackStats:
    """What turn detection saw on one track; recorded in the dialogue's provenance."""

    speaker: str
    voiced_s: float
    crosstalk_s: float
    noise_floor_db: float
    turns: int
    coupling_db: Mapping[str, float] = field(default_factory=dict)
    echo: EchoReturn | None = None


@dataclass(frozen=True)
class SegmentResult:
    """Detected turns (sorted by start, then speaker) plus per-track statistics."""

    turns: tuple[Turn, ...]
    tracks: tuple[TrackStats, ...]
    duration_s: float

    def provenance(self) -> dict[str, object]:
        """JSON-friendly summary for ``Dialogue.provenance``."""
        return {
            "method": "vad_crosstalk",
            "tracks": {
                t.speaker: {
                    "voiced_s": round(t.voiced_s, 3),
                    "crosstalk_s": round(t.crosstalk_s, 3),
                    "noise_floor_db": round(t.noise_floor_db, 1),
                    "turns": t.turns,
                    "coupling_db": {
                        k: (round(v, 1) if math.isfinite(v) else None)
                        for k, v in t.coupling_db.items()
                    },
                    **({"echo": t.echo.provenance()} if t.echo is not None else {}),
                }
                for t in self.tracks
            },
        }


def _moving_average(e: FloatArray, width: int) -> FloatArray:
    if width <= 1 or len(e) == 0:
        return e
    # average in the power domain so a loud frame is not diluted by silent neighbours in dB
    p = 10.0 ** (e / 10.0)
    kernel = np.ones(width) / width
    sm = np.convolve(p, kernel, mode="same")
    out: FloatArray = 10.0 * np.log10(np.maximum(sm, 1e-12))
    return out


def _runs(flags: BoolArray) -> list[tuple[int, int]]:
    """Half-open index ranges of consecutive True values."""
    if len(flags) == 0:
        return []
    padded = np.concatenate(([False], flags, [False])).astype(np.int8)
    d = np.diff(padded)
    starts = np.flatnonzero(d == 1)
    ends = np.flatnonzero(d == -1)
    return [(int(a), int(b)) for a, b in zip(starts, ends, strict=True)]


def _smooth_runs(
    flags: BoolArray, min_speech_frames: int, min_silence_frames: int
) -> list[tuple[int, int]]:
    merged: list[list[int]] = []
    for a, b in _runs(flags):
        if merged and a - merged[-1][1] < min_silence_frames:
            merged[-1][1] = b
        else:
            merged.append([a, b])
    return [(a, b) for a, b in merged if b - a >= min_speech_frames]


def detect_turns(
    tracks: Mapping[str, Audio],
    sample_rate: int,
    config: SegmentConfig | None = None,
    echo: Mapping[str, str] | None = None,
) -> SegmentResult:
    """Turns of each speaker from time-aligned per-speaker tracks (mic / line-out / channel).

    ``tracks`` maps speaker id → samples at ``sample_rate``; tracks of different lengths are
    padded with silence to the longest (a line-out recorder that stopped early). Speaker order
    in the result is by turn start, ties broken by the order of ``tracks``. ``echo`` maps a
    mic's speaker to the speaker whose track is its echo reference (:func:`echo_pairs`). For
    long recordings use :func:`detect_turns_in_files`, which never holds the samples.
    """
    cfg = config or SegmentConfig()
    if not tracks:
        return SegmentResult((), (), 0.0)
    feats = {s: features_of(x, sample_rate, cfg) for s, x in tracks.items()}
    return turns_from_features(feats, cfg, echo)


def echo_pairs(roles: Mapping[str, str], layout: str, config: SegmentConfig) -> dict[str, str]:
    """Which mic hears which echo reference: ``{human speaker: machine speaker}`` in HM sessions.

    ``roles`` maps speaker id → ``human`` / ``machine``. The system's track (its line-out or
    its channel) is what its loudspeaker played into the room, so it is the reference of the
    echo in the participant's mic. Empty for HH sessions, mono mixes and ``segment.echo: off``.
    """
    if config.echo == "off" or layout not in ("tracks", "stereo"):
        return {}
    machines = [s for s, r in roles.items() if r == "machine"]
    if len(machines) != 1:
        return {}
    return {s: machines[0] for s, r in roles.items() if r == "human"}


@dataclass(frozen=True)
class TrackSource:
    """One speaker's track on disk: a file and its channel (None: the mean of all channels)."""

    path: Path
    channel: int | None = None


def detect_turns_in_files(
    sources: Mapping[str, TrackSource],
    config: SegmentConfig | None = None,
    block_frames: int = BLOCK_FRAMES,
    echo: Mapping[str, str] | None = None,
) -> SegmentResult:
    """:func:`detect_turns` on tracks read from disk block by block, all tracks in step.

    Memory is a few blocks plus :class:`TrackFeatures` (about 7 MB per track-hour), whatever
    the length of the session. Raises InputError when a file cannot be read to its end.
    """
    cfg = config or SegmentConfig()
    if not sources:
        return SegmentResult((), (), 0.0)
    feats = {s: TrackFeatures(cfg) for s in sources}
    readers = {
        s: (iter_blocks(src.path, block_frames, channel=src.channel),
            StreamResampler(audio_info(src.path).sample_rate, ANALYSIS_RATE))
        for s, src in sources.items()
    }  # fmt: skip
    open_ = set(readers)
    while open_:
        for s in list(readers):
            if s not in open_:
                continue
            blocks, resampler = readers[s]
            block = next(blocks, None)
            if block is None:
                feats[s].feed(resampler(np.zeros(0, dtype=np.float32), last=True))
                open_.discard(s)
            else:
                feats[s].feed(resampler(block))
    for s, f in feats.items():
        share = f.clipped / max(1, f.samples)
        if share > MAX_CLIPPED_SHARE and f.raw_peak <= 1.0:
            raise InputError(
                sources[s].path,
                f"track of speaker {s!r} is clipped at full scale on {100 * share:.0f}% of its "
                f"samples (DC offset {f.dc.max_offset:+.2f} FS); its levels cannot be measured",
                reason="unusable_track",
            )
    return turns_from_features(feats, cfg, echo)


def turns_from_features(
    features: Mapping[str, TrackFeatures],
    config: SegmentConfig,
    echo: Mapping[str, str] | None = None,
) -> SegmentResult:
    """The crosstalk-aware turn decision (module docstring) on per-track features.

    Tracks shorter than the longest are padded with silence first. For a mic in ``echo``
    (mic speaker → reference speaker) the reference's leakage is the room's echo return
    (:mod:`~duetflow.corpora.studio.echo`, fitted per session) instead of a fixed coupling.
    """
    cfg = config
    speakers = list(features)
    length = max(f.samples for f in features.values())
    for f in features.values():
        f.pad_to(length)
    duration = length / ANALYSIS_RATE
    hop = int(round(HOP_S * ANALYSIS_RATE))
    n = length // hop

    # a float track over full scale is a level, not noise: measured as if normalised to full
    # scale (its peak), so a hot track does not take the other's turns for its leakage
    energies = [
        features[s].energies() - 20.0 * math.log10(max(1.0, features[s].headroom.peak))
        for s in speakers
    ]
    smoothed = [_moving_average(e, _SMOOTH_FRAMES) for e in energies]
    floors = [
        float(np.percentile(e, _FLOOR_PERCENTILE)) if len(e) else _SILENT_DB for e in energies
    ]

    coupling = [
        [
            0.0 if i == j else _coupling_db(smoothed[i], smoothed[j], floors[j])
            for j in range(len(speakers))
        ]
        for i in range(len(speakers))
    ]
    vads = [features[spk].grid_flags(n) for spk in speakers]
    models: dict[int, EchoReturn] = {}
    for mic, ref in (echo or {}).items():
        if mic not in speakers or ref not in speakers or mic == ref:
            continue
        i, j = speakers.index(mic), speakers.index(ref)
        m = fit_echo_return(
            ref,
            energies[i],
            smoothed[i],
            energies[j],
            max(floors[j], _ACTIVITY_FLOOR_DB),  # a line-out's digital silence is no floor
            vads[i],
            mic_floor_db=max(floors[i], _ACTIVITY_FLOOR_DB),
            activity_db=cfg.activity_db,
            hop_s=HOP_S,
            margin_db=cfg.crosstalk_margin_db,
            max_delay_s=cfg.echo_max_delay_ms / 1000,
            max_rt60_s=cfg.echo_max_rt60_s,
            smooth_frames=_SMOOTH_FRAMES,
        )
        if m is not None:
            models[i] = m
    min_speech = max(1, math.ceil(cfg.min_speech_ms / 10))
    min_silence = math.ceil(cfg.min_silence_ms / 10)
    hang = math.ceil(cfg.hangover_ms / 10)

    turns: list[tuple[float, int, Turn]] = []
    stats: list[TrackStats] = []
    for i, spk in enumerate(speakers):
        vad = vads[i]
        own = np.ones(n, dtype=bool)
        for j in range(len(speakers)):
            if j == i:
                continue
            em = models.get(i)
            if em is not None and em.reference == speakers[j]:
                leak = echo_leak_db(em, energies[j], _SMOOTH_FRAMES)[:n]  # the room's echo of j
            else:
                leak = smoothed[j] + coupling[i][j]  # what track j alone puts into track i
            own &= smoothed[i] > leak + cfg.crosstalk_margin_db
        # digital silence (a line-out) is no noise floor: resampler ringing is not sound
        sound = energies[i] > max(floors[i], _ACTIVITY_FLOOR_DB) + cfg.activity_db
        active = sound & own
        kept = vad & own
        # a hangover keeps the region alive over short dips; refinement trims it back below
        if hang:
            held = kept.copy()
            for _a, b in _runs(kept):
                held[b : min(n, b + hang)] = True
            kept_h = held & own
        else:
            kept_h = kept
        regions = _smooth_runs(kept_h, min_speech, min_silence)
        count = 0
        max_ext = math.ceil(cfg.max_boundary_shift_ms / 10)
        for a, b in regions:
            a = _drop_breath(a, b, active, energies[i])
            ra, rb = _refine(a, b, active, max_ext)
            for pa, pb in _split_at_silence(ra, rb, sound, min_silence):
                if pb - pa < min_speech:
                    continue
                start, end = round(pa * HOP_S, 3), round(min(pb * HOP_S, duration), 3)
                turns.append((start, i, Turn(speaker=spk, start=start, end=end)))
                count += 1
        vad_s = float(np.count_nonzero(vad)) * HOP_S
        stats.append(
            TrackStats(
                speaker=spk,
                voiced_s=float(np.count_nonzero(kept)) * HOP_S,
                crosstalk_s=vad_s - float(np.count_nonzero(kept)) * HOP_S,
                noise_floor_db=floors[i],
                turns=count,
                coupling_db={speakers[j]: coupling[i][j] for j in range(len(speakers)) if j != i},
                echo=models.get(i),
            )
        )
        log.debug("track %s: %d turns, noise floor %.1f dB", spk, count, floors[i])
    turns.sort(key=lambda t: (t[0], t[1]))
    return SegmentResult(tuple(t for _, _, t in turns), tuple(stats), duration)


def _coupling_db(e_i: FloatArray, e_j: FloatArray, floor_j: float) -> float:
    """Level of track j's sound in track i relative to track j (dB), e.g. -20 for crosstalk.

    Estimated as the median of ``E_i - E_j`` over frames where j is strongly active (20 dB over
    its floor) and louder than i. Those are j talking alone, where i holds only j's leakage (or
    its own noise floor, which makes the estimate an upper bound, the safe side); frames where i
    talks are excluded even when i's voice leaks loudly into j. A track that never gets loud
    cannot leak: ``-inf``.
    """
    sel = (e_j > floor_j + _STRONG_DB) & (e_i < e_j)
    if np.count_nonzero(sel) < _MIN_COUPLING_FRAMES:
        return -math.inf
    return float(min(0.0, np.median(e_i[sel] - e_j[sel])))


def _drop_breath(a: int, b: int, active: BoolArray, energy: FloatArray) -> int:
    """The start of region ``[a, b)`` without an inhalation in front of the words.

    The active frames are cut into bursts at pauses of at least :data:`_BREATH_GAP_FRAMES`;
    leading bursts no longer than :data:`_BREATH_MAX_FRAMES` whose loudest frame stays
    :data:`_BREATH_DB` or more below the median of the region's active frames are a breath
    (typically 20 dB down, 0.25–0.45 s long, 0.1–0.3 s ahead of the first word), not speech of
    the turn: the region starts at the next burst. A word's own soft onset is contiguous with
    it and stays; the end is left alone (fading word endings belong to the turn).
    """
    idx = np.flatnonzero(active[a:b])
    if len(idx) < 2:
        return a
    cuts = np.flatnonzero(np.diff(idx) > _BREATH_GAP_FRAMES)
    if not len(cuts):
        return a
    level = float(np.median(energy[a + idx]))
    starts = np.concatenate(([0], cuts + 1))
    ends = np.concatenate((cuts + 1, [len(idx)]))
    k = 0
    while k < len(starts) - 1:
        first, last = a + int(idx[starts[k]]), a + int(idx[ends[k] - 1]) + 1
        if last - first > _BREATH_MAX_FRAMES or float(np.max(energy[first:last])) > (
            level - _BREATH_DB
        ):
            break
        k += 1
    return a + int(idx[starts[k]]) if k else a


def _split_at_silence(a: int, b: int, sound: BoolArray, min_silence: int) -> list[tuple[int, int]]:
    """``[a, b)`` cut at every run of ``min_silence`` or more frames with no sound at all.

    The VAD's hangover and its bridging of short pauses can carry a region across a pause the
    energy grid shows plainly (a clean line-out's digital silence between a backchannel and
    the next turn); a pause that long is a turn boundary, as ``min_silence_ms`` says. Only
    silence cuts (``sound``: over the floor, whoever makes it): the other party's voice in the
    mic during a pause is no reason to cut a turn.
    """
    if b <= a or min_silence <= 0:
        return [(a, b)] if b > a else []
    out: list[tuple[int, int]] = []
    start = a
    for qa, qb in _runs(~sound[a:b]):
        if qb - qa >= min_silence and qa > 0 and a + qb < b:
            out.append((start, a + qa))
            start = a + qb
    out.append((start, b))
    return out


def _refine(a: int, b: int, active: BoolArray, max_ext: int) -> tuple[int, int]:
    """Move a region's edges onto the track's acoustic activity (10 ms grid).

    The start moves back over active frames just before it (VAD reacts a frame late) or forward
    past inactive ones; the end moves back to the last active frame (removing the hangover).
    Shifts are bounded by ``max_ext`` frames beyond the VAD region, so a neighbouring utterance
    is never swallowed.
    """
    n = len(active)
    idx = np.flatnonzero(active[a:b])
    if len(idx) == 0:
        return a, a  # nothing audible of this track's own: a VAD false alarm
    ra, rb = a + int(idx[0]), a + int(idx[-1]) + 1
    lo = max(0, ra - max_ext)
    while ra > lo and active[ra - 1]:
        ra -= 1
    hi = min(n, rb + max_ext)
    while rb < hi and active[rb]:
        rb += 1
    return ra, rb


# --- evaluation ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TurnScore:
    """Turn-level agreement of detected turns with a reference.

    A detected turn matches a reference turn of the same speaker when their temporal IoU is at
    least ``iou``; matching is one-to-one, best IoU first. Boundary errors are ``|start - start'|``
    and ``|end - end'|`` of matched pairs.
    """

    precision: float
    recall: float
    f1: float
    matched: int
    reference: int
    detected: int
    median_boundary_error_s: float
    boundary_errors_s: tuple[float, ...] = field(default=(), repr=False)


def _iou(a: Turn, b: Turn) -> float:
    inter = min(a.end, b.end) - max(a.start, b.start)
    if inter <= 0:
        return 0.0
    union = max(a.end, b.end) - min(a.start, b.start)
    return inter / union if union > 0 else 0.0


def score_turns(reference: Sequence[Turn], detected: Sequence[Turn], iou: float = 0.5) -> TurnScore:
    """F1 and median boundary error of ``detected`` against ``reference`` (see TurnScore)."""
    pairs: list[tuple[float, int, int]] = []
    for i, r in enumerate(reference):
        for j, d in enumerate(detected):
            if r.speaker == d.speaker:
                v = _iou(r, d)
                if v >= iou:
                    pairs.append((v, i, j))
    pairs.sort(key=lambda p: (-p[0], p[1], p[2]))
    used_r: set[int] = set()
    used_d: set[int] = set()
    errors: list[float] = []
    for _, i, j in pairs:
        if i in used_r or j in used_d:
            continue
        used_r.add(i)
        used_d.add(j)
        errors.append(abs(reference[i].start - detected[j].start))
        errors.append(abs(reference[i].end - detected[j].end))
    m = len(used_r)
    precision = m / len(detected) if detected else (1.0 if not reference else 0.0)
    recall = m / len(reference) if reference else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    med = float(np.median(errors)) if errors else math.inf
    return TurnScore(precision, recall, f1, m, len(reference), len(detected), med, tuple(errors))
