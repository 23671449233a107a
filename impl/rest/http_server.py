"""The HTTP/1.1 shell of impl's REST catalog server, fit to face an exposed port.

It is the standard library's ``http.server`` (one thread per connection) with its reading of a
request replaced where a hostile peer could hold or grow the server:

- **authentication before the body**: the bearer token is checked as soon as the headers are in;
  a refused request's body is never read (the connection is closed instead);
- **a body limit**: a Content-Length over ``max_body_bytes`` is answered 413 before a byte of
  the body is read;
- **framing**: exactly one Content-Length made of digits; any ``Transfer-Encoding`` is refused
  with 501 (Paimon's clients send a length), and every refusal closes the connection, so no byte
  of a body is ever taken for a request (no request smuggling);
- **timeouts as deadlines**: the request line and headers must arrive within
  ``header_timeout_seconds`` of their first byte, the body within ``body_timeout_seconds``, and a
  kept-alive connection may sit idle ``idle_timeout_seconds`` between requests. They bound the
  whole read, not one ``recv`` (a peer sending a byte a second gets no more time);
- **a connection limit** (``max_connections`` threads at most; one more connection is answered
  503 and closed by the accept loop without a thread) and a real listen ``backlog``;
- optional **TLS** (a certificate and key file); the handshake runs in the connection's thread
  under the header deadline, never in the accept loop;
- every error, the library's own (a malformed request line, too many headers) included, is
  answered with the REST spec's ``ErrorResponse`` JSON;
- one **access log** line per request on the logger ``impl.rest.access`` (INFO): client,
  method, path (no query, no headers, so no token), status, body bytes, milliseconds.

Why not a server library: the candidates each miss one of these properties (waitress reads the
whole body before the application sees the headers and has no TLS; uvicorn has no deadline on a
request's headers; hypercorn has no connection limit) and would each need an extra dependency on
every install; the properties above are a few dozen lines each on top of the standard library's
parser, and each has a test over a real socket (tests/rest/test_server_hardening.py).
"""

from __future__ import annotations

import io
import json
import logging
import math
import socket
import ssl
import threading
import time
import urllib.parse
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Mapping, Protocol

from impl.catalog.rest.protocol import ErrorBody

log = logging.getLogger("impl.rest")
ACCESS_LOG = logging.getLogger("impl.rest.access")


@dataclass(frozen=True)
class Reply:
    """One HTTP answer: status and JSON body (None: no body)."""

    status: int
    body: Mapping[str, Any] | None = None


def error_reply(error: ErrorBody) -> Reply:
    return Reply(error.code, error.to_json())


@dataclass(frozen=True)
class ServerLimits:
    """What one peer may take of the server. The defaults fit Paimon's requests (a commit body is
    a few KB, a 10 000-column schema about 1 MB) with room to spare."""

    max_body_bytes: int = 8 << 20
    header_timeout_seconds: float = 10.0
    body_timeout_seconds: float = 30.0
    idle_timeout_seconds: float = 60.0
    max_connections: int = 64
    backlog: int = 128
    drain_timeout_seconds: float = 10.0  # how long stop() waits for the requests in flight


class Application(Protocol):
    """What the shell serves: a token check on the headers alone, then the request."""

    def authorize(self, headers: Mapping[str, str]) -> Reply | None:
        """None when the request may proceed; else the refusal (401)."""

    def handle(self, method: str, path: str, query: Mapping[str, str], headers: Mapping[str, str],
               body: bytes) -> Reply:
        """The answer to one request."""


class _DeadlineReader(io.RawIOBase):
    """A socket's reads that end at ``deadline`` (time.monotonic) however the peer trickles."""

    def __init__(self, sock: socket.socket):
        self._sock = sock
        self.deadline = math.inf

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the peer did not send in time")
        self._sock.settimeout(left)
        return self._sock.recv_into(buffer)


