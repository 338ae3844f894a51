"""Rendering one dialogue window to the file a listener hears, step by step.

* :mod:`~duetflow.rendering.sources` — read the window's tracks (the source kinds);
* :mod:`duetflow.acoustics` (one layer down) — each track's floor
  (:mod:`~duetflow.acoustics.window`, :mod:`~duetflow.acoustics.tone_sources`), extents
  (:mod:`~duetflow.acoustics.source_acoustics`) and where they may lie
  (:mod:`~duetflow.acoustics.extent_bounds`);
* :mod:`~duetflow.rendering.roomtone` — the room tone laid under the file, the file's floor;
* :mod:`~duetflow.turntaking.retime` — where each trimmed turn lands (seeded gaps; one layer
  down, since the length model and acoustic timing use the same arithmetic);
* :mod:`~duetflow.rendering.mixdown` — clips over one floor, ceiling, gap confirmation;
  :mod:`~duetflow.rendering.gaps` — the confirmed gaps as the rows report them;
* :mod:`~duetflow.rendering.separable`, :mod:`~duetflow.rendering.mixed` — the two layouts;
* :mod:`~duetflow.rendering.rows`, :mod:`~duetflow.rendering.source_rate` — the records and
  their provenance;
* :mod:`~duetflow.rendering.render` — :func:`~duetflow.rendering.render.render_dialogue`.

Signal processing without configuration lives in :mod:`duetflow.audio`. This ``__init__``
imports nothing: a stage's cache key hashes its modules' parent packages too.
"""
