"""Turn-taking: who holds the floor, and which stretches of a dialogue become dataset windows.

Plain typed Python, no Prefect. One source dialogue goes through these modules in this order:

* (one layer down, :mod:`duetflow.acoustics`) :mod:`~duetflow.acoustics.timing`: turn
  boundaries timed from the audio (acoustic timing), run by the process stage first;
* :mod:`~duetflow.turntaking.overlaps`: overlap events and their classes, backchannels, the
  speakers' balance (with transcript evidence from :mod:`~duetflow.turntaking.cues`);
* :mod:`~duetflow.turntaking.windows`: candidate windows cut at floor transfers, sized with the
  length model of :mod:`~duetflow.turntaking.rendered_length`;
* :mod:`~duetflow.turntaking.filters`: named, pluggable predicates that keep a window or say why
  not;
* :mod:`~duetflow.turntaking.selection`: windows, then filters, then the dialogue's statistics
  (:mod:`~duetflow.turntaking.stats`);
* :mod:`~duetflow.turntaking.matching`: HH ↔ HM selection over the rendered corpora.

:mod:`~duetflow.turntaking.retime` (where each turn lands on the rendered timeline) is the
arithmetic the length model, acoustic timing and the renderer share; :mod:`duetflow.rendering`
imports it, never the reverse (``tests/architecture/test_layers.py``).

The package re-exports nothing, so importing one module does not import the others.
"""
