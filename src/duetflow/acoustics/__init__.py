"""Acoustic measurement: what a source's tracks hold, measured once per source and passed on typed.

The layer between signal processing (:mod:`duetflow.audio`: filters, envelopes, the edge
definition, loudness) and the turn-taking analysis (:mod:`duetflow.turntaking`) and rendering
(:mod:`duetflow.rendering`) that read its measurements:

* :mod:`~duetflow.acoustics.source_acoustics`: a track's analysis (:class:`TrackView`), floor,
  crosstalk, turn extents and room-tone runs;
* :mod:`~duetflow.acoustics.track_reader`: a dialogue's tracks read in chunks of turns, only
  the frames needed;
* :mod:`~duetflow.acoustics.timing`: acoustic turn timing (each turn's speech extent within
  its annotation), its measuring paths in :mod:`~duetflow.acoustics.timing_separable` (a track
  per speaker, a clip per turn) and :mod:`~duetflow.acoustics.timing_mixed` (a mono mix), what
  they share in :mod:`~duetflow.acoustics.timing_edges` (the typed ``Measured`` record);
* :mod:`~duetflow.acoustics.blocks`: the blocks of continuous talk of a mono mix;
* :mod:`~duetflow.acoustics.window`: a window's tracks as read (:class:`Track`) and their
  floors around the window's turns; :mod:`~duetflow.acoustics.tone_sources`: background from
  the rest of a recording when a window holds too little;
* :mod:`~duetflow.acoustics.extent_bounds`: where each turn's (block's) extent may lie on its
  track, and where latched blocks are cut.

Layering (``tests/architecture/test_layers.py``): ``audio`` < ``acoustics`` < ``turntaking`` <
``rendering`` < ``pipeline``; this package may import ``audio``, ``model``, ``config`` and
``errors``, never turn-taking, rendering or anything above. The package re-exports nothing.
"""
