"""The pipeline: stages declared once, run in-process or as Prefect tasks, cached by key.

* :mod:`~duetflow.pipeline.stages` — the ordered stages, their config sections and code;
* :mod:`~duetflow.pipeline.keys` — cache keys from config sections, code and input fingerprints;
* :mod:`~duetflow.pipeline.executors` — where a step runs (:class:`PlainExecutor` here);
* :mod:`~duetflow.pipeline.ingest`, :mod:`~duetflow.pipeline.process` — the work of the ingest
  and process stages on plain records;
* :mod:`~duetflow.pipeline.steps`, :mod:`~duetflow.pipeline.publishing` — the step functions an
  executor runs; :mod:`~duetflow.pipeline.merge` — shard merges;
* :mod:`~duetflow.pipeline.cache`, :mod:`~duetflow.pipeline.durable` — step commit and resume;
* :mod:`~duetflow.pipeline.run` — :func:`~duetflow.pipeline.run.run_pipeline`, the whole run.

This ``__init__`` imports nothing: a stage's cache key hashes the import closure of its entry
modules *with their parent packages* (:func:`duetflow.hashing.import_closure`), so a
re-export here would put the whole pipeline into every stage's key.
"""
