"""Cue parity: can anything the pipeline controls tell the categories (HH, HM, PH) apart?

* :mod:`~duetflow.fairness.cues` measures, per dialogue, the cues the pipeline controls
  (bandwidth, sample rate, pause floor, lead-in and tail, gaps, overlaps, loudness, peak, DC,
  duration, turn rate, speaking rate) from its audio and turn rows, one dialogue at a time.
* :mod:`~duetflow.fairness.compare` compares them per language and category pair: a
  standardised difference and a rank test per cue, perfect separators, and a cross-validated
  nearest-centroid classifier on all cues together.
* :mod:`~duetflow.fairness.gate` turns a comparison into the release gate's verdict
  (``release.cue_parity: off | warn | fail``).
* :mod:`~duetflow.fairness.table` writes and reads the per-dialogue cue table (``cues.parquet``)
  and formats the per-pair summary.

Plain Python over numpy and scipy, no Prefect; the package imports nothing here (docs/fairness.md).
"""
