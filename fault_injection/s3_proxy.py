"""An HTTP proxy in front of an S3 endpoint that injects object-store faults on the wire.

The client (s3fs/botocore, pypaimon, anything speaking S3) talks to the proxy on 127.0.0.1
as if it were the store; the proxy forwards each request unchanged to the real server (moto's
in tests) and, when a rule matches, misbehaves the way object stores and networks do:

- ``Fault.LOST_RESPONSE``: the request is forwarded and lands, then the connection is dropped
  before the client sees the answer (a timeout or reset after a PUT that took effect);
- ``Fault.SLOW_DOWN``: answer ``503 SlowDown`` without forwarding (throttling);
- ``Fault.PRECONDITION_FAILED``: answer ``412 PreconditionFailed`` without forwarding (another
  writer "won"; used to drive the lost-race path on publication);
- ``Fault.INTERNAL_ERROR``: answer ``500 InternalError`` without forwarding;
- ``Fault.HOLD``: keep the request until the rule's ``release`` event is set (or
  ``hold_timeout_s`` passes), then forward it (a slow request that lands late, after others).

With ``required_access_key`` set, a request signed with any other access key is answered
``403 InvalidAccessKeyId`` (moto accepts every key; real stores do not).

With ``ignore_conditional_writes=True`` the proxy strips ``If-None-Match`` (GCS: the query's
``ifGenerationMatch``) from every request,
which makes the store behave like the S3-compatible stores that ignore the header and overwrite.

Rules match on method, a regular expression over the path, and which matching request (the
n-th, counted from 1) to hit, a number of times. The proxy also counts every request by kind
(GET, HEAD, PUT, LIST, DELETE, POST), which is how tests and benchmarks see the real HTTP
cost of an operation, retries included.

    proxy = S3FaultProxy(upstream="http://127.0.0.1:5000").start()
    proxy.add_rule(FaultRule(Fault.LOST_RESPONSE, method="PUT", path=r"/snapshot/snapshot-\\d+$"))
    ... point the client at proxy.endpoint ...
    proxy.stop()
"""

from __future__ import annotations

import enum
import http.client
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit


class Fault(enum.Enum):
    LOST_RESPONSE = "lost-response"
    SLOW_DOWN = "slow-down"
    PRECONDITION_FAILED = "precondition-failed"
    INTERNAL_ERROR = "internal-error"
    ACCESS_DENIED = "access-denied"
    HOLD = "hold"


@dataclass
class FaultRule:
    """Inject ``fault`` into requests with ``method`` whose path matches ``path`` (a regex,
    searched in the URL path without the query), starting at the ``nth`` such request, for
    ``times`` requests (None: every one from then on). With ``after`` set, the rule counts and
    fires only once that other rule has fired (a store that breaks down after a lost answer)."""

    fault: Fault
    method: str | None = None  # an HTTP method, or "LIST" for a GET of a bucket listing
    path: str = ""
    nth: int = 1
    times: int | None = 1
    after: "FaultRule | None" = None
    hold_timeout_s: float = 120.0  # Fault.HOLD: forward anyway after this long
    release: threading.Event = field(default_factory=threading.Event, init=False)  # ends a HOLD
    seen: int = field(default=0, init=False)
    fired: int = field(default=0, init=False)

    def take(self, method: str, path: str, kind: str | None = None) -> bool:
        """Whether this rule fires for the request; ``kind`` is its :func:`request_kind` when ``path``
        is not the request's own (GCS: the object's path, see :func:`object_path`)."""
        if self.after is not None and self.after.fired == 0:
            return False
        if self.method is not None and self.method not in (method, kind or request_kind(method, path)):
            return False
        if self.path and not re.search(self.path, urlsplit(path).path):
            return False
        self.seen += 1
        if self.seen < self.nth or (self.times is not None and self.fired >= self.times):
            return False
        self.fired += 1
        return True


_ERROR_BODY = ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
               '<Message>{message}</Message>{extra}</Error>')