def _busy_response() -> bytes:
    body = json.dumps(ErrorBody(503, "the server is at its connection limit; retry later").to_json()).encode()
    return (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\n"
            b"Retry-After: 1\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


_BUSY = _busy_response()


class _Handler(BaseHTTPRequestHandler):
    app: Application  # set on the subclass each server makes
    limits: ServerLimits
    ssl_context: ssl.SSLContext | None
    protocol_version = "HTTP/1.1"
    # a request line too broken to name its version is answered as HTTP/1.1 (status line and
    # headers); the library's default, 0.9, would send the error body bare
    default_request_version = "HTTP/1.1"

    # ------------------------------------------------------------------ connection

    def setup(self) -> None:
        sock: socket.socket = self.request
        sock.settimeout(self.limits.header_timeout_seconds)
        if self.ssl_context is not None:
            sock = self.ssl_context.wrap_socket(sock, server_side=True)  # the handshake, under the timeout
        # clients keep connections open (Java's OkHttp, pypaimon's requests): headers and body go
        # out in one buffered write, without Nagle, or every answer waits out the peer's delayed ACK
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, True)
        self.connection = sock
        self._reader = _DeadlineReader(sock)
        self._in = io.BufferedReader(self._reader, 65536)
        self.rfile = self._in
        self.wfile = sock.makefile("wb", -1)
        self._served = 0

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            if self.ssl_context is not None:
                self.connection.close()  # the TLS socket; the server closes the plain one it accepted

    def handle_one_request(self) -> None:
        limits = self.limits
        self._status: int | None = None
        self._sent = 0
        self._started = time.monotonic()
        self.command = ""
        self._log_path = "-"
        wait = limits.idle_timeout_seconds if self._served else limits.header_timeout_seconds
        self._reader.deadline = self._started + wait
        began = False
        try:
            if not self._in.peek(1):
                self.close_connection = True
                return
            began = True  # a request's first byte: a timeout from here on is logged (408)
            self.server.request_began()  # type: ignore[attr-defined]
            self._started = time.monotonic()
            self._reader.deadline = self._started + limits.header_timeout_seconds
            self.raw_requestline = self.rfile.readline(65537)
            if len(self.raw_requestline) > 65536:
                self.requestline = self.request_version = self.command = ""
                self.send_error(414, "request line over 65536 bytes")
                return
            if not self.parse_request():  # the request line and headers (send_error on a bad one)
                return
            self._serve()
            self.wfile.flush()
        except TimeoutError:
            self.close_connection = True
            if began:
                self._status = self._status or 408
        except (ConnectionError, ssl.SSLError):
            self.close_connection = True
        finally:
            self._served += 1
            if self._status is not None:
                self._access_log()
            if began:
                self.server.request_ended()  # type: ignore[attr-defined]

    def handle_expect_100(self) -> bool:
        # parse_request would answer "100 Continue" before the token and the length are checked;
        # _serve sends it once they are
        return True

    # ------------------------------------------------------------------ one request

    def _serve(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        self._log_path = url.path
        if self.headers.get_all("Transfer-Encoding"):
            self._refuse(501, "Transfer-Encoding (a chunked body) is not supported: send one Content-Length")
            return
        lengths = self.headers.get_all("Content-Length") or []
        if len(lengths) > 1:
            self._refuse(400, f"{len(lengths)} Content-Length headers: a request has at most one")
            return
        length_text = lengths[0].strip() if lengths else "0"
        if not (length_text.isascii() and length_text.isdigit()):
            self._refuse(400, f"Content-Length {length_text[:40]!r} is not a number of bytes")
            return
        length = int(length_text)
        headers = {k.lower(): v for k, v in self.headers.items()}
        refusal = self.app.authorize(headers)
        if refusal is not None:
            if length:
                self.close_connection = True  # the unread body would be taken for the next request
            self._send(refusal)
            return
        if length > self.limits.max_body_bytes:
            self._refuse(413, f"a body of {length} bytes is over this server's limit of {self.limits.max_body_bytes}")
            return
        if self.headers.get("Expect", "").lower() == "100-continue" and length:
            self.send_response_only(100)
            self.end_headers()
            self.wfile.flush()
        self._reader.deadline = time.monotonic() + self.limits.body_timeout_seconds
        body = self.rfile.read(length) if length else b""
        if len(body) < length:
            self.close_connection = True  # the peer closed within the body
            return
        query = dict(urllib.parse.parse_qsl(url.query))
        self._send(self.app.handle(self.command, url.path, query, headers, body))

    def _refuse(self, status: int, message: str) -> None:
        self.close_connection = True
        self._send(error_reply(ErrorBody(status, message)))

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The library's own refusals (a malformed request line, too many or too long headers,
        an unsupported HTTP version) as an ErrorResponse, closing the connection."""
        self.close_connection = True
        self._send(error_reply(ErrorBody(code, message or explain or self.responses.get(code, ("error",))[0])))

    def _send(self, reply: Reply) -> None:
        data = json.dumps(reply.body).encode() if reply.body is not None else b""
        self.connection.settimeout(self.limits.body_timeout_seconds)  # a peer that does not read
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self._status = reply.status
        self._sent = len(data)

    def _access_log(self) -> None:
        if ACCESS_LOG.isEnabledFor(logging.INFO):
            ACCESS_LOG.info('%s "%s %s" %s %d %.1fms', self.client_address[0], self.command or "-", self._log_path,
                            self._status, self._sent, (time.monotonic() - self._started) * 1000)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's signature
        log.debug("%s %s", self.address_string(), format % args)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[_Handler], limits: ServerLimits):
        self.request_queue_size = limits.backlog  # listen()'s backlog, read by server_activate
        self._slots = threading.BoundedSemaphore(limits.max_connections)
        self._tls = handler.ssl_context is not None
        # requests between their first byte and their access-log line: stop() lets them finish
        # (a connection idle between requests is not waited for)
        self._in_flight = 0
        self._in_flight_changed = threading.Condition()
        super().__init__(address, handler)

    def request_began(self) -> None:
        with self._in_flight_changed:
            self._in_flight += 1

    def request_ended(self) -> None:
        with self._in_flight_changed:
            self._in_flight -= 1
            self._in_flight_changed.notify_all()

    def drain(self, timeout_seconds: float) -> bool:
        """Wait until no request is in flight, at most ``timeout_seconds``; True when none is."""
        with self._in_flight_changed:
            return self._in_flight_changed.wait_for(lambda: self._in_flight == 0, timeout_seconds)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            # over the limit: answered from the accept loop without a thread, never waited on
            try:
                request.setblocking(False)
                if not self._tls:
                    request.send(_BUSY)
            except OSError:
                pass
            self.shutdown_request(request)
            ACCESS_LOG.info('%s "- -" 503 0 0.0ms (connection limit)', client_address[0])
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a failed TLS handshake or a reset connection: the peer's problem, not a traceback on stderr
        log.debug("connection from %s ended with an error", client_address, exc_info=True)


def tls_context(certfile: str, keyfile: str | None = None) -> ssl.SSLContext:
    """A server TLS context (TLS 1.2 and up) from a PEM certificate (chain) and key file."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(certfile, keyfile)
    return context


