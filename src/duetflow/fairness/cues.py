"""Per-dialogue cues the pipeline controls, measured from the rendered audio and the turn rows.

One dialogue at a time (:func:`measure_dialogue` on samples, :func:`measure_file` on a file,
:func:`measure_all` over a stream): nothing is kept but one small :class:`DialogueCues` record
per dialogue. Every cue is declared once in :data:`CUES` (name, unit, meaning, and whether it
is a property of the conversation rather than of the pipeline between HH and HM); the record's
float fields are exactly those names (checked at import).

Regions on the dialogue timeline come from the turn rows (``kind`` turn or backchannel is
speech): *speech* is the union of the turns, *pauses* are the stretches between them inside
``[first start, last end]`` with :data:`EDGE_MARGIN_S` cut off at both ends (a turn row's edge
is a speech edge, so the margin keeps decays and onsets out), kept when at least
:data:`MIN_PAUSE_S` long. Spectra are averaged Hann-windowed power spectra
(:data:`FRAME` samples, half overlap) over the frames lying wholly inside a region of the mono
mix (what a listener hears). Bandwidths are the frequency under which :data:`BANDWIDTH_SHARE`
of the region's energy lies; the pause roll-off uses :data:`ROLLOFF_SHARE`; the pause tilt is
the slope of the pause spectrum in dB per octave between :data:`TILT_BAND_HZ`, each octave
weighted alike. A cue that a dialogue cannot have (no pause, one speaker change) is NaN.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from duetflow.audio.bs1770 import SILENCE_LUFS, measure_each, true_peak_dbtp
from duetflow.audio.io import read_frames
from duetflow.config.render import RenderConfig
from duetflow.errors import DuetflowError
from duetflow.records.rows import RenderedDialogueRow, RenderedTurnRow
from duetflow.tts.speaking_rate import dialogue_rate_cps

log = logging.getLogger(__name__)

FloatArray = np.ndarray[Any, np.dtype[np.float64]]

#: Seconds cut off each end of a pause before its floor and spectrum are measured.
EDGE_MARGIN_S = 0.03
#: Shortest pause (after the margins) that counts as floor material, seconds.
MIN_PAUSE_S = 0.06
#: Samples per spectrum frame at any rate (hop: half of it).
FRAME = 1024
#: Share of a region's spectral energy under its effective bandwidth.
BANDWIDTH_SHARE = 0.99
#: Share of the pause's spectral energy under its roll-off frequency.
ROLLOFF_SHARE = 0.85
#: Band of the pause tilt fit, Hz (the upper end is capped at 0.45 × the sample rate).
TILT_BAND_HZ = (100.0, 8000.0)
#: Width of the moving average over the spectrum before its band edge is read, Hz.
EDGE_SMOOTH_HZ = 125.0
#: Band whose median level is the spectrum's in-band level for the band edge, Hz.
IN_BAND_HZ = (300.0, 3000.0)
#: Where, below the cliff, the level the band edge is read against lies (Hz below the cliff).
EDGE_REFERENCE_HZ = (400.0, 700.0)
#: The band edge: where the spectrum has fallen this far under the level just inside it, dB.
EDGE_DROP_DB = 30.0
#: Level of digital silence, dBFS (a power of exactly 0).
SILENT_DB = -150.0
#: ``ceiling_margin_db`` reads at most this (dB): a true peak further under the ceiling says
#: only that the ceiling did not act, and how far under is the voice's crest factor
#: (``peak_dbfs``), not the pipeline's doing. On the scale-16 sample build every true peak
#: lies 0.85 dB or more under the -1 dBTP ceiling (HH/HM -5.5 +- 0.8, PH -3.5 +- 0.5 dBTP).
CEILING_REACH_DB = 1.0
_RENDER_DEFAULTS = RenderConfig()


@dataclass(frozen=True)
class Cue:
    """One cue: its column, unit and meaning, whether the gate counts it, and its floor.

    ``conversation``: between HH and HM the cue belongs to the conversation (a machine answers
    at length), so it is reported there but not gated; wherever PH takes part it comes from the
    scripts and the pipeline, and counts.

    ``voice``: the cue measures the speakers themselves through a channel the pipeline holds
    equal (their spectrum, their crest factor; DNSMOS's judgement of them, issue 29, read from
    the manifest); it is reported in every pair but never gated and never given to the
    classifier: a listener *should* tell the categories apart by the voices, and the pipeline's
    part of each voice cue is gated through its own cue (named in :data:`CUES`' comments and
    docs/fairness.md).

    ``floor``: the smallest difference of the two sides' means, in ``unit``, that counts (an
    inaudible step below a listener's difference limen, or the instrument's own resolution;
    docs/fairness.md gives each reason). A gated cue whose means differ by less fails neither
    the d check nor the separator check, and the classifier sees it in steps of
    ``max(spread, floor)``. 0: any difference counts.
    """

    name: str
    unit: str
    meaning: str
    conversation: bool = False
    voice: bool = False
    floor: float = 0.0
    #: read from the dialogue's manifest row (null there: NaN), not measured from the audio
    manifest: bool = False


#: Every cue, in table order: the one declaration (fields of :class:`DialogueCues`, columns of
#: ``cues.parquet``, rows of the per-pair summary, the report's plots). What is gated and each
#: floor's reason: docs/fairness.md, *Which cues the gate counts*.
CUES: tuple[Cue, ...] = (
    Cue("sample_rate", "Hz", "output sample rate"),
    # the channel's band edge, from speech and pauses together: the pipeline's bandwidth
    Cue("band_edge_hz", "Hz", "where the file's spectrum falls to its stop band", floor=100.0),
    # the voice's spectrum under the channel: band_edge_hz is the pipeline's part of it
    Cue("bandwidth_speech_hz", "Hz", "99 % spectral-energy frequency of the speech", voice=True),
    Cue("bandwidth_pause_hz", "Hz", "99 % spectral-energy frequency of the pauses", floor=100.0),
    Cue("pause_rolloff_hz", "Hz", "85 % spectral-energy frequency of the pauses", floor=100.0),
    Cue("pause_tilt_db_oct", "dB/oct", "slope of the pause spectrum, 100 Hz-8 kHz", floor=0.5),
    Cue("floor_dbfs", "dBFS", "mean power of the pauses (room tone level)", floor=0.5),
    # as render.floor_db sets it: the floor under the speech's BS.1770 loudness
    Cue("snr_db", "dB", "speech loudness (LUFS) over the pauses' power (dBFS)", floor=0.5),
    # the same in unweighted power: at one loudness it follows the voice's spectrum
    Cue("snr_unweighted_db", "dB", "speech power over that of the pauses", voice=True),
    Cue("lead_in_s", "s", "silence before the first turn", floor=0.005),
    Cue("tail_s", "s", "silence after the last turn", floor=0.005),
    Cue("gap_mean_ms", "ms", "mean gap at speaker changes (negative: overlap)", floor=5.0),
    Cue("gap_sd_ms", "ms", "standard deviation of the gaps at speaker changes", floor=5.0),
    Cue("gap_min_ms", "ms", "smallest gap at a speaker change", floor=5.0),
    Cue("overlaps_per_min", "1/min", "speaker changes where the next turn starts early"),
    Cue("loudness_lufs", "LUFS", "integrated loudness of the mix (BS.1770)", floor=0.5),
    Cue("loudness_ab_lu", "LU", "|A - B| loudness of the two speakers' solo speech", floor=0.5),
    # crest factor of the voices at one loudness; the pipeline's part is the two cues below
    Cue("peak_dbfs", "dBFS", "sample peak", voice=True),
    # the true-peak ceiling: at it (limited), over it (clipped, a higher or no ceiling)
    Cue(
        "ceiling_margin_db",
        "dB",
        "true-peak ceiling less the file's true peak, capped at 1 dB",
        floor=0.2,
    ),
    # a file turned down under the loudness target (by a ceiling, any ceiling, or a gain)
    Cue("speech_level_lu", "LU", "louder speaker's loudness less the target", floor=0.5),
    Cue("dc", "FS", "mean sample value of the mix", floor=1e-4),
    Cue("duration_s", "s", "dialogue duration", floor=1.0),
    Cue("n_turns", "turns", "turns (backchannels not counted)", conversation=True, floor=1.0),
    Cue("turns_per_min", "1/min", "turns per minute", conversation=True, floor=1.0),
    Cue(
        "speech_rate_cps",
        "chars/s",
        "spoken characters per second of speech",
        conversation=True,
        floor=0.5,
    ),
    # issue 29: DNSMOS from the manifest (quality.dnsmos), reported only
    Cue("dnsmos_ovrl", "MOS", "DNSMOS overall quality of the mix", voice=True, manifest=True),
    Cue("dnsmos_sig", "MOS", "DNSMOS speech signal quality of the mix", voice=True, manifest=True),
    Cue(
        "dnsmos_bak",
        "MOS",
        "DNSMOS background (noise) quality of the mix",
        voice=True,
        manifest=True,
    ),
)

CUE_NAMES: tuple[str, ...] = tuple(c.name for c in CUES)
CUE_BY_NAME: dict[str, Cue] = {c.name: c for c in CUES}


@dataclass(frozen=True)
class DialogueCues:
    """The cues of one dialogue (a row of ``cues.parquet``); NaN where a cue does not apply."""

    dialogue_id: str
    corpus: str
    category: str
    language: str
    sample_rate: float
    band_edge_hz: float
    bandwidth_speech_hz: float
    bandwidth_pause_hz: float
    pause_rolloff_hz: float
    pause_tilt_db_oct: float
    floor_dbfs: float
    snr_db: float
    snr_unweighted_db: float
    lead_in_s: float
    tail_s: float
    gap_mean_ms: float
    gap_sd_ms: float
    gap_min_ms: float
    overlaps_per_min: float
    loudness_lufs: float
    loudness_ab_lu: float
    peak_dbfs: float
    ceiling_margin_db: float
    speech_level_lu: float
    dc: float
    duration_s: float
    n_turns: float
    turns_per_min: float
    speech_rate_cps: float
    # reported-only voice cues from the manifest (NaN when quality.dnsmos was off)
    dnsmos_ovrl: float = math.nan
    dnsmos_sig: float = math.nan
    dnsmos_bak: float = math.nan

    def value(self, cue: str) -> float:
        """The value of one cue by name."""
        return float(getattr(self, cue))

    def to_row(self) -> dict[str, Any]:
        """The record as a table row."""
        return dataclasses.asdict(self)


#: The leading (identifying) columns of :class:`DialogueCues`.
ID_COLUMNS = ("dialogue_id", "corpus", "category", "language")
_FIELDS = tuple(f.name for f in dataclasses.fields(DialogueCues))
if _FIELDS != ID_COLUMNS + CUE_NAMES:  # pragma: no cover - a declaration error
    raise AssertionError(f"DialogueCues fields {_FIELDS} do not match CUES {CUE_NAMES}")


@dataclass(frozen=True)
class Levels:
    """The levels the pipeline holds every file to (``render`` section): the true-peak ceiling
    and the loudness target, against which ``ceiling_margin_db`` and ``speech_level_lu`` are
    read. The defaults are :class:`~duetflow.config.render.RenderConfig`'s."""

    ceiling_dbtp: float = _RENDER_DEFAULTS.true_peak_ceiling_dbtp
    target_lufs: float = _RENDER_DEFAULTS.loudness_target_lufs

    @classmethod
    def of(cls, render: RenderConfig) -> Levels:
        """The levels a run config's render section sets."""
        return cls(render.true_peak_ceiling_dbtp, render.loudness_target_lufs)