_CANNED = {
    Fault.SLOW_DOWN: (503, "SlowDown", "Please reduce your request rate.", ""),
    Fault.PRECONDITION_FAILED: (412, "PreconditionFailed",
                                "At least one of the pre-conditions you specified did not hold",
                                "<Condition>If-None-Match</Condition>"),
    Fault.ACCESS_DENIED: (403, "InvalidAccessKeyId",
                          "The AWS Access Key Id you provided does not exist in our records.", ""),
    Fault.INTERNAL_ERROR: (500, "InternalError", "We encountered an internal error. Please try again.", ""),
}


_GCS_OBJECTS = re.compile(r"^/storage/v1/b/([^/]+)/o/?$")  # GCS JSON API: the bucket's objects (a listing)
_GCS_OBJECT = re.compile(r"^/storage/v1/b/([^/]+)/o/(.+)$")  # one object's metadata
_GCS_UPLOAD = re.compile(r"^/upload/storage/v1/b/([^/]+)/o/?$")
_GCS_DOWNLOAD = re.compile(r"^/download/storage/v1/b/([^/]+)/o/(.+)$")


def request_kind(method: str, target: str) -> str:
    """GET / HEAD / PUT / DELETE / POST, and LIST for a GET of a bucket listing (S3) or of a
    container listing (Azure Blob: ``?restype=container&comp=list``, the proxy works there too).
    On GCS's JSON API (the proxy works there too) a GET of ``/b/B/o`` is a LIST, a GET of an object's
    metadata a HEAD (GCS has no HEAD: this GET is what an existence check costs), a GET of its bytes
    (``alt=media``) a GET, and an upload (a POST) a PUT."""
    parts = urlsplit(target)
    if method == "GET" and _GCS_OBJECTS.match(parts.path):
        return "LIST"
    if method == "GET" and _GCS_OBJECT.match(parts.path):
        return "GET" if "alt=media" in parts.query else "HEAD"
    if method == "POST" and _GCS_UPLOAD.match(parts.path):
        return "PUT"
    if method == "GET" and ("list-type=" in parts.query or "comp=list" in parts.query
                            or parts.path.rstrip("/").count("/") <= 1):
        return "LIST"
    return method


def object_path(target: str, body: bytes = b"") -> str:
    """The path a rule's pattern is searched in: the URL path, except on GCS, whose JSON API names an
    object URL-quoted (``/o/wh%2Fsnapshot-1``) or, in an upload, in the query (``name=``) or the
    multipart body's metadata: there ``/storage/v1/b/BUCKET/o/`` and the object's name unquoted."""
    parts = urlsplit(target)
    for pattern in (_GCS_OBJECT, _GCS_DOWNLOAD):
        m = pattern.match(parts.path)
        if m:
            return f"/storage/v1/b/{m.group(1)}/o/{unquote(m.group(2))}"
    m = _GCS_UPLOAD.match(parts.path)
    if not m:
        return parts.path
    name = dict(parse_qsl(parts.query)).get("name")
    if name is None:
        found = re.search(rb'"name"\s*:\s*"((?:[^"\\]|\\.)*)"', body[:65536])
        name = json.loads(b'"' + found.group(1) + b'"') if found else ""
    return f"/storage/v1/b/{m.group(1)}/o/{name}"


def _without_generation_match(target: str) -> str:
    """``target`` without GCS's ``ifGenerationMatch`` (the store then overwrites, as one that ignores it)."""
    parts = urlsplit(target)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "ifGenerationMatch"]
    return parts.path + ("?" + urlencode(query) if query else "")


