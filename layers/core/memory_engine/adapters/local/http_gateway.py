"""The local stand-in for API Gateway: an HTTP server on 127.0.0.1 that turns each request into
an HTTP API v2 event and invokes the same Lambda handler that serves that route on AWS."""

from __future__ import annotations

import functools
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from memory_engine import constants as c
from memory_engine.adapters.local.apigw_events import decode_response, http_api_event
from memory_engine.adapters.local.lambda_runtime import LocalLambdaContext, invoke
from memory_engine.errors import PayloadTooLarge
from memory_engine.http.responses import dumps

logger = logging.getLogger(__name__)

#: API Gateway rejects payloads over 10 MB; the local server does the same.
MAX_BODY_BYTES = 10 * 1024 * 1024


def _route_matches(route: str, method: str, path: str) -> bool:
    route_method, _, route_path = route.partition(" ")
    if route_method != method:
        return False
    if route_path.endswith("{proxy+}"):
        return path.startswith(route_path[: -len("{proxy+}")])
    return path == route_path


@functools.cache
def _local_app() -> Any:
    from memory_engine.http.app import build_resolver
    from memory_engine.http.routers import local_routers

    return build_resolver(local_routers())


#: Like one Lambda container, a handler serves one request at a time (Powertools keeps the
#: current event on the router class), so the local gateway serializes invocations.
_invoke_lock = threading.Lock()


def dispatch(event: dict[str, Any]) -> Any:
    """Send an HTTP API event to the handler that owns its route."""
    with _invoke_lock:
        return _dispatch(event)


def _dispatch(event: dict[str, Any]) -> Any:
    method = event["requestContext"]["http"]["method"]
    path = event["rawPath"]
    if any(_route_matches(r, method, path) for r in c.SEARCH_ROUTES):
        return invoke("search/handler", event, "memory-engine-search")
    if any(_route_matches(r, method, path) for r in c.LOCAL_ONLY_ROUTES):
        return _local_app().resolve(event, LocalLambdaContext(function_name="memory-engine-local"))
    return invoke("api/handler", event, "memory-engine-api")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "memory-engine"
    # A keep-alive response is written in pieces (headers, then body): with Nagle's algorithm the
    # body waits for the client's delayed ACK, ~40 ms per request (bench/peers.py: search p50
    # 55.8 -> 11.0 ms, a write 55.5 -> 6.9 ms with TCP_NODELAY).
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s " + format, self.address_string(), *args)

    def _serve(self) -> None:
        try:
            length = int(self.headers.get("content-length") or 0)
            if length > MAX_BODY_BYTES:
                self._reply(413, {"content-type": "application/json"}, dumps(PayloadTooLarge(
                    f"request body is {length} bytes; the limit is {MAX_BODY_BYTES}").to_body()).encode())
                self.close_connection = True
                return
            body = self.rfile.read(length) if length else None
            url = urlsplit(self.path)
            event = http_api_event(
                self.command, url.path, query=url.query, headers=dict(self.headers.items()), body=body,
                source_ip=self.client_address[0],
            )
            status, headers, payload = decode_response(dispatch(event))
        except Exception:
            logger.exception("local gateway failed")
            status, headers = 500, {"content-type": "application/json"}
            payload = b'{"error":{"code":"internal_error","message":"local gateway error","details":null}}'
        self._reply(status, headers, payload)

    def _reply(self, status: int, headers: dict[str, str], payload: bytes) -> None:
        self.send_response(status)
        for key, value in headers.items():
            if key.lower() not in ("content-length", "connection"):
                self.send_header(key, value)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _serve


class LocalGateway:
    """Owns the HTTP server thread. ``start()`` returns once the socket accepts requests."""

    def __init__(self, host: str = "127.0.0.1", port: int = 8787) -> None:
        self._server = ThreadingHTTPServer((host, port), _Handler)
        self._server.daemon_threads = True
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
