"""The Turing-test game: blinded packets of a release and the scoring of judges' answers.

* :mod:`duetflow.game.plan` (pure): which dialogues go into which round, balanced by category
  and by duration bin; opaque ids.
* :mod:`duetflow.game.packets`: :func:`~duetflow.game.packets.export_game` writes the packet a
  judge receives (re-encoded audio that carries nothing of the answer) and the answer key,
  a separate file.
* :mod:`duetflow.game.score`: :func:`~duetflow.game.score.score_game` reads the key and a
  judgments CSV; rates judged human with Wilson intervals and judge accuracy.
* :mod:`duetflow.game.scoresheet`: the score as a Markdown table, JSON and an HTML page with
  plots.

Plain Python (no Prefect); ``duetflow game export|score`` is the command line over it. See the
README section "Run a Turing test with duetflow".
"""
