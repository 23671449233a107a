"""The embedded S3 server's conditional writes are atomic under load (issue 44, item 7): every
S3 race result of this project rests on exactly one winner per key.

moto 5 checks ``If-None-Match: *`` and then stores in two steps, for a PUT
(``S3Response._key_response_put``) and for CompleteMultipartUpload alike; the server runs every
PUT / POST / DELETE under one lock (``simulation.embedded_s3.serialize_writes``), so neither can
interleave. These tests hammer it through real HTTP from many threads, on fresh keys each round.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from botocore.config import Config
from botocore.exceptions import ClientError

THREADS = 16


def _client(s3_server):
    import boto3
    from s3_server import ACCESS_KEY, REGION, SECRET_KEY

    # no retries: a retried PUT that had won would read as refused, hiding or faking a second winner
    return boto3.client("s3", endpoint_url=s3_server.endpoint, aws_access_key_id=ACCESS_KEY,
                        aws_secret_access_key=SECRET_KEY, region_name=REGION,
                        config=Config(retries={"total_max_attempts": 1}, max_pool_connections=THREADS))


def _race(rounds: int, attempt) -> list[list[str]]:
    """``attempt(round, writer)`` from THREADS threads at once, ``rounds`` times; the outcomes."""
    barrier = threading.Barrier(THREADS)
    outcomes: list[list[str]] = [[""] * THREADS for _ in range(rounds)]

    def writer(me: int) -> None:
        for r in range(rounds):
            barrier.wait(timeout=60)
            try:
                attempt(r, me)
                outcomes[r][me] = "won"
            except ClientError as e:
                code = e.response["Error"]["Code"]
                outcomes[r][me] = "refused" if code in ("PreconditionFailed", "412") else f"error {code}"

    with ThreadPoolExecutor(THREADS) as pool:
        for f in [pool.submit(writer, i) for i in range(THREADS)]:
            f.result()
    return outcomes


def _assert_one_winner_each(client, bucket: str, keys: list[str], outcomes: list[list[str]]) -> None:
    for key, by_writer in zip(keys, outcomes, strict=True):
        winners = [i for i, o in enumerate(by_writer) if o == "won"]
        assert len(winners) == 1 and by_writer.count("refused") == THREADS - 1, (key, by_writer)
        body = client.get_object(Bucket=bucket, Key=key)["Body"].read()
        assert body == f"writer-{winners[0]}".encode(), key


def test_conditional_puts_have_one_winner_per_key(s3_server, s3_bucket):
    """16 threads x 50 rounds, a fresh key each round."""
    client = _client(s3_server)
    keys = [f"race/put-{r}" for r in range(50)]

    def attempt(r: int, me: int) -> None:
        client.put_object(Bucket=s3_bucket, Key=keys[r], Body=f"writer-{me}".encode(), IfNoneMatch="*")

    _assert_one_winner_each(client, s3_bucket, keys, _race(len(keys), attempt))


def test_conditional_multipart_completes_have_one_winner_per_key(s3_server, s3_bucket):
    """Each thread uploads its own multipart upload of the key, then all complete it at once
    with ``If-None-Match: *``. (Without the server's lock this failed: more than one complete
    won.)"""
    rounds = 5
    client = _client(s3_server)
    keys = [f"race/multipart-{r}" for r in range(rounds)]
    uploads: dict[tuple[int, int], tuple[str, str]] = {}

    def prepare(r: int, me: int) -> None:
        upload = client.create_multipart_upload(Bucket=s3_bucket, Key=keys[r])["UploadId"]
        etag = client.upload_part(Bucket=s3_bucket, Key=keys[r], UploadId=upload, PartNumber=1,
                                  Body=f"writer-{me}".encode())["ETag"]
        uploads[r, me] = (upload, etag)

    for r in range(rounds):
        for me in range(THREADS):
            prepare(r, me)

    def attempt(r: int, me: int) -> None:
        upload, etag = uploads[r, me]
        client.complete_multipart_upload(Bucket=s3_bucket, Key=keys[r], UploadId=upload, IfNoneMatch="*",
                                         MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})

    _assert_one_winner_each(client, s3_bucket, keys, _race(rounds, attempt))
