"""The engine-neutral job layer under the connectors (``impl.spark``, ``impl.ray``): what a
parallel read or write of a table needs whatever engine runs its tasks. It imports no engine
(no pyspark, no ray), only impl's core packages, so every connector builds on it and none
imports another.

- :mod:`impl.jobs.tables`: :class:`~impl.jobs.tables.TableRef`, a picklable handle every task
  opens the table from (path, dynamic options, storage and catalog options);
- :mod:`impl.jobs.tracking`: write intents and task attempts: every file a task attempt creates
  is logged first, so the driver removes the files of failed or retried attempts;
- :mod:`impl.jobs.writer`: the write-job protocol: :class:`~impl.jobs.writer.WriteJob`, a
  task's write (:func:`~impl.jobs.writer.write_task`), the driver's one commit
  (:func:`~impl.jobs.writer.commit_write`) and abort (:func:`~impl.jobs.writer.abort_write`);
- :mod:`impl.jobs.keycheck`: the commit's check that no primary key was written by two tasks;
- :mod:`impl.jobs.units`: planned splits cut into read units and packed into read tasks;
- :mod:`impl.jobs.routing`: the bucket of every row, as a vectorized function (to route rows).

Its errors live in :mod:`impl.errors` (``ConnectorError``, ``WriteRoutingError``,
``WriteClosedError``).
"""
