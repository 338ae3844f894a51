"""The foundation's typed records and their tables; the package imports nothing.

* :mod:`duetflow.records.dialogue`: the in-memory model every stage passes on (``Dialogue``,
  ``Turn``, ``Speaker``, the audio sources, ``Rejection``, stable ids);
* :mod:`duetflow.records.rows`: one frozen dataclass per manifest table (intake, rendered,
  release, rejections, events), the tables' one declaration;
* :mod:`duetflow.records.convert`: a ``Dialogue`` / ``Rejection`` to and from its rows, the
  audio source as JSON, the canonical JSON dump;
* :mod:`duetflow.records.manifest`: the tables' names and Arrow schemas, streaming Parquet
  writers and typed readers of a work directory;
* :mod:`duetflow.records.locations`: paths relative to a corpus root (where inputs sit is not
  content).

Nothing is re-exported here: a stage's cache key hashes its modules' parent packages too
(:func:`duetflow.hashing.import_closure`), so a re-export would put every record module into
every key.
"""
