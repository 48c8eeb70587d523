"""The local stand-in for API Gateway: an HTTP server on 127.0.0.1 that turns each request into
an HTTP API v2 event and invokes the same Lambda handler that serves that route on AWS.

Concurrency follows Lambda's: with a :class:`~memory_engine.local.workers.WorkerPool`
(what ``memory-engine dev`` runs) each request goes to a free worker process, one request per
worker at a time. Without one (tests, ``bench/peers.py``), requests are served in this process one
at a time: Powertools keeps the current event on the router class, so one resolver cannot serve two
threads. ``GET /v1/health`` and the local-only routes (the event queue and upload stand-ins, whose
services live in this process) are always served here, so health answers while workers are busy.

Like API Gateway, the front door answers malformed HTTP itself, always with the SPEC's JSON error
body: a bad request line or header, a bad ``Content-Length``, control characters in the path or a
header value, an over-long request line (414) or header block (431), an unknown method (405), a
body over 10 MB (413).
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_to_bytes, urlsplit

from memory_engine import constants as c
from memory_engine.domain.serialization import dumps
from memory_engine.http.methods import allowed_methods
from memory_engine.local.apigw_events import decode_response, http_api_event
from memory_engine.local.routing import dispatch, route_matches

if TYPE_CHECKING:
    from memory_engine.local.priority import ForegroundGate
    from memory_engine.local.workers import WorkerPool

logger = logging.getLogger(__name__)

#: API Gateway rejects payloads over 10 MB; the local server does the same.
MAX_BODY_BYTES = 10 * 1024 * 1024
#: Pending connections the kernel queues before accept() (Python's default of 5 reset clients
#: under a burst of connections; the kernel caps it at net.core.somaxconn).
LISTEN_BACKLOG = 1024
#: A connection idle (or trickling a request) this long is closed.
IDLE_TIMEOUT_SECONDS = 120
#: Routes served in the gateway's own process even when a worker pool exists.
PARENT_ROUTES = ("GET /v1/health", *c.LOCAL_ONLY_ROUTES)
METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH", "HEAD")

_CONTROL = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")  # HTAB is allowed in field values


def _error_body(status: int, code: str, message: str) -> bytes:
    return dumps({"error": {"code": code, "message": message, "details": None}}).encode()


#: Errors the HTTP layer itself raises: (status, code, message). 501 and 505 are answered as
#: 4xx: an unknown method or protocol version is the client's mistake.
_PROTOCOL_ERRORS: dict[int, tuple[int, str, str]] = {
    400: (400, "bad_request", "malformed HTTP request"),
    408: (408, "request_timeout", "the request was not received in time"),
    413: (413, "payload_too_large", f"request body over {MAX_BODY_BYTES} bytes"),
    414: (414, "uri_too_long", "request line over 65536 bytes"),
    431: (431, "headers_too_large", "too many or too large request headers"),
    501: (405, "method_not_allowed", f"method not allowed; use one of {', '.join(METHODS)}"),
    505: (400, "bad_request", "unsupported HTTP version; use HTTP/1.0 or HTTP/1.1"),
}


class BadHttpRequest(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "memory-engine"
    timeout = IDLE_TIMEOUT_SECONDS
    # A keep-alive response is written in pieces (headers, then body): with Nagle's algorithm the
    # body waits for the client's delayed ACK, ~40 ms per request (bench/peers.py: search p50
    # 55.8 -> 11.0 ms, a write 55.5 -> 6.9 ms with TCP_NODELAY).
    disable_nagle_algorithm = True
    raw_requestline: bytes  # set by handle_one_request before parse_request

    def version_string(self) -> str:
        return self.server_version  # no Python version banner

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s " + format, self.address_string(), *args)

    def parse_request(self) -> bool:
        if len(self.raw_requestline.split()) == 2:  # HTTP/0.9 (no version): refused before reading headers
            self.command, self.request_version, self.requestline = "", "HTTP/1.1", ""
            self.send_error(HTTPStatus.BAD_REQUEST)
            return False
        return super().parse_request()

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Every error the HTTP layer answers by itself, as the SPEC's JSON body (never HTML)."""
        status, error_code, text = _PROTOCOL_ERRORS.get(int(code), (400, "bad_request", "malformed HTTP request"))
        self.log_error("%d %s (%s)", status, error_code, message or "")
        self.request_version = "HTTP/1.1"  # write the status line and headers even for a garbled request line
        self.close_connection = True
        headers = {"content-type": "application/json", "connection": "close"}
        if status == 405:  # a method no route has (e.g. PROPFIND): Allow lists the path's, as RFC 9110 asks
            path = urlsplit(getattr(self, "path", "") or "").path
            headers["allow"] = ", ".join(allowed_methods(path) or ("GET", "POST", "PUT", "DELETE"))
        self._reply(status, headers, _error_body(status, error_code, text))

    def _read_body(self) -> bytes | None:
        transfer_encoding = self.headers.get("transfer-encoding")
        lengths = self.headers.get_all("content-length") or []
        if transfer_encoding is not None:
            if lengths:
                raise BadHttpRequest(400, "bad_request", "Content-Length and Transfer-Encoding together")
            if transfer_encoding.strip().lower() != "chunked":
                raise BadHttpRequest(400, "bad_request", "only the chunked transfer encoding is supported")
            return self._read_chunked()
        if not lengths:
            return None
        if len(set(lengths)) != 1 or not all(v.strip().isascii() and v.strip().isdigit() for v in lengths):
            raise BadHttpRequest(400, "bad_request", "Content-Length must be one non-negative integer")
        length = int(lengths[0])
        if length > MAX_BODY_BYTES:
            raise BadHttpRequest(413, "payload_too_large",
                                 f"request body is {length} bytes; the limit is {MAX_BODY_BYTES}")
        body = self.rfile.read(length) if length else b""
        if len(body) != length:
            raise BadHttpRequest(400, "bad_request", "request body shorter than its Content-Length")
        return body or None

    def _read_chunked(self) -> bytes | None:
        chunks: list[bytes] = []
        total = 0
        while True:
            line = self.rfile.readline(1025)
            size_text = line.split(b";", 1)[0].strip()
            if not line.endswith(b"\n") or not re.fullmatch(rb"[0-9a-fA-F]{1,8}", size_text):
                raise BadHttpRequest(400, "bad_request", "malformed chunked body")
            size = int(size_text, 16)
            if size == 0:
                while self.rfile.readline(1025) not in (b"\r\n", b"\n", b""):  # trailer fields, ignored
                    pass
                break
            total += size
            if total > MAX_BODY_BYTES:
                raise BadHttpRequest(413, "payload_too_large", f"request body over {MAX_BODY_BYTES} bytes")
            data = self.rfile.read(size)
            if len(data) != size or self.rfile.readline(3) not in (b"\r\n", b"\n"):
                raise BadHttpRequest(400, "bad_request", "malformed chunked body")
            chunks.append(data)
        return b"".join(chunks) or None

    def _check_target(self) -> tuple[str, str]:
        url = urlsplit(self.path)
        if not url.path.startswith("/") or url.scheme or url.netloc:
            raise BadHttpRequest(400, "bad_request", "the request target must be a path starting with /")
        if _CONTROL.search(unquote_to_bytes(url.path)) or "\t" in url.path:
            raise BadHttpRequest(400, "bad_request", "the request path contains control characters")
        for name, value in self.headers.items():
            if _CONTROL.search(name.encode("utf-8", "surrogateescape") + value.encode("utf-8", "surrogateescape")):
                raise BadHttpRequest(400, "bad_request", f"header {name!r} contains control characters")
        return url.path, url.query

    def _serve(self) -> None:
        try:
            path, query = self._check_target()
            body = self._read_body()
        except BadHttpRequest as bad:
            self.close_connection = True
            self._reply(bad.status, {"content-type": "application/json"}, _error_body(bad.status, bad.code, bad.message))
            return
        try:
            event = http_api_event(
                self.command, path, query=query, headers=dict(self.headers.items()), body=body,
                source_ip=self.client_address[0],
            )
            pool: WorkerPool | None = getattr(self.server, "pool", None)
            gate: ForegroundGate | None = getattr(self.server, "gate", None)
            method = self.command.upper()
            with gate.request(method, path) if gate is not None else contextlib.nullcontext():
                if pool is None or any(route_matches(r, method, path) for r in PARENT_ROUTES):
                    response = dispatch(event)
                else:
                    response = pool.invoke(event)
            status, headers, payload = decode_response(response)
        except Exception:
            logger.exception("local gateway failed")
            status, headers = 500, {"content-type": "application/json"}
            payload = _error_body(500, "internal_error", "local gateway error")
        self._reply(status, headers, payload)

    def _reply(self, status: int, headers: dict[str, str], payload: bytes) -> None:
        self.send_response(status)
        for key, value in headers.items():
            if key.lower() not in ("content-length", "connection"):
                self.send_header(key, value)
        if self.close_connection:
            self.send_header("connection", "close")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    # TRACE and OPTIONS reach the handlers too, which answer 405 with the path's `Allow` (never an echo)
    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_TRACE = do_OPTIONS = _serve


class _Server(ThreadingHTTPServer):
    request_queue_size = LISTEN_BACKLOG
    daemon_threads = True

    def __init__(self, address: tuple[str, int], pool: WorkerPool | None, gate: ForegroundGate | None) -> None:
        self.pool = pool
        self.gate = gate
        super().__init__(address, _Handler)


class LocalGateway:
    """Owns the HTTP server thread. ``start()`` returns once the socket accepts requests.

    With ``pool``, requests run in its worker processes; without, in this process one at a time.
    With ``gate``, every request is counted there while it is served (background work steps aside).
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 8787, *, pool: WorkerPool | None = None,
                 gate: ForegroundGate | None = None) -> None:
        self._server = _Server((host, port), pool, gate)
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        self._thread = threading.Thread(target=self._server.serve_forever, name="http-gateway", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread:
            self._thread.join(timeout=5)
