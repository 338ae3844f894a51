"""The pipeline: stages declared once, run in-process or as Prefect tasks, cached by key.

* :mod:`~duetflow.pipeline.stages` — one module per stage (config sections, code, plan, step,
  merge, retry hints as data) and their order (``STAGES``); :mod:`~duetflow.pipeline.stage` —
  what a stage spec is and what stages hand each other;
* :mod:`~duetflow.pipeline.driver` — :func:`~duetflow.pipeline.driver.run_stage` (any stage on
  an executor) and :func:`~duetflow.pipeline.driver.run_pipeline` (the loop over the stages);
* :mod:`~duetflow.pipeline.keys` — cache keys from config sections, code and input fingerprints;
* :mod:`~duetflow.pipeline.executors` — where a step runs (:class:`PlainExecutor` here);
* :mod:`~duetflow.pipeline.ingest`, :mod:`~duetflow.pipeline.process` — the work of the ingest
  and process stages on plain records (their entry modules);
* :mod:`~duetflow.pipeline.merge`, :mod:`~duetflow.pipeline.shards` — shard merges and borders;
* :mod:`~duetflow.pipeline.cache`, :mod:`~duetflow.pipeline.durable` — step commit and resume;
* :mod:`~duetflow.pipeline.commands` — one stage into a directory the caller names.

This ``__init__`` imports nothing: a stage's cache key hashes the import closure of its entry
modules *with their parent packages* (:func:`duetflow.hashing.import_closure`), so a
re-export here would put the whole pipeline into every stage's key.
"""
