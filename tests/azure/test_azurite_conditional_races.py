"""Azurite's conditional creates are atomic under load: every Azure race result here rests on
exactly one winner per blob. 16 threads create the same fresh blob with ``If-None-Match: *``
(azure-storage-blob's ``overwrite=False``), round after round, through real HTTP."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from azure.core.exceptions import ResourceExistsError

THREADS = 16
ROUNDS = 15


def test_conditional_creates_have_one_winner_per_blob(azure_server, azure_container):
    container = azure_server.service().get_container_client(azure_container)
    barrier = threading.Barrier(THREADS)
    outcomes = [[""] * THREADS for _ in range(ROUNDS)]

    def writer(me: int) -> None:
        for r in range(ROUNDS):
            blob = container.get_blob_client(f"race/blob-{r}")
            barrier.wait(timeout=60)
            try:
                # no retries: a retried create that had won would read as refused
                blob.upload_blob(f"writer-{me}".encode(), overwrite=False, retry_total=0)
                outcomes[r][me] = "won"
            except ResourceExistsError:
                outcomes[r][me] = "refused"

    with ThreadPoolExecutor(THREADS) as pool:
        for f in [pool.submit(writer, i) for i in range(THREADS)]:
            f.result()
    for r, by_writer in enumerate(outcomes):
        winners = [i for i, o in enumerate(by_writer) if o == "won"]
        assert len(winners) == 1 and by_writer.count("refused") == THREADS - 1, (r, by_writer)
        body = container.get_blob_client(f"race/blob-{r}").download_blob().readall()
        assert body == f"writer-{winners[0]}".encode(), r