#: The render section's default levels.
DEFAULT_LEVELS = Levels()


@dataclass(frozen=True)
class TurnSpan:
    """What the cues need of a turn row: whose, what kind, when, what was said."""

    speaker: str
    kind: str
    start_s: float
    end_s: float
    text: str = ""

    @classmethod
    def of(cls, t: RenderedTurnRow) -> TurnSpan:
        return cls(str(t.speaker), str(t.kind), float(t.start_s), float(t.end_s), str(t.text))


# --- regions and spectra ------------------------------------------------------------------------


def _merge(spans: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for s, e in sorted(spans):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def speech_spans(turns: Sequence[TurnSpan]) -> list[tuple[float, float]]:
    """The union of the speech turns (turns and backchannels), seconds, sorted."""
    return _merge((t.start_s, t.end_s) for t in turns if t.kind != "nonspeech")


def pause_spans(speech: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The stretches between speech spans, each shortened by the margin at both ends."""
    out = []
    for (_, e0), (s1, _) in itertools.pairwise(speech):
        s, e = e0 + EDGE_MARGIN_S, s1 - EDGE_MARGIN_S
        if e - s >= MIN_PAUSE_S:
            out.append((s, e))
    return out


def _frame_starts(
    n: int, sr: int, spans: Sequence[tuple[float, float]]
) -> np.ndarray[Any, np.dtype[np.intp]]:
    """First sample of every frame wholly inside ``spans`` (hop: half a frame), in span order."""
    hop = FRAME // 2
    starts = [
        np.arange(a, b - FRAME + 1, hop)
        for a, b in ((max(0, round(s * sr)), min(n, round(e * sr))) for s, e in spans)
        if b - a >= FRAME
    ]
    return np.concatenate(starts) if starts else np.zeros(0, dtype=np.intp)


#: Frames per FFT block (bounded memory for long regions; the blocks set the summation order).
_BLOCK = 256


def power_spectrum(x: FloatArray, sr: int, spans: Sequence[tuple[float, float]]) -> FloatArray:
    """Mean Hann-windowed power spectrum of the frames wholly inside ``spans`` (empty: none).

    The frames are copied out of a sliding-window view by their starts, :data:`_BLOCK` at a
    time (no per-frame Python); each block's powers are summed before the running total, so
    every sum runs in the same order as frame by frame.
    """
    starts = _frame_starts(len(x), sr, spans)
    if not starts.size:
        return np.zeros(0)
    win = np.hanning(FRAME)
    frames = np.lib.stride_tricks.sliding_window_view(x, FRAME)  # a view: frame i starts at i
    total = np.zeros(FRAME // 2 + 1)
    for i in range(0, starts.size, _BLOCK):
        block = frames[starts[i : i + _BLOCK]]  # a copy of those frames
        block *= win
        spec = np.abs(np.fft.rfft(block, axis=1))
        total += np.square(spec, out=spec).sum(axis=0)
    return total / starts.size


def energy_frequency(psd: FloatArray, sr: int, share: float) -> float:
    """The frequency under which ``share`` of the spectrum's energy lies (NaN: no energy)."""
    if psd.size == 0:
        return math.nan
    cum = np.cumsum(psd)
    if cum[-1] <= 0:
        return math.nan
    idx = int(np.searchsorted(cum, share * cum[-1]))
    return float(idx * sr / FRAME)


def band_edge(psd: FloatArray, sr: int) -> float:
    """Where the spectrum falls to its stop band: the channel's band edge, Hz (NaN: no energy).

    The spectrum is smoothed over :data:`EDGE_SMOOTH_HZ`. First the cliff is found: the highest
    frequency where the level still reaches halfway (in dB) between the in-band level (the
    median over :data:`IN_BAND_HZ`) and the stop band (the lowest level). Then the edge is read
    against the level just inside it (the median over :data:`EDGE_REFERENCE_HZ` below the
    cliff): the highest frequency within :data:`EDGE_DROP_DB` of that level, interpolated
    between bins. A low-pass puts its cliff at the same place whatever the voice above which it
    acts (the room tone of the pauses reaches it too); read against the level at the cliff, not
    in band, the voice's spectral balance hardly moves it.
    """
    if psd.size == 0 or not np.any(psd > 0):
        return math.nan
    bin_hz = sr / FRAME
    k = max(1, round(EDGE_SMOOTH_HZ / bin_hz))
    level = 10.0 * np.log10(np.convolve(psd, np.ones(k) / k, mode="same") + 1e-30)
    level = level[k : level.size - k]  # the moving average's own edges are not the channel's
    f = (np.arange(level.size) + k) * bin_hz
    band = (f >= IN_BAND_HZ[0]) & (f <= min(IN_BAND_HZ[1], 0.45 * sr))
    if level.size < 2 or not band.any():
        return math.nan
    half = 0.5 * (float(np.median(level[band])) + float(level.min()))
    cliff = f[int(np.flatnonzero(level >= half)[-1])]
    near = (f >= cliff - EDGE_REFERENCE_HZ[1]) & (f <= cliff - EDGE_REFERENCE_HZ[0])
    ref = float(np.median(level[near])) if near.any() else half
    cut = ref - EDGE_DROP_DB
    i = int(np.flatnonzero(level >= cut)[-1])
    if i + 1 >= level.size:
        return float(f[i])
    t = (level[i] - cut) / (level[i] - level[i + 1])
    return float(f[i] + t * bin_hz)


def spectral_tilt(psd: FloatArray, sr: int) -> float:
    """Slope of the spectrum in dB per octave over :data:`TILT_BAND_HZ` (NaN: no energy)."""
    if psd.size == 0:
        return math.nan
    f = np.arange(psd.size) * sr / FRAME
    lo, hi = TILT_BAND_HZ[0], min(TILT_BAND_HZ[1], 0.45 * sr)
    sel = (f >= lo) & (f <= hi) & (psd > 0)
    if sel.sum() < 3:
        return math.nan
    octaves = np.log2(f[sel])
    level = 10.0 * np.log10(psd[sel])
    # linear bins crowd the high octaves: weight each bin by 1/f so every octave counts alike
    slope = np.polyfit(octaves, level, 1, w=1.0 / np.sqrt(f[sel]))[0]
    return float(slope)


def _power_db(x: FloatArray, sr: int, spans: Sequence[tuple[float, float]]) -> float:
    total, n = 0.0, 0
    for s, e in spans:
        seg = x[max(0, round(s * sr)) : min(len(x), round(e * sr))]
        # einsum, not np.dot: BLAS's dot spreads a long sum over threads that spin for more
        # CPU than the sum itself (3-4x here on 2 cores, worse under load)
        total += float(np.einsum("i,i->", seg, seg))
        n += seg.size
    if n == 0:
        return math.nan
    return SILENT_DB if total <= 0 else max(SILENT_DB, 10.0 * math.log10(total / n))


# --- timing, loudness, text ---------------------------------------------------------------------


def change_gaps_s(turns: Sequence[TurnSpan]) -> list[float]:
    """Gaps (seconds; negative: overlap) at the speaker changes between consecutive turns.

    Turns of kind ``turn`` only, in start order: a backchannel does not take the floor.
    """
    floor = sorted((t for t in turns if t.kind == "turn"), key=lambda t: (t.start_s, t.end_s))
    return [b.start_s - a.end_s for a, b in itertools.pairwise(floor) if a.speaker != b.speaker]


def _parts(x: FloatArray, sr: int, spans: Iterable[tuple[float, float]]) -> FloatArray | None:
    """The spans of ``x`` laid end to end as float32 (None: none of them holds a sample)."""
    parts = [x[max(0, round(s * sr)) : min(len(x), round(e * sr))] for s, e in spans]
    parts = [p for p in parts if p.size]
    return np.concatenate(parts).astype(np.float32) if parts else None


def _speaker_spans(turns: Sequence[TurnSpan], name: str, own: bool) -> list[tuple[float, float]]:
    """One speaker's speech: every turn on their own channel, or their solo turns in a mix."""
    others = [(t.start_s, t.end_s) for t in turns if t.speaker != name and t.kind != "nonspeech"]
    return [
        (t.start_s, t.end_s)
        for t in turns
        if t.speaker == name
        and t.kind != "nonspeech"
        and (own or not any(o0 < t.end_s and t.start_s < o1 for o0, o1 in others))
    ]


def _loudnesses(signals: Sequence[FloatArray | None], sr: int) -> list[float]:
    """BS.1770 loudness of each signal (NaN: none, or silent); the K-weighting two at a time
    (:func:`~duetflow.audio.bs1770.measure_each`, the same numbers as one at a time)."""
    present = [x for x in signals if x is not None]
    measured = iter(measure_each(present, sr))
    out = []
    for x in signals:
        lufs = next(measured).lufs if x is not None else math.nan
        out.append(lufs if lufs > SILENCE_LUFS else math.nan)
    return out


# --- one dialogue -------------------------------------------------------------------------------


def measure_dialogue(
    samples: np.ndarray[Any, Any],
    sr: int,
    turns: Sequence[TurnSpan],
    *,
    dialogue_id: str,
    corpus: str,
    category: str,
    language: str,
    speakers: tuple[str, str],
    levels: Levels = DEFAULT_LEVELS,
) -> DialogueCues:
    """The cues of one dialogue from its samples (frames × channels, or mono) and turns.

    ``speakers`` are (A, B); with two or more channels channel *i* is speaker *i*'s track.
    ``levels``: the ceiling and loudness target the file was rendered to.
    """
    tracks = np.asarray(samples, dtype=np.float64)
    if tracks.ndim == 1:
        tracks = tracks[:, None]
    # one channel: the mix is that channel (the mean of one value is the value, bit for bit)
    mix = tracks[:, 0] if tracks.shape[1] == 1 else tracks.mean(axis=1)
    dur = mix.size / sr
    speech = speech_spans(turns)
    pauses = pause_spans(speech)
    sp_psd = power_spectrum(mix, sr, speech)
    pa_psd = power_spectrum(mix, sr, pauses)
    file_psd = power_spectrum(mix, sr, [(0.0, mix.size / sr)])
    floor = _power_db(mix, sr, pauses)
    speech_db = _power_db(mix, sr, speech)
    gaps = np.asarray(change_gaps_s(turns)) * 1000.0
    floor_turns = [t for t in turns if t.kind == "turn"]
    rate = dialogue_rate_cps((t.start_s, t.end_s, t.text) for t in turns if t.kind != "nonspeech")
    # each speaker's loudness: own channel, or their solo parts of the mix
    own = tracks.shape[1] >= 2
    lufs, speech_lufs, la, lb = _loudnesses(
        [
            mix.astype(np.float32) if mix.size else None,
            _parts(mix, sr, speech),
            *(
                _parts(tracks[:, who] if own else mix, sr, _speaker_spans(turns, name, own))
                for who, name in enumerate(speakers)
            ),
        ],
        sr,
    )
    peak = float(np.max(np.abs(tracks))) if tracks.size else 0.0
    tp = max((true_peak_dbtp(tracks[:, c], sr) for c in range(tracks.shape[1])), default=-math.inf)
    margin = min(CEILING_REACH_DB, levels.ceiling_dbtp - tp) if math.isfinite(tp) else math.nan
    louder = max((v for v in (la, lb) if not math.isnan(v)), default=math.nan)
    minutes = dur / 60.0 if dur > 0 else math.nan
    return DialogueCues(
        dialogue_id=dialogue_id,
        corpus=corpus,
        category=category,
        language=language,
        sample_rate=float(sr),
        band_edge_hz=band_edge(file_psd, sr),
        bandwidth_speech_hz=energy_frequency(sp_psd, sr, BANDWIDTH_SHARE),
        bandwidth_pause_hz=energy_frequency(pa_psd, sr, BANDWIDTH_SHARE),
        pause_rolloff_hz=energy_frequency(pa_psd, sr, ROLLOFF_SHARE),
        pause_tilt_db_oct=spectral_tilt(pa_psd, sr),
        floor_dbfs=floor,
        snr_db=speech_lufs - floor,
        snr_unweighted_db=speech_db - floor,
        lead_in_s=speech[0][0] if speech else math.nan,
        tail_s=dur - speech[-1][1] if speech else math.nan,
        gap_mean_ms=float(gaps.mean()) if gaps.size else math.nan,
        gap_sd_ms=float(gaps.std(ddof=1)) if gaps.size > 1 else math.nan,
        gap_min_ms=float(gaps.min()) if gaps.size else math.nan,
        overlaps_per_min=float((gaps < 0).sum()) / minutes,
        loudness_lufs=lufs,
        loudness_ab_lu=abs(la - lb),
        peak_dbfs=20.0 * math.log10(peak) if peak > 0 else SILENT_DB,
        ceiling_margin_db=margin,
        speech_level_lu=louder - levels.target_lufs,
        dc=float(mix.mean()) if mix.size else math.nan,
        duration_s=dur,
        n_turns=float(len(floor_turns)),
        turns_per_min=len(floor_turns) / minutes,
        # no words (VAD-detected turns without a transcript): no rate, rather than 0
        speech_rate_cps=rate,
    )


def measure_file(
    row: RenderedDialogueRow,
    turns: Sequence[RenderedTurnRow],
    path: Path | str,
    levels: Levels = DEFAULT_LEVELS,
) -> DialogueCues:
    """The cues of one rendered dialogue from its audio file and turn rows (the manifest's own
    cues, :attr:`Cue.manifest`, from its row)."""
    samples, sr = read_frames(path)
    cues = measure_dialogue(
        samples,
        sr,
        [TurnSpan.of(t) for t in turns],
        dialogue_id=str(row.dialogue_id),
        corpus=str(row.corpus),
        category=str(row.category),
        language=str(row.language),
        speakers=(str(row.speaker_a), str(row.speaker_b)),
        levels=levels,
    )
    voice = {c.name: getattr(row, c.name, None) for c in CUES if c.manifest}
    return dataclasses.replace(
        cues,
        **{k: math.nan if v is None else float(v) for k, v in voice.items()},  # type: ignore[arg-type]
    )


def measure_all(
    items: Iterable[tuple[RenderedDialogueRow, Sequence[RenderedTurnRow], Path | str]],
    errors: list[str] | None = None,
    levels: Levels = DEFAULT_LEVELS,
) -> Iterator[DialogueCues]:
    """The cues of a stream of (dialogue row, its turns, its audio file), one file at a time.

    A dialogue whose audio cannot be read is left out with its reason appended to ``errors``
    (logged); the rest go on.
    """
    for row, turns, path in items:
        try:
            yield measure_file(row, turns, path, levels)
        except DuetflowError as e:
            log.warning("cue audit: %s not measured: %s", row.dialogue_id, e)
            if errors is not None:
                errors.append(f"{row.dialogue_id}: {e}")
