"""Rendering a separable source (a channel, file or clip per speaker): turns laid end to end.

Per track: floor, trimmed extents, loudness per speaker; then the file's floor and room tone,
the extents measured again down to it, re-timing (:func:`~duetflow.turntaking.retime.layout_turns`:
kept backchannels ride in their hosts) and the mixdown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from duetflow.acoustics import source_acoustics
from duetflow.acoustics.extent_bounds import piece_mask, same_track_bounds, sample_span
from duetflow.acoustics.window import track_view, turn_spans, window_floor, window_floor_again
from duetflow.audio import edges
from duetflow.audio import loudness as ld
from duetflow.audio.io import Audio
from duetflow.audio.mix import faded
from duetflow.config import RunConfig
from duetflow.errors import InputError
from duetflow.records.dialogue import Dialogue, PerTurnSource, Turn, TurnKind
from duetflow.rendering.assembly import Bed, Clip
from duetflow.rendering.gaps import measured_gaps_ms, rows_at_changes
from duetflow.rendering.mixdown import Change, mixdown
from duetflow.rendering.roomtone import (
    Tone,
    colour,
    describe_tone,
    file_floor,
    find_tone,
    measure_speech_each,
    tone_rng,
)
from duetflow.rendering.rows import Rendering, turn_row
from duetflow.rendering.sources import (
    CONTEXT_S,
    band_limited,
    bandwidth_record,
    load_separable,
)
from duetflow.turntaking.retime import edge_silence_s, layout_turns


def render_separable(
    d: Dialogue, turns: Sequence[Turn], config: RunConfig, rng: np.random.Generator
) -> tuple[Rendering, dict[str, int]]:
    """Render a separable window; returns the result and the source's files (with their sample
    rates)."""
    cfg, sr = config.render, config.sample_rate
    pad_n = int(round(cfg.trim_pad_ms / 1000.0 * sr))
    fade_n = max(1, int(round(cfg.fade_ms / 1000.0 * sr)))
    tracks, files = load_separable(d, turns, sr, CONTEXT_S)
    limit = cfg.bandwidth_for(d.language)  # one effective bandwidth per language
    bandwidth = bandwidth_record(list(tracks.values()), sr, limit)
    tracks = {s: band_limited(tr, sr, limit) for s, tr in tracks.items()}
    ids = [s.id for s in d.speakers]
    for t in turns:
        if t.speaker not in tracks:
            raise InputError(
                d.id, f"turn speaker {t.speaker!r} is not a dialogue speaker", reason="bad_speaker"
            )
    # the tracks' high-passes two at a time (the same analyses, nearly the cost of one)
    analyses = edges.analyse_many([tracks[s].samples for s in ids], sr)
    views = {
        s: track_view(d, tracks[s], turns, sr, an) for s, an in zip(ids, analyses, strict=True)
    }
    found = {s: window_floor(tracks[s], views[s], sr) for s in ids}
    if not isinstance(d.source, PerTurnSource) and len(ids) == 2:
        own = [turn_spans(tracks[s], [t for t in turns if t.speaker == s], sr) for s in ids]
        was = {s: views[s].blocked for s in ids}
        source_acoustics.mark_crosstalk([views[s] for s in ids], own, [found[s][0] for s in ids])
        found = {s: window_floor_again(tracks[s], views[s], sr, found[s], was[s]) for s in ids}
    speech = [i for i, t in enumerate(turns) if t.kind != TurnKind.NONSPEECH]
    by_speaker = {s: [i for i in speech if turns[i].speaker == s] for s in ids}

    # each turn's background: its track's (file-based), or its own clip's (clip-per-turn)
    def turn_floor(i: int, ext: edges.Extent | None = None) -> edges.Floor:
        t = turns[i]
        v, tr = views[t.speaker], tracks[t.speaker]
        mask = piece_mask(v, tr, t, sr)
        base = found[t.speaker][0] or edges.DIGITAL_FLOOR
        if mask is None:
            return base
        if ext is not None:
            mask = mask & edges.background_mask(v.an.edge, [(ext.start, ext.end)], 0.02 * sr)
            return edges.estimate_floor(v.an, mask) or base
        return edges.floor_of(v.an, usable=mask) or base

    def hint(i: int) -> tuple[float, float]:
        t, tr = turns[i], tracks[turns[i].speaker]
        return (t.start - tr.t0) * sr, (t.end - tr.t0) * sr

    bounds = {
        i: same_track_bounds(turns, by_speaker[turns[i].speaker], i, tracks[turns[i].speaker], sr)
        for i in speech
    }
    floors: dict[int, edges.Floor] = {}
    coarse: dict[int, edges.Extent] = {}
    dropped: list[int] = []
    for i in speech:
        t = turns[i]
        f = turn_floor(i)
        ext = source_acoustics.extent(views[t.speaker], f, hint(i), bounds[i])
        if ext is not None and isinstance(d.source, PerTurnSource):
            f = turn_floor(i, ext)
            ext = source_acoustics.extent(views[t.speaker], f, hint(i), bounds[i]) or ext
        if ext is None:
            if t.kind == TurnKind.BACKCHANNEL:
                dropped.append(i)
                continue
            raise InputError(
                d.id,
                f"turn {i} ({t.speaker}, {t.start:.3f}-{t.end:.3f} s) has no audible speech",
                reason="silent_turn",
            )
        floors[i], coarse[i] = f, ext
    if isinstance(d.source, PerTurnSource):
        # one floor per speaker, from the background of all their clips together: a clip whose
        # slack holds a breath, or none at all, does not set a floor of its own
        for s in ids:
            v = views[s]
            mask = np.zeros(v.n_frames, dtype=bool)
            mine = [i for i in coarse if turns[i].speaker == s]
            for i in mine:
                piece = piece_mask(v, tracks[s], turns[i], sr)
                if piece is not None:
                    mask |= piece
            exts = [(coarse[i].start, coarse[i].end) for i in mine]
            mask &= edges.background_mask(v.an.edge, exts, source_acoustics.TONE_MARGIN_S * sr)
            pooled = edges.estimate_floor(v.an, mask)
            if pooled is None:
                continue
            found[s] = (pooled, found[s][1])
            for i in mine:
                ext = source_acoustics.extent(v, pooled, hint(i), bounds[i])
                if ext is not None:
                    floors[i], coarse[i] = pooled, ext

    # loudness per speaker on the trimmed speech that is rendered
    drop_bc = cfg.backchannels == "drop"
    chunks: dict[str, list[Audio]] = {s: [] for s in ids}
    for i, ext in coarse.items():
        if not (drop_bc and turns[i].kind == TurnKind.BACKCHANNEL):
            i0, i1 = sample_span(ext)
            chunks[turns[i].speaker].append(tracks[turns[i].speaker].samples[i0:i1])
    loud = dict(zip(ids, measure_speech_each([chunks[s] for s in ids], sr), strict=True))
    gains = {s: ld.gain_to_target(loud[s].lufs, cfg.loudness_target_lufs) for s in ids}

    # the file's floor: the loudest background after gain, room tone from that speaker's track
    post = {i: floors[i].gained(gains[turns[i].speaker]) for i in coarse}
    loudest = max(
        (i for i in coarse if not post[i].digital), key=lambda i: post[i].db, default=None
    )
    tone: Tone | None = None
    exts = [(coarse[i].start, coarse[i].end) for i in coarse]

    def own_tone(s: str) -> Tone | None:
        base = found[s][0]
        if base is None or base.digital:
            return None
        return find_tone(
            s, tracks[s], views[s], base, exts, found[s][1], sr, tone_rng(config, d),
            annotated=not isinstance(d.source, PerTurnSource),
        )  # fmt: skip

    if cfg.room_tone and loudest is not None:
        for s in sorted(ids, key=lambda s: s != turns[loudest].speaker):
            tone = own_tone(s)
            if tone is not None:
                break
    out_floor = file_floor(cfg, list(post.values()), tone)
    tilt = cfg.tone_tilt_for(d.language)  # one colour of room tone per language
    tone = colour(tone, tilt, sr, limit)
    target = edges.ABSOLUTE_FLOOR_DB if out_floor is None else out_floor

    # final extents: speech measured down to the file's floor, in each track's scale
    extents: dict[int, edges.Extent] = {}
    for i, ext in coarse.items():
        want = target - gains[turns[i].speaker]
        if abs(want - floors[i].db) <= 0.5 and not floors[i].digital:
            extents[i] = ext
            continue
        fine = source_acoustics.extent(views[turns[i].speaker], floors[i], hint(i), bounds[i], want)
        extents[i] = fine or ext

    trimmed: list[Turn] = []
    for i, t in enumerate(turns):
        if i not in extents:
            trimmed.append(replace(t, kind=TurnKind.NONSPEECH))
            continue
        t0, (i0, i1) = tracks[t.speaker].t0, sample_span(extents[i])
        trimmed.append(replace(t, start=t0 + i0 / sr, end=t0 + i1 / sr))
    lead = edge_silence_s(cfg)
    tl = layout_turns(trimmed, cfg, rng, lead_s=lead, tail_s=lead)

    # clips, each moving with its main turn (a kept backchannel with its host)
    group = {p.index: k for k, p in enumerate(tl.mains)}
    per_speaker = cfg.stems or cfg.channels != "mono"  # a layer per speaker (issue 27)
    stem_of = {s: k for k, s in enumerate(ids)} if per_speaker else {}
    clips: list[Clip] = []
    spans: list[tuple[int, int]] = [(0, 0)] * len(group)
    for p in tl.placements:
        tr = tracks[p.speaker]
        i0, i1 = sample_span(extents[p.index])
        a, b = max(0, i0 - pad_n), min(tr.n, i1 + pad_n)
        at = int(round(p.out_start * sr)) - (i0 - a)
        data, env = faded(tr.samples[a:b], fade_n, np.float32(ld.db_to_gain(gains[p.speaker])))
        g = group[p.index if p.host is None else p.host]
        fp = post[p.index].power
        clips.append(Clip(g, stem_of.get(p.speaker), data, env, at, i0 - a, i1 - a, fp))
        if p.host is None:
            spans[g] = (at + i0 - a, at + i1 - a)
    changes = [Change(k, g) for k, g in zip(tl.change_after, tl.gaps_s, strict=True)]
    bed = None
    stem_tones: list[Tone | None] = []
    if out_floor is not None and tone is not None:
        # each speaker's layer over their own room tone (the two-channel file; the mix's bed
        # stays the tone above), at the mix's floor power; a speaker without one: the mix's
        if per_speaker:
            stem_tones = [
                tone if s == tone.speaker else colour(own_tone(s), tilt, sr, limit) for s in ids
            ]
        beds = tuple(None if t is None or t is tone else t.samples for t in stem_tones)
        bed = Bed(tone.samples, 10.0 ** (out_floor / 10.0), beds)
    mix = mixdown(
        clips, spans, changes, tl.duration_s, sr, bed=bed, rng=tone_rng(config, d),
        ceiling_dbtp=cfg.true_peak_ceiling_dbtp, n_stems=len(ids) if per_speaker else 0,
        band_s=(cfg.gap_ms_min / 1000.0, cfg.gap_ms_max / 1000.0),
    )  # fmt: skip
    bounds_out = rows_at_changes(spans, changes, mix)
    rows = []
    for p, c in zip(tl.placements, clips, strict=True):
        if p.host is None:
            s0, s1 = bounds_out[c.group]
        else:
            at = c.at + mix.shifts[c.group]
            s0, s1 = float(at + c.e0), float(at + c.e1)
        rows.append(turn_row(d, p.index, p.host is not None, s0 / sr, s1 / sr))
    tone_meta = describe_tone(cfg, tone, out_floor, sr)
    if per_speaker and bed is not None:
        # which room tone each channel carries: its speaker's own (where from), else the mix's
        laid = [
            f"{s}: {'shared' if t is None else t.origin}"
            for s, t in zip(ids, stem_tones, strict=True)
        ]
        tone_meta["stereo"] = "each channel its own speaker's room tone (" + ", ".join(laid) + ")"
    res = Rendering(
        mix.out, mix.stems, rows, list(tl.gaps_s), measured_gaps_ms(mix, sr), mix.corrected, loud,
        gains, tone_meta, sorted({*dropped, *tl.dropped}),
        mix.ceiling_db, mix.written, bandwidth,
    )  # fmt: skip
    return res, files
