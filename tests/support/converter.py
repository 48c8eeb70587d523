"""A real converter service on 127.0.0.1 (``http.server`` on a free port) for the converter
protocol tests. Each path behaves one way:

* ``/sync``: answers the pages at once: the file's text (base64-decoded), one page per form feed;
* ``/pending``: answers ``{"status": "pending"}`` (the test delivers the pages to the callback URL);
* ``/slow``: answers after ``slow_seconds`` (longer than the rule's ``timeout_s``);
* ``/garbage``: answers an HTML page (not JSON);
* ``/not-pages``: answers JSON without pages;
* ``/huge``: answers JSON larger than the engine's cap;
* ``/fixed``: answers one page, :data:`FIXED_TEXT`, whatever the file (a converter that reads a format
  the engine also reads, the way the user's service does);
* ``/fail``: answers HTTP 500 with a message;
* ``/deferred``: answers ``pending``, then (on its own thread, as a real converter would) fetches the
  file (from the ``download_url`` when the rule asks for one) and POSTs its pages to ``callback_url``;
  ``callbacks`` records what the engine answered;
* ``/redirect``: answers 302 to ``/sync`` (the engine does not follow it);
* ``/drip``: sends a valid answer one byte every ``drip_seconds`` (``dripped`` is set once it wrote
  the whole answer, ``drip_stopped`` when the engine hung up first).

The service listens on 127.0.0.1, which the outbound guard refuses: :func:`allowing_converters`
gives a container a guard whose ``CONVERTER_ALLOWED_HOSTS`` names the service.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from memory_engine.adapters.extractors.http_converter import HttpConverter
from memory_engine.adapters.outbound.guard import Resolver, ResolvingOutboundGuard, system_resolver
from memory_engine.bootstrap import Container
from memory_engine.domain.converter_protocol import MAX_ANSWER_BYTES

FIXED_TEXT = "read by the user's own converter service"


@dataclass
class ConverterService:
    base_url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    slow_seconds: float = 3.0
    arrived: threading.Event = field(default_factory=threading.Event)
    callbacks: list[tuple[int, Any]] = field(default_factory=list)
    drip_seconds: float = 1.5
    dripped: threading.Event = field(default_factory=threading.Event)
    drip_stopped: threading.Event = field(default_factory=threading.Event)

    @property
    def host_port(self) -> str:
        """``127.0.0.1:<port>``: the CONVERTER_ALLOWED_HOSTS entry naming exactly this service."""
        return self.base_url.removeprefix("http://")

    def url(self, path: str) -> str:
        return f"{self.base_url}{path}"

    def last(self) -> dict[str, Any]:
        return self.requests[-1]

    def wait_for_request(self, count: int, timeout: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while len(self.requests) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the converter got {len(self.requests)} request(s), expected {count}")
            time.sleep(0.02)
        return self.requests[count - 1]


def pages_of(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The converted pages of a request with an inline (base64) file."""
    text = base64.b64decode(request["body"]["file"]).decode("utf-8", "replace")
    return [{"page": i, "text": f"converted {part}"} for i, part in enumerate(text.split("\f"), start=1)]


def _deliver_later(service: ConverterService, request: dict[str, Any]) -> None:
    """Fetch the file, convert it, POST the pages to the callback URL (over HTTP, no API key)."""
    body = request["body"]
    if body["file_delivery"] == "download_url":
        with urllib.request.urlopen(body["file"], timeout=30) as response:
            text = response.read().decode("utf-8", "replace")
    else:
        text = base64.b64decode(body["file"]).decode("utf-8", "replace")
    pages = [{"page": i, "text": f"converted {part}"} for i, part in enumerate(text.split("\f"), start=1)]
    callback = urllib.request.Request(body["callback_url"], data=json.dumps({"pages": pages}).encode(),
                                      method="POST", headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(callback, timeout=30) as response:
            service.callbacks.append((response.status, json.loads(response.read())))
    except urllib.error.HTTPError as error:
        service.callbacks.append((error.code, json.loads(error.read() or b"null")))


@contextmanager
def converter_service() -> Iterator[ConverterService]:
    service: ConverterService

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return None

        def _answer(self, status: int, body: bytes, content_type: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            try:
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the engine gave up reading (size cap, timeout)

        def _drip(self, body: bytes) -> None:
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            try:
                for i in range(len(body)):
                    self.wfile.write(body[i:i + 1])
                    self.wfile.flush()
                    if service.drip_stopped.wait(service.drip_seconds):
                        return
                service.dripped.set()
            except (BrokenPipeError, ConnectionResetError):
                service.drip_stopped.set()  # the engine hung up: its deadline passed

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            request = {"path": self.path, "headers": dict(self.headers.items()), "body": json.loads(raw)}
            service.requests.append(request)
            if self.path == "/sync":
                self._answer(200, json.dumps({"pages": pages_of(request)}).encode())
            elif self.path == "/fixed":
                self._answer(200, json.dumps({"pages": [{"page": 1, "text": FIXED_TEXT}]}).encode())
            elif self.path == "/pending":
                self._answer(202, b'{"status": "pending"}')
            elif self.path == "/deferred":
                self._answer(202, b'{"status": "pending"}')
                threading.Thread(target=_deliver_later, args=(service, request), daemon=True).start()
            elif self.path == "/slow":
                time.sleep(service.slow_seconds)
                self._answer(200, json.dumps({"pages": pages_of(request)}).encode())
            elif self.path == "/redirect":
                self.send_response(302)
                self.send_header("location", "/sync")
                self.send_header("content-length", "0")
                self.end_headers()
            elif self.path == "/drip":
                self._drip(b'{"text":"dripped"}')
            elif self.path == "/garbage":
                self._answer(200, b"<html><body>Internal converter page</body></html>", "text/html")
            elif self.path == "/not-pages":
                self._answer(200, b'{"result": "done", "pages": "three"}')
            elif self.path == "/huge":
                self._answer(200, json.dumps({"text": "x" * (MAX_ANSWER_BYTES + 1024)}).encode())
            else:
                self._answer(500, b"converter exploded: out of licences")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    service = ConverterService(base_url=f"http://127.0.0.1:{server.server_address[1]}")
    thread = threading.Thread(target=server.serve_forever, name="converter", daemon=True)
    thread.start()
    try:
        yield service
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def allowing_converters(container: Container, *allowed: str, resolve: Resolver = system_resolver,
                        ) -> Iterator[ResolvingOutboundGuard]:
    """``container`` with an outbound guard whose CONVERTER_ALLOWED_HOSTS is ``allowed`` (and names
    resolved by ``resolve``), for the rules API and the converter calls alike; restored on exit."""
    guard = ResolvingOutboundGuard(",".join(allowed), own_origins=lambda: [container.callback_urls.base_url],
                                   resolve=resolve)
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(container.__dict__, "outbound_guard", guard)
        patch.setitem(container.__dict__, "ingestion_ports",
                      dataclasses.replace(container.ingestion_ports, converter=HttpConverter(guard)))
        yield guard
