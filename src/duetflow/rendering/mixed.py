"""Rendering a mixed mono source: blocks of continuous talk move together.

Overlapping turns cannot be pulled apart, so blocks
(:func:`~duetflow.acoustics.blocks.merge_blocks`) are trimmed, gained with a per-speaker curve
measured on non-overlapped speech, and only the silences between blocks are re-timed
(:func:`~duetflow.turntaking.retime.layout_blocks`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from duetflow.acoustics import source_acoustics
from duetflow.acoustics.blocks import merge_blocks
from duetflow.acoustics.extent_bounds import block_bounds, sample_span
from duetflow.acoustics.window import track_view, window_floor
from duetflow.audio import bs1770, edges
from duetflow.audio import loudness as ld
from duetflow.audio.mix import fade_envelope, smooth_steps
from duetflow.config import RunConfig
from duetflow.errors import InputError
from duetflow.records.dialogue import Dialogue, MixedMonoSource, Turn, TurnKind
from duetflow.rendering.assembly import Bed, Clip
from duetflow.rendering.gaps import measured_gaps_ms, rows_at_changes
from duetflow.rendering.mixdown import Change, mixdown
from duetflow.rendering.roomtone import (
    Tone,
    colour,
    describe_tone,
    file_floor,
    find_tone,
    tone_rng,
)
from duetflow.rendering.rows import Rendering, turn_row
from duetflow.rendering.sources import CONTEXT_S, band_limited, bandwidth_record, load_mixed
from duetflow.turntaking.retime import (
    edge_silence_s,
    layout_blocks,
    mixed_speech_indices,
)

log = logging.getLogger(__name__)


def render_mixed(
    d: Dialogue, turns: Sequence[Turn], config: RunConfig, rng: np.random.Generator
) -> tuple[Rendering, dict[str, int]]:
    """Render a mixed mono window; returns the result and the file read (with its sample
    rate)."""
    cfg, sr = config.render, config.sample_rate
    src = d.source
    assert isinstance(src, MixedMonoSource)
    pad_n = int(round(cfg.trim_pad_ms / 1000.0 * sr))
    fade_n = max(1, int(round(cfg.fade_ms / 1000.0 * sr)))
    track, file_sr = load_mixed(d, src, turns, sr, CONTEXT_S)
    limit = cfg.bandwidth_for(d.language)  # one effective bandwidth per language
    bandwidth = bandwidth_record([track], sr, limit)
    track = band_limited(track, sr, limit)
    ids = [s.id for s in d.speakers]
    v = track_view(d, track, turns, sr)
    floor, rec = window_floor(track, v, sr)
    floor = floor or edges.DIGITAL_FLOOR

    keep, dropped = mixed_speech_indices(turns, cfg)
    raw_blocks = merge_blocks(turns, keep, config.turns.min_overlap_s)
    limits = block_bounds(track, raw_blocks, sr)

    def locate(k: int, on: float | None = None, off: float | None = None) -> edges.Extent | None:
        blk, (b0, b1) = raw_blocks[k], limits[k]
        hint = ((blk.start - track.t0) * sr, (blk.end - track.t0) * sr)
        lims = (max(0.0, (b0 - track.t0) * sr), min(float(track.n), (b1 - track.t0) * sr))
        return source_acoustics.extent(v, floor, hint, lims, onset_db=on, offset_db=off)

    coarse: list[edges.Extent] = []
    for k, blk in enumerate(raw_blocks):
        ext = locate(k)
        if ext is None:
            raise InputError(
                src.path,
                f"no audible speech in {blk.start:.3f}-{blk.end:.3f} s (turns {list(blk.members)})",
                reason="silent_turn",
            )
        coarse.append(ext)

    # who speaks alone where (track samples), for measurement and the gain curve
    masks = {s: np.zeros(track.n, dtype=bool) for s in ids}
    for i in keep:
        t = turns[i]
        if t.speaker in masks:
            masks[t.speaker][max(0, track.index(t.start, sr)) : track.index(t.end, sr)] = True
    inside = np.zeros(track.n, dtype=bool)
    for ext in coarse:
        i0, i1 = sample_span(ext)
        inside[i0:i1] = True
    alone_of: dict[str, np.ndarray] = {}
    for s in ids:
        others = np.zeros(track.n, dtype=bool)
        for o in ids:
            if o != s:
                others |= masks[o]
        alone_of[s] = masks[s] & ~others
    loud: dict[str, ld.Loudness] = {}
    for s in ids:
        alone = alone_of[s] & inside
        if not alone.any():
            alone = masks[s] & inside
        loud[s] = (
            bs1770.measure(track.samples[alone], sr)
            if alone.any()
            else ld.Loudness(ld.SILENCE_LUFS, "silent")
        )
    gains = {s: ld.gain_to_target(loud[s].lufs, cfg.loudness_target_lufs) for s in ids}
    mid_db = float(np.mean([gains[s] for s in ids]))
    g = np.full(track.n, ld.db_to_gain(mid_db), dtype=np.float64)
    for s in ids:
        g[alone_of[s]] = ld.db_to_gain(gains[s])
    gsm = smooth_steps(g, fade_n)

    # the file's floor: the recording's floor under the larger gain; tone from the recording
    tone: Tone | None = None
    if cfg.room_tone and not floor.digital:
        exts = [(e.start, e.end) for e in coarse]
        tone = find_tone("mix", track, v, floor, exts, rec, sr, tone_rng(config, d))
    post = [floor.gained(gains[s]) for s in ids]
    out_floor = file_floor(cfg, post, tone)
    tone = colour(tone, cfg.tone_tilt_for(d.language), sr, limit)  # one per language
    target = edges.ABSOLUTE_FLOOR_DB if out_floor is None else out_floor
    extents: list[edges.Extent] = []
    for k, (blk, ext) in enumerate(zip(raw_blocks, coarse, strict=True)):
        on = target - gains.get(blk.first_speaker, mid_db)
        off = target - gains.get(blk.last_speaker, mid_db)
        fine = locate(k, on, off) if floor.digital or max(
            abs(on - floor.db), abs(off - floor.db)
        ) > 0.5 else ext  # fmt: skip
        extents.append(fine or ext)

    blocks = [
        replace(blk, start=track.t0 + i0 / sr, end=track.t0 + i1 / sr)
        for blk, (i0, i1) in zip(raw_blocks, map(sample_span, extents), strict=True)
    ]
    lead = edge_silence_s(cfg)
    starts, gaps, after, duration = layout_blocks(blocks, cfg, rng, lead_s=lead, tail_s=lead)

    # clip bounds: the pad never reaches into the neighbouring block's speech
    cuts = [sample_span(e) for e in extents]
    lims = [(0, track.n) for _ in blocks]
    for k in range(len(blocks) - 1):
        e1, n0 = cuts[k][1], cuts[k + 1][0]
        if n0 - e1 < 2 * pad_n:
            mid = (e1 + n0) // 2
            lims[k] = (lims[k][0], mid)
            lims[k + 1] = (mid, lims[k + 1][1])
    clips: list[Clip] = []
    spans: list[tuple[int, int]] = []
    fpow = floor.power
    for k, ((i0, i1), o_start) in enumerate(zip(cuts, starts, strict=True)):
        a, b = max(lims[k][0], i0 - pad_n), min(lims[k][1], i1 + pad_n)
        at = int(round(o_start * sr)) - (i0 - a)
        env = fade_envelope(b - a, fade_n)
        data = track.samples[a:b] * gsm[a:b] * env
        fp = (np.square(gsm[a:b]) * np.float32(fpow)).astype(np.float32)
        clips.append(Clip(k, None, data, env, at, i0 - a, i1 - a, fp))
        spans.append((at + i0 - a, at + i1 - a))
    changes = [Change(k, gap) for k, gap in zip(after, gaps, strict=True)]
    bed = None
    if out_floor is not None and tone is not None:
        bed = Bed(tone.samples, 10.0 ** (out_floor / 10.0))
    mix = mixdown(
        clips, spans, changes, duration, sr, bed=bed, rng=tone_rng(config, d),
        ceiling_dbtp=cfg.true_peak_ceiling_dbtp,
        band_s=(cfg.gap_ms_min / 1000.0, cfg.gap_ms_max / 1000.0),
    )  # fmt: skip
    bounds = rows_at_changes(spans, changes, mix)

    rows = []
    for k, (blk, (lo, hi)) in enumerate(zip(blocks, bounds, strict=True)):
        shift = (spans[k][0] + mix.shifts[k]) / sr - blk.start  # source -> output time
        solo = len(blk.members) == 1
        mains = [i for i in blk.members if turns[i].kind == TurnKind.TURN] or list(blk.members)
        first = min(mains, key=lambda i: (turns[i].start, i))
        last = max(mains, key=lambda i: (turns[i].end, -i))
        for i in sorted(blk.members, key=lambda i: (turns[i].start, i)):
            t = turns[i]
            # the block's edges are its first and last main turn's edges (gaps are drawn there)
            start = lo / sr if i == first else min(max(t.start + shift, lo / sr), hi / sr)
            end = hi / sr if i == last else min(max(t.end + shift, lo / sr), hi / sr)
            hosted = t.kind == TurnKind.BACKCHANNEL and not solo
            rows.append(turn_row(d, i, hosted, start, end))
    tone_meta = describe_tone(cfg, tone, out_floor, sr)
    if cfg.stems:
        log.info("%s: stems are not available for a mixed mono source", d.id)
        tone_meta["stems"] = "unavailable for mixed mono"
    if cfg.channels != "mono":  # issue 27: the speakers of a mono mix cannot be separated
        tone_meta["stereo"] = "unavailable: mixed mono source"
    res = Rendering(
        mix.out, None, rows, gaps, measured_gaps_ms(mix, sr), mix.corrected, loud, gains, tone_meta,
        dropped, mix.ceiling_db, mix.written, bandwidth,
    )  # fmt: skip
    return res, {src.path: file_sr}