class S3FaultProxy:
    """A threaded HTTP proxy on 127.0.0.1 in front of ``upstream`` (an ``http://host:port``)."""

    def __init__(self, upstream: str, host: str = "127.0.0.1", port: int = 0, *,
                 ignore_conditional_writes: bool = False, required_access_key: str | None = None):
        split = urlsplit(upstream)
        if split.scheme != "http" or not split.hostname:
            raise ValueError(f"upstream must be http://host:port, got {upstream!r}")
        self.upstream_host = split.hostname
        self.upstream_port = split.port or 80
        self.ignore_conditional_writes = ignore_conditional_writes
        self.required_access_key = required_access_key
        self._rules: list[FaultRule] = []
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self.log: list[tuple[str, str]] | None = None  # (kind, path) of each request, when a list
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format, *args):  # noqa: A002 - BaseHTTPRequestHandler's name
                pass

            def _handle(self) -> None:
                try:
                    proxy._forward(self)
                except (BrokenPipeError, ConnectionResetError):
                    # the client hung up before its answer (a cancelled or timed-out request, seen
                    # with gcsfs): nothing to deliver, and not a failure of the proxy
                    self.close_connection = True

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

        self._host = host
        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def endpoint(self) -> str:
        return f"http://{self._host}:{self._server.server_port}"

    def start(self) -> "S3FaultProxy":
        self._thread = threading.Thread(target=self._server.serve_forever, name="s3-fault-proxy", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # ------------------------------------------------------------------ rules and counts

    def add_rule(self, rule: FaultRule) -> FaultRule:
        with self._lock:
            self._rules.append(rule)
        return rule

    def clear_rules(self) -> None:
        with self._lock:
            self._rules.clear()

    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def reset_counts(self) -> None:
        with self._lock:
            self._counts.clear()

    def _match(self, method: str, path: str, body: bytes = b"") -> FaultRule | None:
        with self._lock:
            kind = request_kind(method, path)
            self._counts[kind] = self._counts.get(kind, 0) + 1
            if self.log is not None:
                self.log.append((kind, path))
            target = object_path(path, body)
            for rule in self._rules:
                if rule.take(method, target, kind):
                    return rule
        return None

    # ------------------------------------------------------------------ forwarding

    def _forward(self, handler: BaseHTTPRequestHandler) -> None:
        method = handler.command
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = _read_chunked(handler)
        rule = self._match(method, handler.path, body)
        fault = rule.fault if rule is not None else None
        if rule is not None and fault is Fault.HOLD:
            rule.release.wait(rule.hold_timeout_s)
        if self.required_access_key is not None and \
                f"Credential={self.required_access_key}/" not in handler.headers.get("Authorization", ""):
            fault = Fault.ACCESS_DENIED
        if fault is not None and fault in _CANNED:
            status, code, message, extra = _CANNED[fault]
            payload = _ERROR_BODY.format(code=code, message=message, extra=extra).encode()
            handler.send_response(status)
            handler.send_header("Content-Type", "application/xml")
            handler.send_header("Content-Length", str(len(payload)))
            handler.end_headers()
            if method != "HEAD":
                handler.wfile.write(payload)
            return
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in ("transfer-encoding", "connection", "expect")}
        target = handler.path
        if self.ignore_conditional_writes:
            headers = {k: v for k, v in headers.items() if k.lower() != "if-none-match"}
            target = _without_generation_match(target)
        headers["Content-Length"] = str(len(body))
        conn = http.client.HTTPConnection(self.upstream_host, self.upstream_port, timeout=60)
        try:
            conn.request(method, target, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
        finally:
            conn.close()
        if fault is Fault.LOST_RESPONSE:
            # It landed upstream; the client never hears so. Drop the connection unanswered.
            handler.close_connection = True
            try:
                handler.connection.shutdown(2)
            except OSError:
                pass
            return
        handler.send_response(resp.status, resp.reason)
        for k, v in resp.getheaders():
            # a HEAD answer has no body but states the object's length: pass that through
            if k.lower() in ("transfer-encoding", "connection", "server", "date") or (
                    k.lower() == "content-length" and method != "HEAD"):
                continue
            handler.send_header(k, v)
        if method != "HEAD":
            handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        if method != "HEAD":
            handler.wfile.write(data)


def _read_chunked(handler: BaseHTTPRequestHandler) -> bytes:
    out = bytearray()
    while True:
        size_line = handler.rfile.readline().strip()
        size = int(size_line.split(b";", 1)[0] or b"0", 16)
        if size == 0:
            handler.rfile.readline()
            return bytes(out)
        out += handler.rfile.read(size)
        handler.rfile.readline()
