"""The multi-writer simulations: test-bed code that drives ``impl`` and checks it against ``model``.

It lives beside :mod:`fault_injection`, outside the production library: it may import ``impl``,
``model`` and ``fault_injection``, and nothing in ``impl`` imports it.

- :mod:`simulation.bridge`: a fixed primary-key test schema, conversions between the model's
  FileFacts and impl's DataFileMeta / CommitMessage / ManifestEntry, and
  :class:`~simulation.bridge.ModelFactsReader`, which reads published snapshots into model terms.
- :mod:`simulation.committers`: N committers (threads or OS processes) on one local table, and
  a checker that replays the published snapshots through the model; the snapshot publish race.
- :mod:`simulation.spark_job`: the main job (``python -m simulation``): concurrent Spark writers,
  compaction and expiration on one table, with injected faults, verified at the end.
- :mod:`simulation.verify`: model replay of a table's snapshots and the row recomputation the
  main job checks against.
- :mod:`simulation.report`: the main job's Markdown report with plots.
- :mod:`simulation.embedded_s3`: the local S3 server of ``python -m simulation --embedded-s3``.

Heavy imports (pyspark, matplotlib, rich) stay inside the modules that need them.
"""

__all__ = ["bridge", "committers", "embedded_s3", "report", "spark_job", "verify"]
