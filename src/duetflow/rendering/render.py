"""Render one dialogue window to a FLAC file a listener (or a judge) hears.

Steps, in order (see docs/ARCHITECTURE.md, stage *render*; the definitions are in
docs/turn-taking.md, *Gaps* and *Room tone*):

1. **read** only the frames of the window, plus half a second of context (an edge may lie past
   a loose annotation), from every track, resampled to ``config.sample_rate``: one track per
   speaker for separable sources (multichannel, file per speaker, clip per turn), one mixed
   track for mixed mono;
2. **floor**: each track's background (:mod:`duetflow.acoustics.source_acoustics`), measured
   where no turn of any speaker is annotated, never on the other speaker's crosstalk; the rest of
   the recording when the window holds too little (:mod:`duetflow.acoustics.tone_sources`);
3. **edges**: each turn (mixed mono: each block of continuous talk; a latched speaker change,
   overlapping by no more than ``turns.min_overlap_s``, is cut at its quietest point so it can
   be re-timed like any other) is located by its annotation and trimmed to its acoustic extent
   (:mod:`duetflow.audio.edges`);
4. **loudness**: each speaker's trimmed speech measured with BS.1770 and gained to the target;
   mixed mono gets a per-speaker gain curve (measured on non-overlapped speech), ramped at
   changes;
5. **floor of the file**: the loudest background after gain; room tone from that track (its
   pauses, its recording's, or noise of its spectrum), and every edge measured again down to
   that floor in its own track's scale, so the edges placed are the edges the file will show;
6. **re-time** (:mod:`duetflow.turntaking.retime`): speaker changes get a seeded U[gap_ms_min,
   gap_ms_max] pause between acoustic extents, same-speaker pauses are capped;
7. **mix down** (:mod:`duetflow.rendering.mixdown`): clips over one steady floor, the true peak
   under the ceiling, every speaker-change gap measured on the file's samples and corrected
   where it is off its draw;
8. **write** mono audio atomically to ``out_dir/audio/<id>.flac`` (and two-channel stems if
   configured; with ``render.channels`` stereo/both the two-channel file, A left, B right,
   sample-aligned with the mix, to ``out_dir/stereo/<id>.flac``) and return the manifest rows.
   At every change the turn rows carry the measured
   edges, so a row gap is the acoustic gap of the file.

Turn times in a windowed :class:`~duetflow.records.dialogue.Dialogue` are on the source timeline
(the model's convention); windows whose turns are relative to the window start are recognised (all
turns lie before ``window[0]`` and fit in the window length) and shifted.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from duetflow.audio import loudness as ld
from duetflow.audio.io import PCM16, Audio, to_pcm16, write_audio_sha256
from duetflow.audio.mix import any_sample, compiled_kernels
from duetflow.config import RunConfig
from duetflow.errors import InputError
from duetflow.records.dialogue import Dialogue, MixedMonoSource, safe_id
from duetflow.rendering.mixed import render_mixed
from duetflow.rendering.rows import (
    RenderedDialogue,
    dialogue_record,
    ordered_turn_rows,
)
from duetflow.rendering.separable import render_separable
from duetflow.rendering.sources import source_turns
from duetflow.seeding import rng_for

log = logging.getLogger(__name__)


def written_pcm16(written: Audio) -> PCM16:
    """The int16 samples of :func:`duetflow.rendering.mixdown.as_written`'s output: its values
    are 16-bit levels times 2^-15, so this is exactly :func:`to_pcm16` of the scaled mix."""
    compiled = compiled_kernels()
    if compiled is not None and written.dtype == np.float32 and written.flags.c_contiguous:
        pcm = np.empty(len(written), dtype=np.int16)
        if compiled.pcm16_of_written(written.ravel(), pcm):  # one pass, no float copy
            return pcm.reshape(written.shape)
    q = written * np.float32(32768.0)
    return q.astype(np.int16)


def render_dialogue(dialogue: Dialogue, config: RunConfig, out_dir: Path) -> RenderedDialogue:
    """Render one window to ``out_dir/audio/<id>.<fmt>`` and return its manifest rows.

    Raises :class:`~duetflow.errors.InputError` for audio that cannot be rendered (missing,
    truncated, silent turns); the caller turns it into a ``Stage.RENDER`` rejection.
    """
    cfg, sr = config.render, config.sample_rate
    d = dialogue
    turns = source_turns(d)
    rng = rng_for(config.seed, d.id)
    if isinstance(d.source, MixedMonoSource):
        res, files = render_mixed(d, turns, config, rng)
    else:
        res, files = render_separable(d, turns, config, rng)

    ceiling = res.ceiling_db
    out, stems = res.out, res.stems
    if ceiling < 0:
        scale = np.float32(ld.db_to_gain(ceiling))
        out = out * scale
        stems = stems * scale if stems is not None else None
    if not any_sample(out):
        raise InputError(d.id, "rendered audio is all silence", reason="silent_turn")

    out_dir = Path(out_dir)
    name = safe_id(d.id)
    rel = f"audio/{name}.{cfg.audio_format}"
    # the 16-bit samples the gap confirmation measured (mixdown.as_written), written as they are
    pcm = to_pcm16(out) if res.written is None else written_pcm16(res.written)
    # encoded in memory and hashed there: the digest of the bytes written, no reading back
    _, sha = write_audio_sha256(out_dir / rel, pcm, sr, audio_format=cfg.audio_format)
    stems_rel = stereo_rel = stereo_sha = None
    wanted = cfg.stems or cfg.channels != "mono"
    pcm_stems = to_pcm16(stems) if stems is not None and wanted else None
    if pcm_stems is not None and cfg.stems:
        stems_rel = f"stems/{name}.{cfg.audio_format}"
        write_audio_sha256(out_dir / stems_rel, pcm_stems, sr, audio_format=cfg.audio_format)
    if pcm_stems is not None and cfg.channels != "mono":  # issue 27: A left, B right
        stereo_rel = f"stereo/{name}.{cfg.audio_format}"
        _, stereo_sha = write_audio_sha256(
            out_dir / stereo_rel, pcm_stems, sr, audio_format=cfg.audio_format
        )

    rows = ordered_turn_rows(res.rows)
    row = dialogue_record(
        d, config, res, files, audio_path=rel, audio_sha256=sha,
        duration_s=len(out) / sr, stems_path=stems_rel, n_turns=len(rows),
        stereo=(stereo_rel, stereo_sha) if stereo_rel and stereo_sha else None,
    )  # fmt: skip
    log.debug("rendered %s: %.2f s, %d turns", d.id, row.duration_s, len(rows))
    return RenderedDialogue(row, tuple(rows))