class HTTPShell:
    """``app`` served on ``host:port`` (port 0: a free one) within ``limits``, over TLS when given
    a context; ``serve_forever()`` in the calling thread, ``start()`` / ``stop()`` in one of its own."""

    def __init__(self, app: Application, host: str, port: int, limits: ServerLimits,
                 ssl_context: ssl.SSLContext | None = None):
        handler = type("Handler", (_Handler,), {"app": app, "limits": limits, "ssl_context": ssl_context})
        self._http = _HTTPServer((host, port), handler, limits)
        self._drain_timeout_seconds = limits.drain_timeout_seconds
        self.scheme = "https" if ssl_context is not None else "http"
        self._thread: threading.Thread | None = None
        self._serving = False

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._http.server_address[:2]
        return str(host), int(port)

    def start(self) -> None:
        self._serving = True
        self._thread = threading.Thread(target=self._http.serve_forever, name="impl.rest", daemon=True)
        self._thread.start()

    def serve_forever(self) -> None:
        self._serving = True
        self._http.serve_forever()

    def stop(self) -> None:
        """Close the listening socket, then let the requests in flight finish (their answers and
        access-log lines; at most ``limits.drain_timeout_seconds``)."""
        if self._serving:  # shutdown() waits for a serve_forever loop, which a never-started server has not
            self._http.shutdown()
        if self._thread is not None:
            self._thread.join()
        self._http.server_close()  # new connections are refused from here on
        if not self._http.drain(self._drain_timeout_seconds):
            log.warning("stopped with requests still in flight after %.0f s", self._drain_timeout_seconds)
