"""A driver that dies mid-stream, for tests/spark/test_stream_native.py: ``python stream_native_job.py
SRC TABLE CHECKPOINT ARM``.

Runs :func:`impl.spark.write_stream` over SRC (one file per micro-batch, availableNow) and kills its
own process (``os._exit(7)``, which takes the JVM with it) when the commit of a micro-batch starts
while the file ARM exists (removed first): the batch's files are written and logged, nothing of it
is committed, and Spark has not recorded the batch. The test restarts the query in its own session.
"""

from __future__ import annotations

import os
import sys


def main(src: str, table_path: str, checkpoint: str, arm: str) -> None:
    import impl.spark
    import impl.spark.stream_writer as sw

    real_commit = sw.commit_write

    def dying_commit(*args, **kwargs):
        if os.path.exists(arm):
            os.remove(arm)
            os._exit(7)
        return real_commit(*args, **kwargs)

    sw.commit_write = dying_commit
    spark = impl.spark.session(app_name="stream-native-job", master="local[1]")
    df = spark.readStream.schema("id long, v string, dt string").option("maxFilesPerTrigger", 1).parquet(src)
    q = impl.spark.write_stream(df, table_path, checkpoint_location=checkpoint, trigger={"availableNow": True})
    q.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:5])
