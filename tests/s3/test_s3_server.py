"""The test S3 server is a real endpoint that enforces conditional creates.

Everything the object-store suites prove rests on this: many clients racing a PUT with
``If-None-Match: *`` to one key, and exactly one of them wins.
"""

from __future__ import annotations

import multiprocessing
import threading

import pytest

from fault_injection.s3_proxy import Fault, FaultRule, S3FaultProxy, request_kind
from impl.fs.object_store import S3Config
from simulation.embedded_s3 import serialize_writes


def _racer(endpoint_options: dict, paths: list[str], me: int, barrier, results) -> None:
    fs = S3Config.from_options(endpoint_options).filesystem()
    for round_, path in enumerate(paths):
        barrier.wait()  # every contender PUTs this round's key at once
        try:
            fs.pipe_file(path, f"writer-{me}".encode(), mode="create")
            results.put((round_, me, "won"))
        except FileExistsError:
            results.put((round_, me, "refused"))
        except Exception as e:  # pragma: no cover - reported as a failure below
            results.put((round_, me, f"error {type(e).__name__}: {e}"))


def test_racing_conditional_puts_have_exactly_one_winner(s3_server, s3_bucket):
    """Twelve processes race a conditional PUT to one key, five rounds (one key each). The
    processes are started once for all rounds: spawning them is what costs, not the race."""
    contenders, rounds = 12, 5
    paths = [f"{s3_bucket}/race/snapshot-{r}" for r in range(rounds)]
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(contenders)
    results = ctx.Queue()
    procs = [ctx.Process(target=_racer, args=(s3_server.options(), paths, i, barrier, results))
             for i in range(contenders)]
    for p in procs:
        p.start()
    outcomes: dict[int, dict[int, str]] = {r: {} for r in range(rounds)}
    for _ in range(contenders * rounds):
        round_, me, outcome = results.get(timeout=120)
        outcomes[round_][me] = outcome
    for p in procs:
        p.join(timeout=60)
    fs = S3Config.from_options(s3_server.options()).filesystem()
    for round_, path in enumerate(paths):
        by_writer = outcomes[round_]
        winners = [i for i, o in by_writer.items() if o == "won"]
        assert sorted(by_writer.values()).count("refused") == contenders - 1, (round_, by_writer)
        assert len(winners) == 1, (round_, by_writer)
        assert fs.cat_file(path) == f"writer-{winners[0]}".encode()


def _check_then_store_app(store: dict, check_seen: threading.Barrier | None):
    """A WSGI app with moto's flaw on purpose: it checks ``If-None-Match`` and stores in two
    steps, with a barrier between them that every racing request must reach (so, unserialized,
    all of them pass the check before any stores)."""
    def app(environ, start_response):
        key = environ["PATH_INFO"]
        if environ["REQUEST_METHOD"] == "GET":
            start_response("200 OK", [])
            return [store.get(key, b"")]
        if environ.get("HTTP_IF_NONE_MATCH") == "*" and key in store:
            start_response("412 Precondition Failed", [])
            return [b""]
        if check_seen is not None:
            try:
                check_seen.wait(timeout=0.5)
            except threading.BrokenBarrierError:
                pass  # serialized: the others cannot reach the barrier while this one holds the lock
        store[key] = environ["wsgi.input"].read()
        start_response("200 OK", [])
        return [b""]
    return app


@pytest.mark.parametrize("serialized", [False, True])
def test_serialized_writes_give_a_racing_conditional_put_one_winner(serialized):
    """The rule the embedded server adds to moto's app: without it, racing conditional PUTs
    that all pass the check before any stores all win; with it, one does."""
    import io

    racers = 4
    store: dict = {}
    app = _check_then_store_app(store, threading.Barrier(racers))
    if serialized:
        app = serialize_writes(app)
    statuses: list[str] = []
    start = threading.Barrier(racers)

    def put(i: int) -> None:
        start.wait()
        environ = {"REQUEST_METHOD": "PUT", "PATH_INFO": "/b/k", "HTTP_IF_NONE_MATCH": "*",
                   "wsgi.input": io.BytesIO(f"writer-{i}".encode())}
        b"".join(app(environ, lambda status, headers: statuses.append(status)))

    threads = [threading.Thread(target=put, args=(i,)) for i in range(racers)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    winners = [s for s in statuses if s.startswith("200")]
    assert len(statuses) == racers
    assert len(winners) == (1 if serialized else racers)


def test_threads_racing_one_key_have_one_winner(s3_server, s3_bucket):
    fs = S3Config.from_options(s3_server.options()).filesystem()
    won, refused = [], []
    barrier = threading.Barrier(16)

    def race(i: int) -> None:
        barrier.wait()
        try:
            fs.pipe_file(f"{s3_bucket}/k", str(i).encode(), mode="create")
            won.append(i)
        except FileExistsError:
            refused.append(i)

    threads = [threading.Thread(target=race, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1 and len(refused) == 15


def test_plain_put_overwrites(s3_server, s3_bucket):
    fs = S3Config.from_options(s3_server.options()).filesystem()
    fs.pipe_file(f"{s3_bucket}/hint", b"1")
    fs.pipe_file(f"{s3_bucket}/hint", b"2")
    assert fs.cat_file(f"{s3_bucket}/hint") == b"2"


def test_proxy_forwards_counts_and_injects(s3_server, s3_bucket):
    proxy = S3FaultProxy(s3_server.endpoint).start()
    try:
        fs = S3Config.from_options(s3_server.options(proxy.endpoint)).filesystem()
        fs.pipe_file(f"{s3_bucket}/a", b"x")
        assert fs.cat_file(f"{s3_bucket}/a") == b"x"
        fs.ls(f"{s3_bucket}/")
        counts = proxy.counts()
        assert counts.get("PUT") == 1 and counts.get("GET") == 1 and counts.get("LIST") == 1, counts
        # a 412 from the proxy reads as a refused conditional create
        proxy.add_rule(FaultRule(Fault.PRECONDITION_FAILED, method="PUT", path=r"/b$"))
        with pytest.raises(FileExistsError):
            fs.pipe_file(f"{s3_bucket}/b", b"y", mode="create")
        assert not fs.exists(f"{s3_bucket}/b")
    finally:
        proxy.stop()


def test_proxy_can_make_the_store_ignore_conditions(s3_server, s3_bucket):
    proxy = S3FaultProxy(s3_server.endpoint, ignore_conditional_writes=True).start()
    try:
        fs = S3Config.from_options(s3_server.options(proxy.endpoint)).filesystem()
        fs.pipe_file(f"{s3_bucket}/k", b"1", mode="create")
        fs.pipe_file(f"{s3_bucket}/k", b"2", mode="create")  # accepted: the header never arrived
        assert fs.cat_file(f"{s3_bucket}/k") == b"2"
    finally:
        proxy.stop()


@pytest.mark.parametrize("method,target,kind", [
    ("GET", "/bkt?list-type=2&prefix=a%2F", "LIST"),
    ("GET", "/bkt/a/b", "GET"),
    ("HEAD", "/bkt/a/b", "HEAD"),
    ("PUT", "/bkt/a/b", "PUT"),
    ("DELETE", "/bkt/a/b", "DELETE"),
])
def test_request_kinds(method, target, kind):
    assert request_kind(method, target) == kind
