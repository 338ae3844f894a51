"""The system's echo in an HM participant's mic, modelled with the room's decay.

In a human–machine (HM) session the system's voice reaches the participant's mic through the
loudspeaker and the room: delayed by a few to some tens of milliseconds and followed by the
room's reverberation, which keeps the system's voice in the mic for a few tenths of a second
after its line-out has gone quiet. A fixed coupling (``E_mic = E_system + c``) describes a dry
delayed copy; against a reverberant one the decaying tail, which WebRTC VAD (level-blind) calls
speech, passes as the participant's own and pulls turn starts early or makes turns of its own.

The system's track is the echo reference. The echo's *power* on the 10 ms grid is modelled as

    P_echo(t) = g * sum_k (1 - a) a^k * max(P_sys(t - k - d) for d in D-1..D+1)

an exponential decay with the room's reverberation time ``RT60`` (``a = 10^(-6 hop / RT60)``:
60 dB per RT60), applied to the system's power delayed by ``D`` frames (widened by a frame
either side: the 10 ms grid does not resolve the delay), scaled by the coupling ``g``. Per
session:

* ``D`` is the lag (0 … ``segment.echo_max_delay_ms``) at which the mic's energy envelope
  correlates best with the system's, over frames where the system talks loud and alone;
* ``g`` is the median of ``E_mic - model`` over frames where the system talks loud and alone
  (as the fixed coupling is estimated);
* ``RT60`` is the shortest candidate of a grid (0 = dry … ``segment.echo_max_rt60_s``) that
  leaves, within 2 %, as few as the best candidate of the mic's frames that would pass for
  its own speech — VAD-voiced or audible (``activity_db`` over its floor) and above the
  modelled echo + margin — *while the system talks or in its tails* (within
  ``echo_max_rt60_s`` after it went quiet): the room's reverberation fills the pauses between
  the system's words and follows its last one, and a decay long enough explains those frames
  away; what no candidate explains is the participant (a backchannel, or a reply 0.1–0.3 s
  later, 20–30 dB above the echo). Longer candidates explain little more and are not free:
  with a loud coupling (mics a metre apart, −10 dB) a too-long tail swallows the
  participant's speech after the other party's backchannel.

The model is a pure function of the energy grids the turn finder keeps anyway
(:class:`~duetflow.corpora.studio.track_features.TrackFeatures`): no extra pass over the audio, no
sample-level filter, deterministic.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

log = logging.getLogger(__name__)

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: candidate reverberation times (s); 0 is a dry leak
RT60_GRID = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0, 1.2, 1.6, 2.0)
_STRONG_DB = 20.0
_MIN_FRAMES = 50
_SLACK = 0.02  # an RT60 this close (relative) to the best explains as much: the shortest wins
_LN_1E6 = math.log(1e6)


@dataclass(frozen=True)
class EchoReturn:
    """The fitted echo model of one mic: its reference track, RT60, coupling and delay."""

    reference: str
    rt60_s: float
    coupling_db: float
    delay_frames: int
    hop_s: float
    tail_frames_explained: int = 0

    def provenance(self) -> dict[str, object]:
        """JSON-friendly summary (``segmentation.tracks.<mic>.echo``)."""
        return {
            "reference": self.reference,
            "rt60_s": self.rt60_s,
            "coupling_db": round(self.coupling_db, 1),
            "delay_ms": round(1000 * self.delay_frames * self.hop_s),
            "tail_frames_explained": self.tail_frames_explained,
        }


def dilate(e_ref: FloatArray, delay: int) -> FloatArray:
    """Power of the reference ``delay`` frames late: at ``t`` the loudest of ``t - delay - 1``
    … ``t - delay + 1`` (frames before the start count as silence)."""
    p = np.power(10.0, e_ref / 10.0)
    out = np.zeros_like(p)
    for k in range(max(0, delay - 1), delay + 2):
        if k < len(p):
            np.maximum(out[k:], p[: len(p) - k], out=out[k:])
    return out


def _best_delay(mic_db: FloatArray, ref_db: FloatArray, sel: BoolArray, reach: int) -> int:
    """The lag (frames) at which the mic's envelope follows the reference's best on ``sel``."""
    t = np.flatnonzero(sel)
    best, best_r = 0, -math.inf
    for k in range(0, reach + 1):
        tk = t[t >= k]
        if len(tk) < _MIN_FRAMES:
            break
        a, b = mic_db[tk], ref_db[tk - k]
        sa, sb = float(np.std(a)), float(np.std(b))
        if sa <= 0 or sb <= 0:
            continue
        r = float(np.mean((a - a.mean()) * (b - b.mean()))) / (sa * sb)
        if r > best_r + 1e-9:
            best, best_r = k, r
    return best


def echo_power(p_dil: FloatArray, rt60_s: float, hop_s: float) -> FloatArray:
    """The dilated reference power through an exponential decay of ``rt60_s`` (unit gain)."""
    if rt60_s <= 0 or len(p_dil) == 0:
        return p_dil
    a = math.exp(-_LN_1E6 * hop_s / rt60_s)
    from scipy.signal import lfilter  # lazily: a reused ingest step loads no scipy.signal

    out: FloatArray = np.asarray(lfilter([1.0 - a], [1.0, -a], p_dil), dtype=np.float64)
    return out


def smoothed_db(p: FloatArray, width: int) -> FloatArray:
    """Moving average of power over ``width`` frames, in dB (the turn finder's smoothing)."""
    if width > 1 and len(p):
        p = np.convolve(p, np.ones(width) / width, mode="same")
    out = np.maximum(p, 1e-12)
    np.log10(out, out=out)
    out *= 10.0
    return out


def fit_echo_return(
    reference: str,
    mic_energy: FloatArray,
    mic_smoothed: FloatArray,
    ref_energy: FloatArray,
    ref_floor_db: float,
    mic_voiced: BoolArray,
    *,
    mic_floor_db: float,
    activity_db: float,
    hop_s: float,
    margin_db: float,
    max_delay_s: float,
    max_rt60_s: float,
    smooth_frames: int,
) -> EchoReturn | None:
    """Fit :class:`EchoReturn` (module docstring) on one mic's grids; None without enough
    loud reference to fit on (a line-out that hardly ever talks: the caller keeps the fixed
    coupling)."""
    n = min(len(mic_smoothed), len(ref_energy), len(mic_voiced), len(mic_energy))
    mic = mic_smoothed[:n]
    reach = max(0, math.ceil(max_delay_s / hop_s))
    ref_db = smoothed_db(np.power(10.0, ref_energy[:n] / 10.0), smooth_frames)
    sel = (ref_db > ref_floor_db + _STRONG_DB) & (mic < ref_db)
    del ref_db
    if np.count_nonzero(sel) < _MIN_FRAMES:
        return None
    delay = _best_delay(mic_energy[:n], ref_energy[:n], sel, reach)
    p_dil = dilate(ref_energy[:n], delay)
    ref_dil_db = smoothed_db(p_dil, smooth_frames)
    strong = ref_dil_db > ref_floor_db + _STRONG_DB
    alone = strong & (mic < ref_dil_db)
    del ref_dil_db
    if np.count_nonzero(alone) < _MIN_FRAMES:
        return None
    # while the system talks and in its tails (loud within the longest decay considered)
    span = max(1, math.ceil(max_rt60_s / hop_s))
    cs = np.concatenate(([0], np.cumsum(strong, dtype=np.int64)))
    recent = cs[1:] > cs[np.maximum(np.arange(n) - span, 0)]
    del cs
    # what the turn finder could take for speech there: voiced, or audible over the floor
    tail_voiced = recent & (mic_voiced[:n] | (mic > mic_floor_db + activity_db))
    del recent
    grid = [t for t in RT60_GRID if t <= max_rt60_s] or [0.0]
    fits: list[tuple[float, float, int]] = []
    for rt in grid:
        model = smoothed_db(echo_power(p_dil, rt, hop_s), smooth_frames)
        model -= mic  # model - mic: the coupling is the median of its negative
        c = float(min(0.0, -np.median(model[alone])))
        above = int(np.count_nonzero(tail_voiced & (model < -(c + margin_db))))
        fits.append((rt, c, above))
        del model
    log.debug("echo fit of %s (delay %d frames): %s", reference, delay, fits)
    best = min(f[2] for f in fits)
    slack = max(3, math.ceil(_SLACK * best))
    first = fits[0][2]
    rt, c, left = next(f for f in fits if f[2] <= best + slack)
    return EchoReturn(reference, rt, c, delay, hop_s, first - left)


def echo_leak_db(model: EchoReturn, ref_energy: FloatArray, smooth_frames: int) -> FloatArray:
    """What the reference puts into the mic under ``model`` (dB on the 10 ms grid, smoothed)."""
    p = echo_power(dilate(ref_energy, model.delay_frames), model.rt60_s, model.hop_s)
    out = smoothed_db(p, smooth_frames)
    out += model.coupling_db
    return out
