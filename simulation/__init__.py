"""Test-bed helpers that drive ``impl`` and check it against ``model``.

- :mod:`impl.simulation.bridge`: a fixed primary-key test schema, conversions between the
  model's FileFacts and impl's DataFileMeta / CommitMessage / ManifestEntry, and a reader that
  folds a published snapshot's manifests into model terms.
- :mod:`impl.simulation.multi_writer`: N committers (threads or OS processes) on one local
  table, and a checker that replays the published snapshots through the model.

Nothing here is imported by the rest of ``impl``; heavy imports stay inside the functions.
"""

__all__ = ["bridge", "multi_writer"]
